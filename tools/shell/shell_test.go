package shell

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/troupe-ai/troupe/messages"
	"github.com/troupe-ai/troupe/tools"
	"github.com/troupe-ai/troupe/tools/procguard"
)

// shellCall runs the shell tool with args the way the executor does.
func shellCall(ctx context.Context, t *testing.T, s *tools.Session, args map[string]any) tools.Result {
	t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Shell().Run(ctx, s, raw)
	if err != nil {
		t.Fatalf("shell returned a Go error: %v", err)
	}
	return r
}

// shellEventually polls cond every 20 ms for up to 20 s.
func shellEventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		<-time.After(20 * time.Millisecond) // polling interval, not synchronisation
	}
}

// shellPidDead reports whether pid has exited: gone from /proc, or a
// zombie waiting for a parent (init in a container may never reap it).
func shellPidDead(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	// The state follows the parenthesised command name.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && (s[i+2] == 'Z' || s[i+2] == 'X')
}

// shellPids reads the pids a command wrote to a workspace file.
func shellPids(t *testing.T, s *tools.Session, rel string) []int {
	t.Helper()
	var pids []int
	for f := range strings.FieldsSeq(patchFile(t, s, rel)) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("bad pid %q in %s", f, rel)
		}
		pids = append(pids, pid)
	}
	if len(pids) == 0 {
		t.Fatalf("no pids in %s", rel)
	}
	return pids
}

func TestShellExitAndOutput(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"ok":            "echo hello",
		"nonzero":       "echo oops >&2; exit 3",
		"no_newline":    "printf 'no newline'",
		"no_output":     "true",
		"killed":        "echo before; kill -9 $$",
		"no_stdin":      "cat; echo after cat",
		"command_error": "no-such-command-troupe",
	}
	for name, cmd := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := newTestSession(t)
			r := shellCall(t.Context(), t, s, map[string]any{"command": cmd})
			if r.IsError {
				t.Errorf("a finished command is not an error result: %s", r.Text)
			}
			golden(t, "shell/"+name, r.Text)
		})
	}
}

// stdout and stderr share one pipe, so their order survives.
func TestShellInterleavesStdoutAndStderr(t *testing.T) {
	t.Parallel()
	s := newTestSession(t)
	r := shellCall(t.Context(), t, s, map[string]any{
		"command": `for i in $(seq 1 200); do echo "out $i"; echo "err $i" >&2; done`,
	})
	var want strings.Builder
	want.WriteString("[exit: 0]\n")
	for i := 1; i <= 200; i++ {
		fmt.Fprintf(&want, "out %d\nerr %d\n", i, i)
	}
	if r.Text != want.String() {
		t.Errorf("output order lost:\n%s", r.Text)
	}
}

func TestShellTimeoutKillsGroup(t *testing.T) {
	t.Parallel()
	s := newTestSession(t)
	// One background job plus one that ignores SIGTERM, so the SIGKILL
	// step is exercised too.
	r := shellCall(t.Context(), t, s, map[string]any{
		"timeout": 2,
		"command": `sleep 1000 & echo $! > pids; (trap '' TERM; exec sleep 1001) & echo $! >> pids; echo started; sleep 1002`,
	})
	if !r.IsError || !strings.HasPrefix(r.Text, "[exit: ") || !strings.Contains(r.Text, "\nstarted\n") ||
		!strings.HasSuffix(r.Text, "\n[timed out after 2 s]\n") {
		t.Fatalf("timeout result: %q", r.Text)
	}
	if r.Metadata["timed_out"] != true {
		t.Errorf("metadata timed_out = %v", r.Metadata["timed_out"])
	}
	golden(t, "shell/timeout", r.Text)
	for _, pid := range shellPids(t, s, "pids") {
		shellEventually(t, fmt.Sprintf("background pid %d to die", pid), func() bool { return shellPidDead(pid) })
	}
}

// A command that finishes does not leave its background jobs running.
func TestShellStopsBackgroundJobsOnExit(t *testing.T) {
	t.Parallel()
	s := newTestSession(t)
	r := shellCall(t.Context(), t, s, map[string]any{"command": `sleep 1000 & echo $! > pids; sleep 1001 >/dev/null 2>&1 & echo $! >> pids; echo done`})
	if r.Text != "[exit: 0]\ndone\n" {
		t.Fatalf("result: %q", r.Text)
	}
	for _, pid := range shellPids(t, s, "pids") {
		shellEventually(t, fmt.Sprintf("background pid %d to die", pid), func() bool { return shellPidDead(pid) })
	}
}

