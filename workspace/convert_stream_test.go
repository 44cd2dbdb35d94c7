package workspace

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// gitOut runs git in dir as the user would with the config settings
// conf (-c), stdin fed; its output as it is (git's exit code must be 0).
func gitOut(t *testing.T, dir string, stdin []byte, conf []string, args ...string) []byte {
	t.Helper()
	var argv []string
	for _, c := range conf {
		argv = append(argv, "-c", c)
	}
	cmd := exec.Command("git", append(argv, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	cmd.Stdin = bytes.NewReader(stdin)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git %v: %v: %s", args, err, stderr.String())
	}
	return out
}

// streamLines is n numbered lines ending in end, a lone CR and a NUL-free
// mix among them: content over many pipe buffers and pkt-lines.
func streamLines(n int, end string) []byte {
	var b bytes.Buffer
	for i := range n {
		b.WriteString(strconv.Itoa(i) + " line of x and y")
		if i%1000 == 7 {
			b.WriteString(" lone\rCR")
		}
		b.WriteString(end)
	}
	return b.Bytes()
}

// The streamed conversions (cleanID, smudgeTo: the user's filter run
// confined, git's conversion of line endings through git) give what git
// itself gives, run with the same filter: for filters that pass their
// input through, change it, read none of it, or fail (not required)
// after writing part of their output, on content of many pipe buffers
// and pkt-lines with CRLF, LF and lone CRs.
func TestStreamedConversionsAreGits(t *testing.T) {
	needSandbox(t)
	t.Setenv("HOME", t.TempDir())
	for _, tc := range []struct{ name, cmd string }{
		{"passes it through", "cat"},
		{"changes it", "sed s/x/xyz/"},
		{"reads none of it", "echo short"},
		{"fails after writing", "head -c 5; exit 3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			userGlobalConfig(t, "[filter \"f\"]\n\tclean = \""+tc.cmd+"\"\n\tsmudge = \""+tc.cmd+"\"\n")
			root := newRepo(t, map[string]string{".gitattributes": "*.f filter=f text eol=crlf\n*.p filter=f\n"})
			r := open(t, root)
			defer r.Close(t.Context())
			d := r.conv.drivers["f"]
			if !d.any() {
				t.Fatalf("the user's filter f was not read: %+v", r.conv)
			}
			conf := []string{"filter.f.clean=" + tc.cmd, "filter.f.smudge=" + tc.cmd}
			for _, path := range []string{"a.f", "a.p"} {
				c := &converter{r: r, g: r.g, paths: map[string]bool{path: true}, filtered: map[string]filterDriver{path: d}, refused: map[string]string{}}
				for _, data := range [][]byte{streamLines(40_000, "\r\n"), streamLines(40_000, "\n")} {
					want := strings.TrimSpace(string(gitOut(t, root, data, conf, "hash-object", "--stdin", "--path="+path)))
					id, err := c.cleanID(t.Context(), path, patchBytes(data))
					must(t, err)
					if id != want {
						t.Errorf("%s: cleaned to %s, git cleans it to %s", path, id, want)
					}
					blob := strings.TrimSpace(string(gitOut(t, root, data, nil, "hash-object", "-w", "--stdin")))
					wantOut := gitOut(t, root, nil, conf, "cat-file", "--filters", "--path="+path, blob)
					var buf bytes.Buffer
					must(t, c.smudgeTo(t.Context(), path, blob, &buf))
					if !bytes.Equal(buf.Bytes(), wantOut) {
						t.Errorf("%s: smudged to %d bytes (%.40q), git's are %d (%.40q)", path, buf.Len(), buf.Bytes(), len(wantOut), wantOut)
					}
					f, err := os.Create(filepath.Join(t.TempDir(), "out"))
					must(t, err)
					must(t, c.smudgeTo(t.Context(), path, blob, f))
					must(t, f.Close())
					if got, _ := os.ReadFile(f.Name()); !bytes.Equal(got, wantOut) {
						t.Errorf("%s: smudged into a file %d bytes, git's are %d", path, len(got), len(wantOut))
					}
				}
			}
		})
	}
}

