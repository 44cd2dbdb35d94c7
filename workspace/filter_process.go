package workspace

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"

	"github.com/troupe-ai/troupe/tools/sandbox"
)

// A filter driver of the user's global config with a "process" command
// (git-lfs's usual form, filter.lfs.process = git-lfs filter-process)
// is a long-running filter: git starts it once and speaks its pkt-line
// protocol, version 2 (gitprotocol-common's pkt-line, git's
// long-running filter process). troupe speaks it too, to the command
// started as runFilter starts the clean and smudge commands: in the OS
// sandbox, required whole, with the same environment; one process per
// file converted. As in git, process wins over clean and smudge, and a
// process that does not offer the command leaves the contents as they
// are.

// pktMax is the largest payload of one pkt-line.
const pktMax = 65516

// runProcessFilter converts what src writes at path by the driver's
// process command (command: "clean" or "smudge") into dst, confined
// (see above), streamed both ways; a failure is an error when the
// driver is required, else errAsIs (git uses the contents as they are).
func (c *converter) runProcessFilter(ctx context.Context, d filterDriver, command, path string, src patchWriter, dst io.Writer) error {
	run, err := c.confineFilter(d, path)
	if err != nil {
		return err
	}
	defer run.done()
	fctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cmd := exec.CommandContext(fctx, "/bin/sh", "-c", d.process)
	cmd.Dir, cmd.Env = run.dir, run.env
	var stderr bytes.Buffer
	cmd.Stderr = &limitedWriter{w: &stderr, n: 4 << 10}
	in, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	outPipe, err := cmd.StdoutPipe()
	if err != nil {
		in.Close()
		return err
	}
	if err = sandbox.Start(cmd, run.policy, filterSupport()); err == nil {
		err = speakFilter(in, bufio.NewReaderSize(outPipe, pktMax+4), filterJob{command, path, src, dst, c.r.maxChange()})
		in.Close()
		if err != nil {
			cancel() // what it still writes is not read
		}
		_, _ = io.Copy(io.Discard, outPipe)
		if werr := cmd.Wait(); err == nil && werr != nil {
			err = werr
		}
	} else {
		in.Close()
		outPipe.Close()
	}
	switch {
	case err == nil:
		return nil
	case errors.Is(err, errNotOffered):
		return errAsIs
	case d.required || ctx.Err() != nil:
		return fmt.Errorf("the filter process of %s (run in the sandbox) failed: %w: %s", path, err, strings.TrimSpace(stderr.String()))
	}
	return errAsIs
}

// errNotOffered is returned when the filter process does not offer the
// command asked for.
var errNotOffered = errors.New("the filter process does not offer the command")

// filterJob is one command for a filter process: what src writes at
// path, the output to dst, at most limit bytes.
type filterJob struct {
	command, path string
	src           patchWriter
	dst           io.Writer
	limit         int64
}

// speakFilter runs one command of the long-running filter protocol on
// the process whose input is w and output r: handshake, capabilities,
// then job's command, its contents sent in packets as src writes them
// while the answer's packets are written to dst.
func speakFilter(w io.Writer, r *bufio.Reader, job filterJob) error {
	errc := make(chan error, 1)
	bw := bufio.NewWriterSize(w, pktMax+4)
	go func() { // the whole request is written while the answer is read
		errc <- writePkts(bw, "git-filter-client\n", "version=2\n", "")
	}()
	if err := expectPkts(r, "git-filter-server\n", "version=2\n"); err != nil {
		return err
	}
	if err := <-errc; err != nil {
		return err
	}
	if err := writePkts(bw, "capability=clean\n", "capability=smudge\n", ""); err != nil {
		return err
	}
	caps, err := readList(r)
	if err != nil {
		return err
	}
	if !caps["capability="+job.command] {
		return errNotOffered
	}
	go func() {
		err := writePkts(bw, "command="+job.command+"\n", "pathname="+job.path+"\n", "")
		if err == nil {
			err = job.src(pktWriter{bw})
		}
		if err == nil {
			err = writePkts(bw, "")
		}
		errc <- err
	}()
	if err := readAnswer(r, job); err != nil {
		return err
	}
	return <-errc
}

