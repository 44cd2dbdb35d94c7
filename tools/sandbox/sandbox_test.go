//go:build linux

package sandbox

import (
	"bytes"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/troupe-ai/troupe/internal/peer"
)

// box is a workspace, a private TMPDIR and a HOME with a planted key, and
// the policy a command in it gets by default.
type box struct {
	ws, tmp, home, outside string
	pol                    Policy
}

func newBox(t *testing.T) *box {
	t.Helper()
	root := t.TempDir()
	b := &box{ws: filepath.Join(root, "ws"), tmp: filepath.Join(root, "tmp"), home: filepath.Join(root, "home"),
		outside: filepath.Join(root, "outside")}
	for _, d := range []string{b.ws, b.tmp, filepath.Join(b.home, ".ssh"), b.outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(b.home, ".ssh", "id_ed25519"), []byte("PRIVATE KEY"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(b.home, "notes.txt"), []byte("plain notes"), 0o644); err != nil {
		t.Fatal(err)
	}
	b.pol = Policy{Writable: []string{b.ws, b.tmp}, DenyRead: DefaultDenyRead(b.home), Network: NetworkAllow}
	return b
}

// run runs argv confined by pol, in the workspace, and returns its
// combined output and exit status.
func (b *box) run(t *testing.T, pol Policy, extraEnv []string, argv ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = b.ws
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + b.home, "TMPDIR=" + b.tmp}, extraEnv...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := Start(cmd, pol, Check()); err != nil {
		t.Fatalf("start: %v", err)
	}
	err := cmd.Wait()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("run %v: %v", argv, err)
	}
	return out.String(), cmd.ProcessState.ExitCode()
}

func (b *box) sh(t *testing.T, script string) (string, int) {
	t.Helper()
	return b.run(t, b.pol, nil, "sh", "-c", script)
}

func needKernel(t *testing.T) {
	t.Helper()
	s := Check()
	if s.LandlockABI < 6 || !s.Seccomp || !s.NetNS {
		peer.Missing(t, "Landlock", "the sandbox tests need Landlock ABI 6+, seccomp and network namespaces; this kernel: %+v", s)
	}
}

func notExist(t *testing.T, path string) {
	t.Helper()
	if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s was created (or stat failed: %v)", path, err)
	}
}

// Writing outside the workspace fails and creates nothing, however the
// write is made.
func TestWriteOutsideRefused(t *testing.T) {
	needKernel(t)
	b := newBox(t)
	if err := os.WriteFile(filepath.Join(b.ws, "w.sh"), []byte("echo x > \"$1\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cases := map[string]func(target string) []string{
		"sh":     func(p string) []string { return []string{"sh", "-c", "echo x > " + p} },
		"script": func(p string) []string { return []string{"sh", "-c", "./w.sh " + p} },
		"touch":  func(p string) []string { return []string{"touch", p} },
		"mkdir":  func(p string) []string { return []string{"mkdir", p} },
	}
	cases["python3"] = func(p string) []string { return []string{"python3", "-c", "open('" + p + "','w').write('x')"} }
	cases["perl"] = func(p string) []string {
		return []string{"perl", "-e", "open(F,'>','" + p + "') or die \"$!\\n\"; print F 'x'"}
	}
	for name, argv := range cases {
		t.Run(name, func(t *testing.T) {
			if name == "python3" || name == "perl" {
				peer.Need(t, name)
			}
			for _, target := range []string{filepath.Join(b.outside, "f-"+name), "/tmp/troupe-sandbox-test-" + name + strconv.Itoa(os.Getpid())} {
				out, code := b.run(t, b.pol, nil, argv(target)...)
				if code == 0 {
					t.Errorf("%s: exit 0, want a failure; output %q", target, out)
				}
				if !strings.Contains(out, "ermission denied") {
					t.Errorf("%s: output %q does not say Permission denied", target, out)
				}
				notExist(t, target)
			}
		})
	}
}

// Writes beneath the workspace, its subfolders, TMPDIR and a listed
// writable path succeed.
func TestWriteInsideAllowed(t *testing.T) {
	needKernel(t)
	b := newBox(t)
	extra := filepath.Join(filepath.Dir(b.ws), "cache")
	if err := os.Mkdir(extra, 0o755); err != nil {
		t.Fatal(err)
	}
	pol := b.pol
	pol.Writable = append(pol.Writable, extra)
	script := `set -e
echo a > a.txt && mkdir -p sub/deeper && echo b > sub/deeper/b.txt && mv a.txt sub/ && rm sub/a.txt
echo t > "$TMPDIR/t.txt" && echo c > ` + extra + `/c.txt && ln -s b.txt sub/deeper/l && echo ok > /dev/null && cat sub/deeper/l`
	out, code := b.run(t, pol, nil, "sh", "-c", script)
	if code != 0 || strings.TrimSpace(out) != "b" {
		t.Fatalf("exit %d, output %q", code, out)
	}
	for _, p := range []string{filepath.Join(b.tmp, "t.txt"), filepath.Join(extra, "c.txt")} {
		if _, err := os.Stat(p); err != nil {
			t.Error(err)
		}
	}
}

// A planted private key cannot be read; the rest of HOME can.
func TestDenyRead(t *testing.T) {
	needKernel(t)
	b := newBox(t)
	out, code := b.sh(t, "cat ~/.ssh/id_ed25519")
	if code == 0 || strings.Contains(out, "PRIVATE") || !strings.Contains(out, "Permission denied") {
		t.Errorf("read the key: exit %d, %q", code, out)
	}
	out, code = b.sh(t, "cat ~/notes.txt && ls ~/.ssh && cat /etc/hostname >/dev/null")
	if code != 0 || !strings.Contains(out, "plain notes") || !strings.Contains(out, "id_ed25519") {
		t.Errorf("read the rest: exit %d, %q", code, out)
	}
	// Also through a symlink planted in the workspace.
	if err := os.Symlink(filepath.Join(b.home, ".ssh"), filepath.Join(b.ws, "keys")); err != nil {
		t.Fatal(err)
	}
	out, code = b.sh(t, "cat keys/id_ed25519")
	if code == 0 || strings.Contains(out, "PRIVATE") {
		t.Errorf("read the key through a symlink: exit %d, %q", code, out)
	}
}

// helper runs this test binary as one of its helpers, confined.
func (b *box) helper(t *testing.T, pol Policy, name string, args ...string) (string, int) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return b.run(t, pol, []string{helperEnv + "=" + name}, append([]string{self}, args...)...)
}

