//go:build linux

package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/troupe-ai/troupe/internal/peer"
	"github.com/troupe-ai/troupe/tools/sandbox"
)

// needLandlock stops a test that needs the kernel to enforce the sandbox.
func needLandlock(t *testing.T) {
	t.Helper()
	if s := sandbox.Check(); s.LandlockABI == 0 || !s.Seccomp {
		peer.Missing(t, "Landlock", "the sandbox tests need a kernel with Landlock and seccomp: %+v", s)
	}
}

// notCreated fails t when path exists.
func notCreated(t *testing.T, path string) {
	t.Helper()
	if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s was created (or stat failed: %v)", path, err)
	}
}

// tools call shell runs its command in the config's sandbox, as a run
// does: a write to /tmp/<name> outside the workspace fails with the
// program's own error and the sandbox line and creates nothing, directly
// or through a script written to the workspace; a write inside works.
func TestToolsCallShellSandboxed(t *testing.T) {
	needLandlock(t)
	ws := t.TempDir()
	name := "/tmp/troupe-tools-call-" + strconv.Itoa(os.Getpid())
	for _, tc := range []struct{ how, command string }{
		{"direct", "echo x > " + name + "-direct"},
		{"script", "printf 'echo x > " + name + "-script\\n' > w.sh && sh w.sh"},
	} {
		code, out, errs := runCLI(t, "tools", "call", "shell", `{"command":"`+tc.command+`"}`, "--workspace", ws)
		if code != exitOK || !strings.Contains(out, "Permission denied") ||
			!strings.Contains(out, "[sandbox: writes are allowed only beneath "+ws) {
			t.Errorf("%s: exit %d:\n%s%s", tc.how, code, out, errs)
		}
		notCreated(t, name+"-"+tc.how)
	}
	code, out, _ := runCLI(t, "tools", "call", "shell", `{"command":"echo inside > sub.txt && cat sub.txt"}`, "--workspace", ws)
	if code != exitOK || !strings.Contains(out, "[exit: 0]\ninside") {
		t.Errorf("write inside: exit %d:\n%s", code, out)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "sub.txt")); err != nil || string(b) != "inside\n" {
		t.Errorf("sub.txt: %q, %v", b, err)
	}
	// With sandbox.mode: off the command runs with the caller's rights.
	off := filepath.Join(ws, "off.yaml")
	if err := os.WriteFile(off, []byte("sandbox: {mode: \"off\"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(t.TempDir(), "off.txt")
	if code, out, _ := runCLI(t, "tools", "call", "shell", `{"command":"echo x > `+target+`"}`, "--workspace", ws, "--config", off); code != exitOK {
		t.Errorf("mode off: exit %d:\n%s", code, out)
	}
	if _, err := os.Stat(target); err != nil {
		t.Errorf("mode off: %v", err)
	}
}

// With network deny a connect to a loopback server this test runs fails;
// with allow it succeeds.
func TestToolsCallShellNetworkDeny(t *testing.T) {
	needLandlock(t)
	if !sandbox.Check().NetNS {
		peer.Missing(t, "network namespaces", "network: deny needs network namespaces")
	}
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
	port := ln.Addr().(*net.TCPAddr).Port
	ws := t.TempDir()
	call := fmt.Sprintf(`{"command":"exec 3</dev/tcp/127.0.0.1/%d && echo connected"}`, port)
	for _, mode := range []string{"allow", "deny", "loopback"} {
		cfg := filepath.Join(ws, mode+".yaml")
		if err := os.WriteFile(cfg, []byte("sandbox: {network: {worker: "+mode+"}}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		code, out, errs := runCLI(t, "tools", "call", "shell", call, "--workspace", ws, "--config", cfg)
		if connected := strings.Contains(out, "connected"); code != exitOK || connected != (mode == "allow") {
			t.Errorf("%s: exit %d:\n%s%s", mode, code, out, errs)
		}
	}
}

// A kernel without Landlock: tools call of a tool that starts commands
// warns once, as a run does, and refuses with sandbox.required (exit 2).
func TestToolsCallSandboxUnsupported(t *testing.T) {
	t.Setenv(sandbox.AssumeMissingEnv, "landlock")
	ws := t.TempDir()
	code, out, errs := runCLI(t, "tools", "call", "shell", `{"command":"echo hi"}`, "--workspace", ws)
	if code != exitOK || !strings.Contains(out, "hi") || strings.Count(errs, "sandbox: not enforced on this kernel: Landlock") != 1 {
		t.Errorf("warning: exit %d:\n%s%s", code, out, errs)
	}
	strict := filepath.Join(ws, "strict.yaml")
	if err := os.WriteFile(strict, []byte("sandbox: {required: true}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs = runCLI(t, "tools", "call", "shell", `{"command":"echo ran > ran.txt"}`, "--workspace", ws, "--config", strict)
	if code != exitUsage || !strings.Contains(errs, "sandbox.required") {
		t.Errorf("required: exit %d:\n%s%s", code, out, errs)
	}
	notCreated(t, filepath.Join(ws, "ran.txt"))
	// A read-only tool starts no process: nothing to confine, no check,
	// no warning (and no probing of the kernel at start-up).
	code, out, errs = runCLI(t, "tools", "call", "grep", `{"pattern":"required"}`, "--workspace", ws, "--config", strict)
	if code != exitOK || !strings.Contains(out, "strict.yaml") || errs != "" {
		t.Errorf("read-only call: exit %d:\n%s%s", code, out, errs)
	}
}

// tools list ends with the effective sandbox of the commands it starts.
func TestToolsListShowsSandbox(t *testing.T) {
	ws := t.TempDir()
	code, out, _ := runCLI(t, "tools", "list", "--workspace", ws)
	if code != exitOK || !strings.Contains(out, "\nsandbox worker: writes beneath ["+ws) || !strings.Contains(out, ".ssh") {
		t.Errorf("exit %d:\n%s", code, out)
	}
	off := filepath.Join(ws, "off.yaml")
	if err := os.WriteFile(off, []byte("sandbox: {mode: \"off\"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, _ := runCLI(t, "tools", "list", "--workspace", ws, "--config", off); code != exitOK || !strings.Contains(out, "sandbox: off") {
		t.Errorf("mode off: exit %d:\n%s", code, out)
	}
}
