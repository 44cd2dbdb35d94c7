// Package e2e runs troupe's programs as separate processes, as a user
// would: the orchestrator, node processes, an external nats-server.
package e2e

import (
	"bufio"
	"flag"
	"fmt"
	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/internal/testfiles"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// bin holds the programs built once for the whole package.
var bin struct {
	orchestrator, node string
}

func TestMain(m *testing.M) {
	flag.Parse()
	cleanup := testfiles.PrivateState() // the programs' state directories in a temporary XDG_STATE_HOME
	code := runAll(m)
	cleanup()
	os.Exit(code)
}

// runAll builds the programs (unless -short) and runs the tests.
func runAll(m *testing.M) int {
	if testing.Short() {
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "troupe-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	bin.orchestrator = filepath.Join(dir, "orchestrator")
	bin.node = filepath.Join(dir, "node")
	for _, b := range []struct{ out, pkg string }{{bin.orchestrator, "./cmd/orchestrator"}, {bin.node, "./cmd/node"}} {
		cmd := exec.Command("go", "build", "-o", b.out, b.pkg)
		cmd.Dir = "../.."
		if out, err := cmd.CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "build %s: %v\n%s", b.pkg, err, out)
			os.RemoveAll(dir)
			return 1
		}
	}
	defer os.RemoveAll(dir)
	return m.Run()
}

// proc is a running program with its output captured.
type proc struct {
	t      testing.TB
	cmd    *exec.Cmd
	mu     sync.Mutex
	stdout strings.Builder
	stderr strings.Builder
	lines  chan string // stdout lines as they come
	done   chan struct{}
	err    error
}

// start runs a program with env added to ours.
func start(t testing.TB, path string, env []string, args ...string) *proc {
	t.Helper()
	return startIn(t, path, env, nil, args...)
}

// startIn is start with a standard input.
func startIn(t testing.TB, path string, env []string, stdin io.Reader, args ...string) *proc {
	t.Helper()
	cmd := exec.Command(path, args...)
	cmd.Env = append(append(os.Environ(), homeFor(args)...), env...)
	cmd.Stdin = stdin
	return startCmd(t, cmd)
}

// startCmd starts cmd, prepared by the caller (its environment, input,
// credentials), with its output captured; the test's end kills it.
func startCmd(t testing.TB, cmd *exec.Cmd) *proc {
	t.Helper()
	p := &proc{t: t, cmd: cmd, lines: make(chan string, 100_000), done: make(chan struct{})}
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	errPipe, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 1<<24)
		for sc.Scan() {
			p.mu.Lock()
			p.stdout.WriteString(sc.Text() + "\n")
			p.mu.Unlock()
			p.lines <- sc.Text()
		}
	}()
	go func() {
		defer wg.Done()
		b := make([]byte, 32<<10)
		for {
			n, err := errPipe.Read(b)
			p.mu.Lock()
			p.stderr.Write(b[:n])
			p.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	go func() {
		wg.Wait()
		p.err = p.cmd.Wait()
		close(p.lines)
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

// wait waits for the program to exit and returns its exit code.
func (p *proc) wait(d time.Duration) int {
	p.t.Helper()
	select {
	case <-p.done:
	case <-time.After(d):
		// SIGQUIT first: a Go program prints every goroutine's stack, so
		// the failure shows where it was stuck.
		_ = p.cmd.Process.Signal(syscall.SIGQUIT)
		select {
		case <-p.done:
		case <-time.After(5 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.done
		}
		p.t.Fatalf("%s did not exit within %v\nstdout:\n%s\nstderr:\n%s", p.cmd.Path, d, p.out(), p.errs())
	}
	if p.cmd.ProcessState == nil {
		return -1
	}
	return p.cmd.ProcessState.ExitCode()
}

func (p *proc) out() string  { p.mu.Lock(); defer p.mu.Unlock(); return p.stdout.String() }
func (p *proc) errs() string { p.mu.Lock(); defer p.mu.Unlock(); return p.stderr.String() }

// firstLine waits for the program's first stdout line.
func (p *proc) firstLine(d time.Duration) string {
	p.t.Helper()
	select {
	case l, ok := <-p.lines:
		if !ok {
			p.t.Fatalf("%s exited without output; stderr:\n%s", p.cmd.Path, p.errs())
		}
		return l
	case <-time.After(d):
		p.t.Fatalf("no output from %s within %v; stderr:\n%s", p.cmd.Path, d, p.errs())
	}
	return ""
}

// waitStderr polls until the program's stderr contains s.
func (p *proc) waitStderr(s string, d time.Duration) {
	p.t.Helper()
	deadline := time.Now().Add(d)
	for !strings.Contains(p.errs(), s) {
		if time.Now().After(deadline) {
			p.t.Fatalf("stderr of %s lacks %q after %v:\n%s", p.cmd.Path, s, d, p.errs())
		}
		select {
		case <-p.done:
			if !strings.Contains(p.errs(), s) {
				p.t.Fatalf("%s exited; stderr lacks %q:\n%s", p.cmd.Path, s, p.errs())
			}
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// jetStreamServer starts an in-process NATS server with JetStream on a
// random loopback port, stopped when the test ends.
func jetStreamServer(t testing.TB) *server.Server {
	t.Helper()
	s, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true, JetStream: true, StoreDir: t.TempDir()})
	must(t, err)
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats server not ready")
	}
	t.Cleanup(s.Shutdown)
	return s
}

// stateDirOf is the state directory the programs the tests start keep ws's
// state in (XDG_STATE_HOME is the tests' own, see TestMain).
func stateDirOf(t testing.TB, ws string) string {
	t.Helper()
	dir, err := actors.StateDir(ws)
	if err != nil {
		t.Fatal(err)
	}
	return dir
}