// readAnswer reads a filter process's answer to job: its status, the
// contents (written to job.dst, at most job.limit bytes), and the final
// status.
func readAnswer(r *bufio.Reader, job filterJob) error {
	status, err := readList(r)
	if err != nil {
		return err
	}
	if !status["status=success"] {
		return fmt.Errorf("the filter process said %v", keys(status))
	}
	out := &capWriter{w: job.dst, n: job.limit}
	for {
		pkt, err := readPkt(r)
		if err != nil {
			return err
		}
		if pkt == nil {
			break
		}
		if _, err := out.Write(pkt); err != nil {
			if out.over {
				return fmt.Errorf("its output is over %d bytes", job.limit)
			}
			return err
		}
	}
	final, err := readList(r) // empty: the status stands
	if err != nil {
		return err
	}
	if len(final) > 0 && !final["status=success"] {
		return fmt.Errorf("the filter process said %v", keys(final))
	}
	return nil
}

// pktWriter writes what it is given as pkt-lines of at most pktMax
// bytes each.
type pktWriter struct{ w *bufio.Writer }

func (p pktWriter) Write(b []byte) (int, error) {
	n := 0
	for len(b) > 0 {
		k := min(len(b), pktMax)
		if err := writePkt(p.w, b[:k]); err != nil {
			return n, err
		}
		n, b = n+k, b[k:]
	}
	return n, nil
}

// writePkts writes each of lines as a pkt-line ("" a flush packet) and
// flushes w.
func writePkts(w *bufio.Writer, lines ...string) error {
	for _, l := range lines {
		var err error
		if l == "" {
			_, err = w.WriteString("0000")
		} else {
			err = writePkt(w, []byte(l))
		}
		if err != nil {
			return err
		}
	}
	return w.Flush()
}

// writePkt writes one pkt-line of payload p (at most pktMax bytes).
func writePkt(w *bufio.Writer, p []byte) error {
	if _, err := fmt.Fprintf(w, "%04x", len(p)+4); err != nil {
		return err
	}
	_, err := w.Write(p)
	return err
}

// readPkt reads one pkt-line: its payload, or nil for a flush packet.
func readPkt(r *bufio.Reader) ([]byte, error) {
	var head [4]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		return nil, fmt.Errorf("read from the filter process: %w", err)
	}
	n, err := strconv.ParseUint(string(head[:]), 16, 16)
	switch {
	case err != nil:
		return nil, fmt.Errorf("the filter process sent a bad pkt-line length %q", head)
	case n == 0:
		return nil, nil
	case n < 4 || n > pktMax+4:
		return nil, fmt.Errorf("the filter process sent a pkt-line of length %d", n)
	}
	p := make([]byte, n-4)
	if _, err := io.ReadFull(r, p); err != nil {
		return nil, fmt.Errorf("read from the filter process: %w", err)
	}
	return p, nil
}

// readList reads text pkt-lines up to a flush packet, as a set of lines
// without their newlines.
func readList(r *bufio.Reader) (map[string]bool, error) {
	set := map[string]bool{}
	for {
		p, err := readPkt(r)
		if err != nil || p == nil {
			return set, err
		}
		if len(set) > 64 {
			return nil, errors.New("the filter process sent a list too long")
		}
		set[strings.TrimSuffix(string(p), "\n")] = true
	}
}

// expectPkts reads the lines want, then a flush packet.
func expectPkts(r *bufio.Reader, want ...string) error {
	got, err := readList(r)
	if err != nil {
		return err
	}
	for _, l := range want {
		if !got[strings.TrimSuffix(l, "\n")] {
			return fmt.Errorf("the filter process's handshake %v lacks %q", keys(got), strings.TrimSpace(l))
		}
	}
	return nil
}

// keys lists a set's members.
func keys(set map[string]bool) []string {
	var ks []string
	for k := range set {
		ks = append(ks, k)
	}
	return ks
}