// A filter's output over agent.max_change_bytes is an error (a required
// filter), not a file held or written whole.
func TestFilterOutputOverTheLimitIsAnError(t *testing.T) {
	needSandbox(t)
	t.Setenv("HOME", t.TempDir())
	userGlobalConfig(t, "[filter \"f\"]\n\tclean = sed p\n\tsmudge = sed p\n\trequired\n")
	root := newRepo(t, map[string]string{".gitattributes": "*.f filter=f\n"})
	r, err := Open(t.Context(), root, Options{MaxChangeBytes: 1 << 20})
	must(t, err)
	defer r.Close(t.Context())
	c := &converter{r: r, g: r.g, paths: map[string]bool{"a.f": true}, filtered: map[string]filterDriver{"a.f": r.conv.drivers["f"]}, refused: map[string]string{}}
	data := bytes.Repeat([]byte("0123456789abcdef"), 48<<10) // 768 KiB: under the limit, its output over it
	if _, err := c.cleanID(t.Context(), "a.f", patchBytes(data)); err == nil || !strings.Contains(err.Error(), "over") {
		t.Errorf("clean of output over the limit: %v", err)
	}
	blob := strings.TrimSpace(string(gitOut(t, root, data, nil, "hash-object", "-w", "--stdin")))
	var buf bytes.Buffer
	if err := c.smudgeTo(t.Context(), "a.f", blob, &buf); err == nil || !strings.Contains(err.Error(), "over") {
		t.Errorf("smudge of output over the limit: %v", err)
	}
	if buf.Len() > 1<<20 {
		t.Errorf("%d bytes written, over the limit", buf.Len())
	}
}

// echoFilterProcess serves one command of git's filter protocol on r and
// w, answering each packet of the contents as it arrives (so a client
// that wrote the whole request before it read would block: the pipes
// hold nothing), with its bytes inverted.
func echoFilterProcess(r *bufio.Reader, w *bufio.Writer) error {
	if _, err := readList(r); err != nil {
		return err
	}
	if err := writePkts(w, "git-filter-server\n", "version=2\n", ""); err != nil {
		return err
	}
	if _, err := readList(r); err != nil {
		return err
	}
	if err := writePkts(w, "capability=clean\n", "capability=smudge\n", ""); err != nil {
		return err
	}
	if _, err := readList(r); err != nil {
		return err
	}
	if err := writePkts(w, "status=success\n", ""); err != nil {
		return err
	}
	for {
		p, err := readPkt(r)
		if err != nil {
			return err
		}
		if p == nil {
			return writePkts(w, "", "")
		}
		for i := range p {
			p[i] ^= 0xff
		}
		if err := writePkt(w, p); err != nil {
			return err
		}
		if err := w.Flush(); err != nil {
			return err
		}
	}
}

// The filter process protocol streams both ways: contents of every size
// about a pkt-line's (none, one byte, pktMax-1, pktMax, pktMax+1, several
// packets and a part) go out in packets as they are written while the
// answer's come in, over pipes that hold nothing, and come back whole.
func TestFilterProcessStreamsBothWays(t *testing.T) {
	for _, n := range []int{0, 1, pktMax - 1, pktMax, pktMax + 1, 3*pktMax + 7} {
		data := make([]byte, n)
		for i := range data {
			data[i] = byte(i*7 + i/pktMax)
		}
		cr, cw := io.Pipe() // client → process
		pr, pw := io.Pipe() // process → client
		served := make(chan error, 1)
		go func() {
			err := echoFilterProcess(bufio.NewReader(cr), bufio.NewWriterSize(pw, pktMax+4))
			pw.CloseWithError(err)
			served <- err
		}()
		var out bytes.Buffer
		err := speakFilter(cw, bufio.NewReader(pr), filterJob{"smudge", "f.bin", patchBytes(data), &out, 1 << 30})
		cw.Close()
		if err != nil {
			t.Fatalf("%d bytes: %v", n, err)
		}
		if serr := <-served; serr != nil {
			t.Fatalf("%d bytes: the process: %v", n, serr)
		}
		for i := range data {
			data[i] ^= 0xff
		}
		if !bytes.Equal(out.Bytes(), data) {
			t.Errorf("%d bytes: came back as %d bytes, not the process's answer", n, out.Len())
		}
	}
}