// network deny refuses a TCP connect to a server on loopback that the
// test started; allow lets it through; loopback reaches only the
// command's own loopback: with the namespace made by this process, and
// through the launcher.
func TestNetwork(t *testing.T) {
	needKernel(t)
	if Check().ThreadNetNS {
		t.Run("this-process", testNetwork)
	}
	t.Run("launcher", func(t *testing.T) {
		t.Setenv(AssumeMissingEnv, "threadnetns")
		testNetwork(t)
	})
}

func testNetwork(t *testing.T) {
	b := newBox(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	}()
	addr := ln.Addr().String()
	for _, tc := range []struct {
		mode Network
		ok   bool
	}{{NetworkAllow, true}, {NetworkDeny, false}, {NetworkLoopback, false}} {
		pol := b.pol
		pol.Network = tc.mode
		out, code := b.helper(t, pol, "connect", addr)
		if (code == 0) != tc.ok {
			t.Errorf("network %s: exit %d, %q", tc.mode, code, out)
		}
	}
	// loopback: a server the command starts itself is reachable.
	t.Run("own-loopback", func(t *testing.T) {
		peer.Need(t, "python3")
		pol := b.pol
		pol.Network = NetworkLoopback
		script := `import socket
s=socket.socket(); s.bind(("127.0.0.1",0)); s.listen(1)
c=socket.create_connection(s.getsockname()); print("own loopback ok")`
		out, code := b.run(t, pol, nil, "python3", "-c", script)
		if code != 0 || !strings.Contains(out, "own loopback ok") {
			t.Errorf("own loopback: exit %d, %q", code, out)
		}
	})
}

// ptrace of a sibling, mount, unshare and signals to processes outside
// the sandbox are refused.
func TestPrivilegedCallsRefused(t *testing.T) {
	needKernel(t)
	b := newBox(t)
	sib := exec.Command("sleep", "60")
	if err := sib.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sib.Process.Kill(); _ = sib.Wait() }()
	pid := strconv.Itoa(sib.Process.Pid)
	for _, c := range [][]string{{"ptrace", pid}, {"mount", b.ws}, {"unshare"}} {
		out, code := b.helper(t, b.pol, c[0], c[1:]...)
		if code == 0 || !strings.Contains(out, "operation not permitted") {
			t.Errorf("%v: exit %d, %q", c, code, out)
		}
	}
	out, code := b.sh(t, "kill -0 "+pid)
	if code == 0 {
		t.Errorf("signalled a process outside the sandbox: %q", out)
	}
	// A root command keeps no CAP_SYS_ADMIN (bit 21) in its bounding set.
	out, _ = b.sh(t, "grep CapBnd /proc/self/status")
	f := strings.Fields(out)
	if len(f) != 2 {
		t.Fatalf("CapBnd: %q", out)
	}
	bnd, err := strconv.ParseUint(f[1], 16, 64)
	if err != nil || bnd&(1<<21) != 0 {
		t.Errorf("CapBnd %q keeps CAP_SYS_ADMIN (%v)", f[1], err)
	}
}

// The process that starts confined commands stays unconfined: after many
// starts, writes from many goroutines (on whatever threads the runtime
// picks) outside every workspace succeed.
func TestStarterStaysFree(t *testing.T) {
	needKernel(t)
	b := newBox(t)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() { _, _ = b.sh(t, "true") })
	}
	wg.Wait()
	errs := make(chan error, 64)
	for i := range 64 {
		wg.Go(func() {
			errs <- os.WriteFile(filepath.Join(b.outside, "parent-"+strconv.Itoa(i)), []byte("x"), 0o600)
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("the parent got confined: %v", err)
		}
	}
	if data, err := os.ReadFile(filepath.Join(b.home, ".ssh", "id_ed25519")); err != nil || len(data) == 0 {
		t.Fatalf("the parent cannot read what its commands may not: %v", err)
	}
}

// A command started with a parent-death signal outlives Start's thread
// (the signal fires when the forking thread ends): it still answers
// after many other starts and a collection.
func TestPdeathsigSurvivesStart(t *testing.T) {
	needKernel(t)
	b := newBox(t)
	for _, mode := range []Network{NetworkAllow, NetworkDeny} {
		pol := b.pol
		pol.Network = mode
		cmd := exec.Command("sh", "-c", "read line; echo got $line")
		cmd.Dir = b.ws
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		in, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		cmd.Stdout = &out
		if err := Start(cmd, pol, Check()); err != nil {
			t.Fatal(err)
		}
		for range 4 {
			_, _ = b.sh(t, "true")
		}
		runtime.GC()
		_, _ = in.Write([]byte("hello\n"))
		_ = in.Close()
		if err := cmd.Wait(); err != nil || strings.TrimSpace(out.String()) != "got hello" {
			t.Errorf("network %s: %v, %q", mode, err, out.String())
		}
	}
}