func TestShellCancellation(t *testing.T) {
	t.Parallel()
	s := newTestSession(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan tools.Result, 1)
	go func() {
		done <- shellCall(ctx, t, s, map[string]any{"command": `echo $$ > pids; sleep 1000 & echo $! >> pids; echo waiting; touch started; wait`})
	}()
	shellEventually(t, "the command to start", func() bool {
		_, err := os.Stat(filepath.Join(s.Workspace.Root(), "started"))
		return err == nil
	})
	cancel()
	var r tools.Result
	select {
	case r = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("cancelled shell call did not return")
	}
	if !r.IsError || r.Metadata["cancelled"] != true {
		t.Fatalf("cancelled result: %q", r.Text)
	}
	golden(t, "shell/cancelled", r.Text)
	for _, pid := range shellPids(t, s, "pids") {
		shellEventually(t, fmt.Sprintf("pid %d to die", pid), func() bool { return shellPidDead(pid) })
	}
}

func TestShellEnvironmentScrubbed(t *testing.T) {
	// t.Setenv forbids t.Parallel.
	t.Setenv("TROUPE_TEST_API_KEY", "sk-value-one")
	t.Setenv("troupe_test_token", "value-two")
	t.Setenv("TROUPE_DB_PASSWORD", "value-three")
	t.Setenv("TROUPE_CLIENT_SECRET_X", "value-four")
	t.Setenv("TROUPE_TEST_PLAIN", "visible-value")
	s := newTestSession(t)
	Configure(s, Config{Env: []string{"TROUPE_TEST_*"}}) // configured extras; secret-looking names stay out
	r := shellCall(t.Context(), t, s, map[string]any{"command": "env"})
	for _, v := range []string{"sk-value-one", "value-two", "value-three", "value-four"} {
		if strings.Contains(r.Text, v) {
			t.Errorf("secret %q reached the command's environment", v)
		}
	}
	if !strings.Contains(r.Text, "TROUPE_TEST_PLAIN=visible-value") {
		t.Errorf("ordinary variable missing from the environment:\n%s", r.Text)
	}
}

func TestShellWorkingDir(t *testing.T) {
	t.Parallel()
	s := newTestSession(t)
	writeFile(t, s, "sub/dir/f.txt", "x")
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(s.Workspace.Root(), "out")); err != nil {
		t.Fatal(err)
	}
	r := shellCall(t.Context(), t, s, map[string]any{"command": "pwd; ls", "working_dir": "sub/dir"})
	if want := "[exit: 0]\n" + filepath.Join(s.Workspace.Root(), "sub/dir") + "\nf.txt\n"; r.Text != want {
		t.Errorf("got %q, want %q", r.Text, want)
	}
	for _, dir := range []string{"..", outside, "out", "sub/../../x"} {
		r := shellCall(t.Context(), t, s, map[string]any{"command": "touch escaped", "working_dir": dir})
		if !r.IsError || !strings.Contains(r.Text, "outside the workspace") {
			t.Errorf("working_dir %q: %s", dir, r.Text)
		}
	}
	if _, err := os.Stat(filepath.Join(outside, "escaped")); err == nil {
		t.Error("a command ran outside the workspace")
	}
	for _, dir := range []string{"missing", "sub/dir/f.txt"} {
		r := shellCall(t.Context(), t, s, map[string]any{"command": "true", "working_dir": dir})
		if !r.IsError || !strings.Contains(r.Text, "is not an existing directory") {
			t.Errorf("working_dir %q: %s", dir, r.Text)
		}
	}
}

func TestShellArguments(t *testing.T) {
	t.Parallel()
	s := newTestSession(t)
	for _, c := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"command": "true", "timeout": 0}, "must be at least 1"},
		{map[string]any{"command": "true", "timeout": 601}, "must be at most 600"},
		{map[string]any{"timeout": 5}, `"command" is required`},
		{map[string]any{"command": "  "}, "command is empty"},
	} {
		r := shellCall(t.Context(), t, s, c.args)
		if !r.IsError || !strings.Contains(r.Text, c.want) {
			t.Errorf("args %v: got %q, want an error containing %q", c.args, r.Text, c.want)
		}
	}
}

