package readme

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

const tryOutHeading = "## Every recipe without a key"

// session is a user's shell running README lines in order: `export`
// lines change its environment, a line ending in & runs in the
// background until the test ends (the next line starts once it printed
// that it is ready), any other line runs to its end. Ports and folders
// in the lines are replaced by free ones (repl).
type session struct {
	t    *testing.T
	dir  string
	env  []string
	repl *strings.Replacer
	// clone: dir is a clone of the repository (repoSession), whose
	// programs are built once from the repository itself (sharedBin).
	clone bool
}

// newSession is a shell in dir with env over the process's environment;
// its background commands are interrupted (their process group) when the
// test ends.
func newSession(t *testing.T, dir string, repl *strings.Replacer, env ...string) *session {
	return &session{t: t, dir: dir, env: append([]string{"NO_COLOR=1"}, env...), repl: repl}
}

// repoSession is newSession in a fresh clone of the repository, for the
// README's lines that a user runs in their checkout: what they write
// there (.troupe/, a worker's file) stays in the test's temporary
// directory, never in the source tree.
func repoSession(t *testing.T, repl *strings.Replacer, env ...string) *session {
	t.Helper()
	clone := filepath.Join(t.TempDir(), "troupe")
	if out, err := exec.Command("git", "clone", "-q", repoRoot(t), clone).CombinedOutput(); err != nil {
		t.Fatalf("git clone: %v\n%s", err, out)
	}
	s := newSession(t, clone, repl, env...)
	s.clone = true
	return s
}

// run runs one README line as the session would; for a background line
// it returns what the command printed on stderr until it was ready.
func (s *session) run(line string, timeout time.Duration) (string, string, int) {
	s.t.Helper()
	line = s.repl.Replace(line)
	switch {
	case strings.HasPrefix(line, "export "):
		name, _, ok := strings.Cut(strings.TrimPrefix(line, "export "), "=")
		if !ok {
			s.t.Fatalf("%s: not export NAME=VALUE", line)
		}
		out, errs, code := sh(s.t, s.dir, s.env, line+`; printf %s "$`+name+`"`, time.Minute)
		if code != 0 {
			s.t.Fatalf("%s: exit %d: %s", line, code, errs)
		}
		s.env = append(s.env, name+"="+out)
		return "", "", 0
	case strings.HasSuffix(line, "&"):
		return "", s.start(strings.TrimSuffix(line, "&")).String(), 0
	}
	return sh(s.t, s.dir, s.env, line, timeout)
}

// must runs a line that must exit 0.
func (s *session) must(line string, timeout time.Duration) (string, string) {
	s.t.Helper()
	out, errs, code := s.run(line, timeout)
	if code != 0 {
		s.t.Fatalf("%s: exit %d\nstdout:\n%s\nstderr:\n%s", s.repl.Replace(line), code, out, errs)
	}
	return out, errs
}

// start runs line in the background and waits until its stderr says
// each thing its kind of command says when ready.
func (s *session) start(line string) *syncBuffer {
	s.t.Helper()
	c := exec.Command("bash", "-c", "exec "+line)
	c.Dir, c.Env = s.dir, append(os.Environ(), s.env...)
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	errb := &syncBuffer{}
	c.Stderr = errb
	if err := c.Start(); err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(func() { stopGroup(c) })
	var want []string
	switch f := strings.Fields(line); {
	case len(f) > 1 && f[1] == "mcp":
		want = append(want, "MCP over streamable HTTP at")
	case strings.Contains(line, " --http ") || strings.Contains(line, " --web "):
		want = append(want, "metrics at")
	}
	if f := strings.Fields(line); len(f) > 1 && (f[1] == "serve" || f[1] == "node" || f[1] == "model") {
		want = append(want, "ready")
	}
	if len(want) == 0 {
		s.t.Fatalf("%s: no ready line known for this command", line)
	}
	deadline := time.Now().Add(3 * time.Minute)
	for {
		ready := true
		for _, w := range want {
			ready = ready && strings.Contains(errb.String(), w)
		}
		if ready {
			return errb
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("%s never got ready:\n%s", line, errb.String())
		}
		<-time.After(20 * time.Millisecond)
	}
}

// stopGroup interrupts a background command's process group as Ctrl-C
// would, and kills it when it has not ended 20 s later.
func stopGroup(c *exec.Cmd) {
	_ = syscall.Kill(-c.Process.Pid, syscall.SIGINT)
	done := make(chan struct{})
	go func() { _ = c.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		_ = syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
		<-done
	}
}

// tryOut runs the lines of "Every recipe without a key" in s: the build
// (into bin of s.dir, or for the repository itself into a folder of the
// test binary's, built once: see sharedBin), PATH, the scripted model on
// a free port and OPENAI_BASE_URL. It returns the model's URL.
func tryOut(t *testing.T, s *session, readme string) string {
	t.Helper()
	lines := commandLines(shBlocks(t, readme, tryOutHeading)[0])
	if len(lines) != 4 || !strings.HasPrefix(lines[0], "go build -o bin/ ") || lines[1] != `export PATH="$PWD/bin:$PATH"` ||
		!strings.HasPrefix(lines[2], "orchestrator model --scripted --listen 127.0.0.1:8300 &") ||
		lines[3] != "export OPENAI_BASE_URL=http://127.0.0.1:8300/v1" {
		t.Fatalf("the try-out block changed; the test knows build, PATH, model, OPENAI_BASE_URL: %q", lines)
	}
	port := freePort(t)
	model := strings.NewReplacer("8300", port)
	build := lines[0]
	if s.clone {
		// Built once from the repository, never into its tree.
		bin := sharedBin(t, build)
		s.env = append(s.env, "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	} else {
		s.must(build, 5*time.Minute)
		s.run(lines[1], time.Minute)
	}
	_, errs, _ := s.run(model.Replace(lines[2]), time.Minute)
	url := "http://127.0.0.1:" + port + "/v1"
	if !strings.Contains(errs, "SCRIPTED") || !strings.Contains(errs, "export OPENAI_BASE_URL="+url) {
		t.Fatalf("the model said:\n%s", errs)
	}
	s.run(model.Replace(lines[3]), time.Minute)
	return url
}

var (
	binOnce sync.Once
	binDir  string
	binErr  error
)

// sharedBin runs the README's build line in the repository with its
// output in a temporary folder, once for the test binary.
func sharedBin(t *testing.T, build string) string {
	t.Helper()
	binOnce.Do(func() {
		if binDir, binErr = os.MkdirTemp("", "troupe-readme-bin-"); binErr != nil {
			return
		}
		line := strings.Replace(build, "-o bin/ ", "-o "+binDir+string(filepath.Separator)+" ", 1)
		if _, errs, code := sh(t, repoRoot(t), nil, line, 5*time.Minute); code != 0 {
			binErr = &buildError{line, errs}
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binDir
}

type buildError struct{ line, errs string }

func (e *buildError) Error() string { return e.line + ": " + e.errs }

// readmeText is README.md.
func readmeText(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
