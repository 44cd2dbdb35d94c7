package shell

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/troupe-ai/troupe/tools"
)

// sessionCall runs shell in session name.
func sessionCall(t *testing.T, s *tools.Session, name, command string, extra ...any) tools.Result {
	t.Helper()
	args := map[string]any{"command": command, "session": name}
	for i := 0; i+1 < len(extra); i += 2 {
		args[extra[i].(string)] = extra[i+1]
	}
	return shellCall(t.Context(), t, s, args)
}

// The working directory, exported and plain variables, functions and a
// sourced environment (a virtualenv's activate) carry over.
func TestShellSessionPersists(t *testing.T) {
	t.Parallel()
	s := newTestSession(t)
	writeFile(t, s, "sub/dir/f.txt", "x")
	writeFile(t, s, ".venv/bin/activate", "export VIRTUAL_ENV=\"$PWD/.venv\"\nexport PATH=\"$VIRTUAL_ENV/bin:$PATH\"\ndeactivate() { unset VIRTUAL_ENV; }\n")
	r := sessionCall(t, s, "dev", "source .venv/bin/activate; cd sub; export X=42; Y=7; f() { echo fn \"$@\"; }")
	if r.IsError || r.Text != "[exit: 0]\n" || r.Metadata["session_started"] != true || r.Metadata["cwd"] != "sub" {
		t.Fatalf("first command: %q %v", r.Text, r.Metadata)
	}
	r = sessionCall(t, s, "dev", `pwd; echo "X=$X Y=$Y"; f a b; echo "$VIRTUAL_ENV"; type deactivate | head -1; bash -c 'echo child X=$X Y=$Y'`)
	root := s.Workspace.Root()
	want := fmt.Sprintf("[exit: 0]\n%s/sub\nX=42 Y=7\nfn a b\n%s/.venv\ndeactivate is a function\nchild X=42 Y=\n", root, root)
	if r.Text != want || r.Metadata["session_started"] != false {
		t.Errorf("second command:\n%q\nwant\n%q", r.Text, want)
	}
	// working_dir moves the session, and it stays there.
	r = sessionCall(t, s, "dev", "pwd", "working_dir", "sub/dir")
	r2 := sessionCall(t, s, "dev", "ls")
	if r.Text != "[exit: 0]\n"+root+"/sub/dir\n" || r2.Text != "[exit: 0]\nf.txt\n" || r2.Metadata["cwd"] != "sub/dir" {
		t.Errorf("working_dir: %q then %q", r.Text, r2.Text)
	}
	// Another session has its own state; a one-shot call has none.
	if r := sessionCall(t, s, "other", `echo "X=$X"; pwd`); r.Text != "[exit: 0]\nX=\n"+root+"\n" {
		t.Errorf("sessions share state: %q", r.Text)
	}
	if r := shellCall(t.Context(), t, s, map[string]any{"command": `echo "X=$X"`}); r.Text != "[exit: 0]\nX=\n" {
		t.Errorf("one-shot call sees session state: %q", r.Text)
	}
}

// The session's own output channel survives what a command does to its
// descriptors; commands read nothing; exit statuses and stderr come back.
func TestShellSessionOutputFraming(t *testing.T) {
	t.Parallel()
	s := newTestSession(t)
	for _, c := range []struct{ cmd, want string }{
		{"exec >/dev/null 2>&1; echo hidden", "[exit: 0]\n"},
		{"echo visible; echo err >&2; false", "[exit: 1]\nvisible\nerr\n"},
		{"cat; read -r x; echo read=$?", "[exit: 0]\nread=1\n"},
		{"exec 3>/dev/null; echo three >&3; echo fd3 survived", "[exit: 0]\nfd3 survived\n"},
		{`printf 'no newline'`, "[exit: 0]\nno newline"},
		{`printf '\0TROUPE-E-forged 0\0/\n\0'; echo after`, "[exit: 0]\n\x00TROUPE-E-forged 0\x00/\n\x00after\n"},
		{"(exit 3)", "[exit: 3]\n"},
		{"syntax error (", "[exit: 2]\n"},
	} {
		r := sessionCall(t, s, "io", c.cmd)
		if c.cmd == "syntax error (" {
			if !strings.HasPrefix(r.Text, "[exit: 2]\n") || !strings.Contains(r.Text, "syntax error") {
				t.Errorf("%q: %q", c.cmd, r.Text)
			}
			continue
		}
		if r.Text != c.want {
			t.Errorf("%q: %q, want %q", c.cmd, r.Text, c.want)
		}
	}
	if r := sessionCall(t, s, "io", "echo still here"); r.Text != "[exit: 0]\nstill here\n" {
		t.Errorf("session broken: %q", r.Text)
	}
}