// With no bash in PATH the tool falls back to sh; with neither, the call
// is an error result saying the command could not start.
func TestShellFindsShell(t *testing.T) {
	sh, err := procguard.FindShell()
	if err != nil {
		t.Skip("no shell on this machine")
	}
	onlySh := t.TempDir()
	if err := os.Symlink(sh, filepath.Join(onlySh, "sh")); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", onlySh)
	if got, err := procguard.FindShell(); err != nil || got != filepath.Join(onlySh, "sh") {
		t.Errorf("findShell without bash = %q, %v; want the sh in PATH", got, err)
	}
	t.Setenv("PATH", t.TempDir())
	s := newTestSession(t)
	r := shellCall(t.Context(), t, s, map[string]any{"command": "echo hi"})
	if !r.IsError || !strings.Contains(r.Text, "could not be started") {
		t.Errorf("no shell at all: %q", r.Text)
	}
}

// Output beyond the buffer cap keeps its head and tail and says how much
// was dropped; the byte count is exact.
func TestShellLargeOutput(t *testing.T) {
	t.Parallel()
	s := newTestSession(t)
	r := shellCall(t.Context(), t, s, map[string]any{"command": "head -c 10500000 /dev/zero | tr '\\0' a; echo; echo THE END"})
	if got := r.Metadata["output_bytes"]; got != int64(10500000+1+8) {
		t.Errorf("output_bytes = %v", got)
	}
	if !strings.HasSuffix(r.Text, "a\nTHE END\n") || !strings.Contains(r.Text, "bytes of output dropped") {
		t.Errorf("large output lost its tail or the drop marker (len %d)", len(r.Text))
	}
	if len(r.Text) > shellOutputCap+1024 {
		t.Errorf("kept %d bytes, cap is %d", len(r.Text), shellOutputCap)
	}
}

func TestCapBuffer(t *testing.T) {
	t.Parallel()
	b := newCapBuffer(100)
	b.Write([]byte(strings.Repeat("h", 50)))
	if got := b.String(); got != strings.Repeat("h", 50) {
		t.Errorf("under the cap: %q", got)
	}
	for range 100 {
		b.Write([]byte("abcdefgh"))
	}
	b.Write([]byte("0123456789012345678901234567890123456789"))
	got := b.String()
	// Head: 60 bytes (50 h + "abcdefgh" + "ab"); tail: the last 40 bytes;
	// dropped: 50+800+40 written - 60 - 40 = 790.
	want := strings.Repeat("h", 50) + "abcdefghab" +
		"\n[... 790 bytes of output dropped: the command wrote 890 bytes, more than the 100 bytes kept ...]\n" +
		"0123456789012345678901234567890123456789"
	if got != want {
		t.Errorf("capped:\n%q\nwant\n%q", got, want)
	}
}

func BenchmarkShellEcho(b *testing.B) {
	ws, err := tools.NewWorkspace(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	s := tools.NewSession("bench", ws, tools.Config{DataDir: b.TempDir()})
	tool := Shell()
	args := json.RawMessage(`{"command":"echo hello"}`)
	for b.Loop() {
		r, err := tool.Run(b.Context(), s, args)
		if err != nil || r.Text != "[exit: 0]\nhello\n" {
			b.Fatalf("%v %q", err, r.Text)
		}
	}
}

// Through the executor, long output keeps its head ("[exit: N]") and its
// tail, and the whole of it is saved to a spill file.
func TestShellThroughExecutor(t *testing.T) {
	t.Parallel()
	s := newTestSession(t)
	e := &tools.Executor{Tools: tools.NewRegistry(Shell()), Session: s}
	rs := e.Run(t.Context(), []messages.ToolCall{{ID: "c1", Name: "shell", Args: json.RawMessage(`{"command":"seq 1 50000; echo FAILED at the end >&2; exit 1"}`)}})
	r := rs[0]
	if r.IsError || !r.Truncated || r.SpillPath == "" {
		t.Fatalf("want a truncated, spilled, non-error result; got error=%v truncated=%v spill=%q", r.IsError, r.Truncated, r.SpillPath)
	}
	if !strings.HasPrefix(r.Text, "[exit: 1]\n1\n2\n") || !strings.Contains(r.Text, "50000\nFAILED at the end\n") {
		t.Errorf("head or tail lost:\n%.200s\n...\n%s", r.Text, r.Text[max(0, len(r.Text)-300):])
	}
	if len(r.Text) > 31*1024 {
		t.Errorf("kept %d bytes, more than the 30 KB budget", len(r.Text))
	}
}
