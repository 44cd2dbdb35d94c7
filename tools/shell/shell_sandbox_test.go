//go:build linux

package shell

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/troupe-ai/troupe/internal/peer"
	"github.com/troupe-ai/troupe/tools"
	"github.com/troupe-ai/troupe/tools/sandbox"
)

// sandboxedSession is a session whose commands run in a sandbox that lets
// them write only the workspace (and their TMPDIR).
func sandboxedSession(t *testing.T) *tools.Session {
	t.Helper()
	sup := sandbox.Check()
	if sup.LandlockABI == 0 {
		peer.Missing(t, "Landlock", "the sandbox tests need a kernel with Landlock")
	}
	ws, err := tools.NewWorkspace(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s := tools.NewSession("sandboxed", ws, tools.Config{DataDir: t.TempDir()})
	UseSandbox(s, sandbox.NewBox(sandbox.Policy{Writable: []string{ws.Root()}, Network: sandbox.NetworkAllow}, sup, t.TempDir()))
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// A write outside the workspace fails with the program's own error and
// the sandbox line, and creates nothing: one-shot, script, session and
// background job alike; a write inside works.
func TestShellSandboxed(t *testing.T) {
	s := sandboxedSession(t)
	outside := t.TempDir()
	target := func(name string) string { return filepath.Join(outside, name+"-"+strconv.Itoa(os.Getpid())) }

	r := shellCall(t.Context(), t, s, map[string]any{"command": "echo x > " + target("oneshot")})
	if !strings.Contains(r.Text, "Permission denied") || !strings.Contains(r.Text, "[sandbox: writes are allowed only beneath") {
		t.Errorf("one-shot: %q", r.Text)
	}
	r = shellCall(t.Context(), t, s, map[string]any{"command": "printf 'echo x > %s\\n' " + target("script") + " > w.sh && sh w.sh"})
	if !strings.Contains(r.Text, "Permission denied") {
		t.Errorf("script: %q", r.Text)
	}
	r = shellCall(t.Context(), t, s, map[string]any{"command": "echo x > " + target("session") + "; echo in > inside.txt; cat inside.txt", "session": "dev"})
	if !strings.Contains(r.Text, "Permission denied") || !strings.Contains(r.Text, "in") {
		t.Errorf("session: %q", r.Text)
	}
	id := startTestJob(t, s, "echo x > "+target("job")+"; echo job done")
	out, _ := readJobUntil(t, s, id, "job done")
	if !strings.Contains(out, "Permission denied") {
		t.Errorf("job: %q", out)
	}
	for _, name := range []string{"oneshot", "script", "session", "job"} {
		if _, err := os.Stat(target(name)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: %s was created (%v)", name, target(name), err)
		}
	}
	r = shellCall(t.Context(), t, s, map[string]any{"command": "mkdir -p sub && echo ok > sub/f && cat sub/f && echo t > $TMPDIR/t && cat $TMPDIR/t"})
	if r.IsError || !strings.Contains(r.Text, "[exit: 0]\nok\nt\n") {
		t.Errorf("inside: %q", r.Text)
	}
}