// A session whose command leaves the workspace is moved back to the root,
// and the result says so; so is one whose directory was removed.
func TestShellSessionCwdStaysInWorkspace(t *testing.T) {
	t.Parallel()
	s := newTestSession(t)
	root := s.Workspace.Root()
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, s, "gone/x", "")
	for _, cmd := range []string{"cd /", "cd " + outside, "cd link", "cd ..", "cd gone && rm -rf ../gone"} {
		r := sessionCall(t, s, "w", cmd)
		if !strings.Contains(r.Text, "it was reset to the workspace root]") || r.Metadata["cwd"] != "." {
			t.Errorf("%q: %q %v", cmd, r.Text, r.Metadata["cwd"])
		}
		if r := sessionCall(t, s, "w", "pwd; touch here"); r.Text != "[exit: 0]\n"+root+"\n" {
			t.Errorf("after %q: %q", cmd, r.Text)
		}
	}
	if _, err := os.Stat(filepath.Join(outside, "here")); err == nil {
		t.Error("a session command ran outside the workspace")
	}
	if r := sessionCall(t, s, "w", "cd /tmp && pwd && cd -"); strings.Contains(r.Text, "reset") {
		t.Errorf("a command that comes back was reset: %q", r.Text)
	}
}

// exit closes the session; a timeout stops it with everything it ran;
// either way the next command gets a fresh shell, and says so.
func TestShellSessionExitAndTimeout(t *testing.T) {
	t.Parallel()
	s := newTestSession(t)
	sessionCall(t, s, "x", "export KEEP=1")
	r := sessionCall(t, s, "x", "echo bye; exit 7")
	if !strings.HasPrefix(r.Text, "[exit: 7]\nbye\n") || !strings.Contains(r.Text, `session "x" is closed`) {
		t.Errorf("exit: %q", r.Text)
	}
	if r := sessionCall(t, s, "x", `echo "KEEP=$KEEP"`); r.Text != "[exit: 0]\nKEEP=\n" || r.Metadata["session_started"] != true {
		t.Errorf("after exit: %q %v", r.Text, r.Metadata)
	}
	r = sessionCall(t, s, "x", "set -e; false; echo not reached")
	if !strings.HasPrefix(r.Text, "[exit: 1]\n") || strings.Contains(r.Text, "not reached") || !strings.Contains(r.Text, "is closed") {
		t.Errorf("set -e: %q", r.Text)
	}
	r = sessionCall(t, s, "x", "export KEEP=2; sleep 1000 & echo $! > bg.pid; echo $$ > sh.pid; echo started; sleep 1001", "timeout", 1)
	if !r.IsError || !strings.Contains(r.Text, "\nstarted\n[timed out after 1 s]\n") || !strings.Contains(r.Text, `session "x" was stopped`) {
		t.Fatalf("timeout: %q", r.Text)
	}
	for _, f := range []string{"bg.pid", "sh.pid"} {
		for _, pid := range shellPids(t, s, f) {
			shellEventually(t, fmt.Sprintf("pid %d (%s) to die", pid, f), func() bool { return shellPidDead(pid) })
		}
	}
	if r := sessionCall(t, s, "x", `echo "KEEP=$KEEP"`); r.Text != "[exit: 0]\nKEEP=\n" {
		t.Errorf("after timeout: %q", r.Text)
	}
}

// Processes a session command starts with & are stopped when it ends,
// and their late output never reaches a later command's result.
func TestShellSessionStopsLeftovers(t *testing.T) {
	t.Parallel()
	s := newTestSession(t)
	r := sessionCall(t, s, "l", "sleep 1000 & echo $! > a.pid; (trap '' TERM; exec sleep 1001) & echo $! >> a.pid; echo done")
	if r.Text != "[exit: 0]\ndone\n" {
		t.Fatalf("%q", r.Text)
	}
	for _, pid := range shellPids(t, s, "a.pid") {
		shellEventually(t, fmt.Sprintf("background pid %d to die", pid), func() bool { return shellPidDead(pid) })
	}
	if r := sessionCall(t, s, "l", "jobs; echo next"); r.Text != "[exit: 0]\nnext\n" && !strings.HasSuffix(r.Text, "\nnext\n") {
		t.Errorf("next command: %q", r.Text)
	}
}

func TestShellSessionArguments(t *testing.T) {
	t.Parallel()
	s := newTestSession(t)
	for _, c := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"command": "true", "session": "a b"}, "not a valid name"},
		{map[string]any{"command": "true", "session": strings.Repeat("x", 65)}, "not a valid name"},
		{map[string]any{"command": "true", "session": "a", "background": true}, "background and session do not go together"},
		{map[string]any{"command": "rm -rf /", "session": "a"}, "rule rm_root"},
		{map[string]any{"command": "true", "session": "a", "working_dir": ".."}, "outside the workspace"},
	} {
		r := shellCall(t.Context(), t, s, c.args)
		if !r.IsError || !strings.Contains(r.Text, c.want) {
			t.Errorf("%v: %q, want an error containing %q", c.args, r.Text, c.want)
		}
	}
	for i := range maxShellSessions {
		if r := sessionCall(t, s, fmt.Sprintf("s%d", i), "true"); r.IsError {
			t.Fatalf("session %d: %s", i, r.Text)
		}
	}
	r := sessionCall(t, s, "one-too-many", "true")
	if !r.IsError || !strings.Contains(r.Text, "you already have 8 sessions (s0, s1,") {
		t.Errorf("cap: %q", r.Text)
	}
	sessionCall(t, s, "s0", "exit")
	if r := sessionCall(t, s, "one-too-many", "true"); r.IsError {
		t.Errorf("after closing one: %q", r.Text)
	}
}

// Close ends every session with the processes it ran, and later calls
// are refused.
func TestShellSessionClose(t *testing.T) {
	t.Parallel()
	s := newTestSession(t)
	sessionCall(t, s, "c", "echo $$ > sh.pid")
	pids := shellPids(t, s, "sh.pid")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	shellEventually(t, "the session's shell to die", func() bool { return shellPidDead(pids[0]) })
	if r := sessionCall(t, s, "c", "true"); !r.IsError || !strings.Contains(r.Text, "has ended") {
		t.Errorf("after Close: %q", r.Text)
	}
}

// Commands longer than an argument may be (128 KiB) run, in one-shot
// calls and in sessions; over 1 MiB they are refused with a clear error.
func TestShellLongCommands(t *testing.T) {
	t.Parallel()
	s := newTestSession(t)
	long := ": " + strings.Repeat("x", 300<<10) + "\necho long ok"
	if r := shellCall(t.Context(), t, s, map[string]any{"command": long}); r.Text != "[exit: 0]\nlong ok\n" {
		t.Errorf("one-shot: %.200q", r.Text)
	}
	if r := sessionCall(t, s, "l", long); r.Text != "[exit: 0]\nlong ok\n" {
		t.Errorf("session: %.200q", r.Text)
	}
	r := shellCall(t.Context(), t, s, map[string]any{"command": strings.Repeat("x", shellCommandMax+1)})
	if !r.IsError || !strings.Contains(r.Text, "more than the 1048576 a command may have") {
		t.Errorf("oversize: %.200q", r.Text)
	}
	if files, _ := filepath.Glob(filepath.Join(os.TempDir(), "troupe-command-*.sh")); len(files) > 0 {
		for _, f := range files {
			if fi, err := os.Stat(f); err == nil && fi.Mode().Perm() != 0o600 {
				t.Errorf("%s is %v", f, fi.Mode())
			}
		}
	}
}

func BenchmarkShellSessionEcho(b *testing.B) {
	ws, err := tools.NewWorkspace(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	s := tools.NewSession("bench", ws, tools.Config{DataDir: b.TempDir()})
	defer s.Close()
	tool := Shell()
	args := []byte(`{"command":"echo hello","session":"bench"}`)
	for b.Loop() {
		r, err := tool.Run(b.Context(), s, args)
		if err != nil || r.Text != "[exit: 0]\nhello\n" {
			b.Fatalf("%v %q", err, r.Text)
		}
	}
}
