package shell

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/troupe-ai/troupe/messages"
	"github.com/troupe-ai/troupe/tools"
)

// startTestJob starts command as a background job and returns its ID.
func startTestJob(t *testing.T, s *tools.Session, command string, extra ...any) string {
	t.Helper()
	args := map[string]any{"command": command, "background": true}
	for i := 0; i+1 < len(extra); i += 2 {
		args[extra[i].(string)] = extra[i+1]
	}
	r := shellCall(t.Context(), t, s, args)
	id, _ := r.Metadata["job_id"].(string)
	if r.IsError || id == "" || !strings.HasPrefix(r.Text, "[job "+id+" started]\n") {
		t.Fatalf("start job: %q %v", r.Text, r.Metadata)
	}
	return id
}

// jobCall runs job_output or job_kill.
func jobCall(t *testing.T, s *tools.Session, tool tools.Tool, args map[string]any) tools.Result {
	t.Helper()
	raw, _ := json.Marshal(args)
	r, err := tool.Run(t.Context(), s, raw)
	if err != nil {
		t.Fatalf("%s returned a Go error: %v", tool.Spec().Name, err)
	}
	return r
}

// readJobUntil reads the job's new output (waiting for it) until the
// whole of it holds want or the job has ended, and returns it all.
func readJobUntil(t *testing.T, s *tools.Session, id, want string) (string, tools.Result) {
	t.Helper()
	var all strings.Builder
	for range 100 {
		r := jobCall(t, s, JobOutput(), map[string]any{"job_id": id, "wait": 10})
		_, body, _ := strings.Cut(r.Text, "\n")
		if body != "(no new output)\n" {
			all.WriteString(body)
		}
		if strings.Contains(all.String(), want) || r.Metadata["running"] == false {
			return all.String(), r
		}
	}
	t.Fatalf("job %s never wrote %q; got %q", id, want, all.String())
	return "", tools.Result{}
}

// A job runs on its own; job_output returns what is new since the last
// read; job_kill stops it and everything it started.
func TestJobOutputAndKill(t *testing.T) {
	t.Parallel()
	s := newTestSession(t)
	id := startTestJob(t, s, "echo $$ > job.pid; sleep 1000 & echo $! >> job.pid; for i in 1 2 3; do echo line $i; done; echo ready; exec sleep 1001")
	if id != "j1" {
		t.Errorf("first job is %s", id)
	}
	out, r := readJobUntil(t, s, id, "ready\n")
	if out != "line 1\nline 2\nline 3\nready\n" || !strings.HasPrefix(r.Text, "[job j1: running]\n") {
		t.Errorf("output %q, last result %q", out, r.Text)
	}
	if r := jobCall(t, s, JobOutput(), map[string]any{"job_id": id}); r.Text != "[job j1: running]\n(no new output)\n" {
		t.Errorf("nothing new: %q", r.Text)
	}
	if r := jobCall(t, s, JobOutput(), map[string]any{"job_id": id, "tail": 2}); r.Text != "[job j1: running; last 2 lines of 27 bytes of output]\nline 3\nready\n" {
		t.Errorf("tail: %q", r.Text)
	}
	note := JobsNote(s)
	if !strings.Contains(note, "- j1 `echo $$ > job.pid; sleep 1000 &") || !strings.Contains(note, "(running, 0 bytes of new output)") {
		t.Errorf("note: %q", note)
	}
	r = jobCall(t, s, JobKill(), map[string]any{"job_id": id})
	if r.Text != "[job j1: stopped by job_kill, exit: 143]\n" {
		t.Errorf("kill: %q", r.Text)
	}
	for _, pid := range shellPids(t, s, "job.pid") {
		shellEventually(t, fmt.Sprintf("job pid %d to die", pid), func() bool { return shellPidDead(pid) })
	}
	if r := jobCall(t, s, JobKill(), map[string]any{"job_id": id}); r.Text != "[job j1 had already ended: stopped by job_kill, exit: 143]\n" {
		t.Errorf("second kill: %q", r.Text)
	}
	if note := JobsNote(s); note != "" {
		t.Errorf("a stopped job whose end was shown is still in the note: %q", note)
	}
}

// A job that ends by itself reports its status once its output is read;
// until then the note lists it.
func TestJobExits(t *testing.T) {
	t.Parallel()
	s := newTestSession(t)
	id := startTestJob(t, s, "echo partial; printf 'no newline'; exit 3")
	out, r := readJobUntil(t, s, id, "no newline")
	for r.Metadata["running"] != false {
		r = jobCall(t, s, JobOutput(), map[string]any{"job_id": id, "wait": 10})
	}
	if out != "partial\nno newline" || !strings.HasPrefix(r.Text, "[job j1: exited, exit: 3]\n") || r.Metadata["exit_code"] != 3 {
		t.Errorf("output %q, last %q %v", out, r.Text, r.Metadata)
	}
	if note := JobsNote(s); note != "" {
		t.Errorf("note after the end was read: %q", note)
	}
	// An exited job with news is listed until read.
	id2 := startTestJob(t, s, "echo quick")
	shellEventually(t, "the job to end", func() bool {
		j, _ := shellsOf(s).jobs.get(NameJobOutput, id2)
		return j.hasExited()
	})
	if note := JobsNote(s); !strings.Contains(note, "- j2 `echo quick` (exited, exit: 0, 6 bytes of new output)") {
		t.Errorf("note: %q", note)
	}
}

func TestJobBadInput(t *testing.T) {
	t.Parallel()
	s := newTestSession(t)
	if r := jobCall(t, s, JobOutput(), map[string]any{"job_id": "j7"}); !r.IsError || !strings.Contains(r.Text, `no job "j7": you have no background jobs`) {
		t.Errorf("no jobs: %q", r.Text)
	}
	startTestJob(t, s, "sleep 1000")
	for _, tool := range []tools.Tool{JobOutput(), JobKill()} {
		if r := jobCall(t, s, tool, map[string]any{"job_id": "j7"}); !r.IsError || !strings.Contains(r.Text, `no job "j7"; your jobs: j1 (running)`) {
			t.Errorf("%s unknown: %q", tool.Spec().Name, r.Text)
		}
		if r := jobCall(t, s, tool, map[string]any{}); !r.IsError || !strings.Contains(r.Text, `"job_id" is required`) {
			t.Errorf("%s missing id: %q", tool.Spec().Name, r.Text)
		}
	}
	if r := jobCall(t, s, JobOutput(), map[string]any{"job_id": "j1", "wait": 301}); !r.IsError || !strings.Contains(r.Text, "at most 300") {
		t.Errorf("wait bound: %q", r.Text)
	}
	for range maxRunningJobs - 1 {
		startTestJob(t, s, "sleep 1000")
	}
	r := shellCall(t.Context(), t, s, map[string]any{"command": "sleep 1000", "background": true})
	if !r.IsError || !strings.Contains(r.Text, "8 jobs are already running") {
		t.Errorf("cap: %q", r.Text)
	}
}

// A job's timeout stops it; Close stops every job still running.
func TestJobTimeoutAndClose(t *testing.T) {
	t.Parallel()
	s := newTestSession(t)
	id := startTestJob(t, s, "echo up; exec sleep 1000", "timeout", 1)
	_, r := readJobUntil(t, s, id, "never")
	if !strings.HasPrefix(r.Text, "[job j1: stopped by timeout, exit: 143]\n") {
		t.Errorf("timeout: %q", r.Text)
	}
	startTestJob(t, s, "echo $$ > a.pid; (trap '' TERM; exec sleep 1001) & echo $! >> a.pid; exec sleep 1000")
	shellEventually(t, "the job to write its pids", func() bool {
		b, _ := os.ReadFile(filepath.Join(s.Workspace.Root(), "a.pid"))
		return len(strings.Fields(string(b))) == 2
	})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for _, pid := range shellPids(t, s, "a.pid") {
		if !shellPidDead(pid) {
			t.Errorf("pid %d outlived Close", pid)
		}
	}
	if r := shellCall(t.Context(), t, s, map[string]any{"command": "true", "background": true}); !r.IsError || !strings.Contains(r.Text, "has ended") {
		t.Errorf("after Close: %q", r.Text)
	}
}

// Output beyond the result cap is cut (head and tail kept) and spilled,
// like any tool's; beyond the job's buffer it says how much was dropped.
func TestJobLargeOutputSpills(t *testing.T) {
	t.Parallel()
	s := newTestSession(t)
	e := &tools.Executor{Tools: tools.NewRegistry(Shell(), JobOutput(), JobKill()), Session: s}
	rs := e.Run(t.Context(), []messages.ToolCall{{ID: "c1", Name: NameShell, Args: json.RawMessage(`{"command":"seq 1 1000000; echo END","background":true}`)}})
	if rs[0].IsError {
		t.Fatal(rs[0].Text)
	}
	shellEventually(t, "the job to end", func() bool {
		j, _ := shellsOf(s).jobs.get(NameJobOutput, "j1")
		return j.hasExited()
	})
	r := e.Run(t.Context(), []messages.ToolCall{{ID: "c2", Name: NameJobOutput, Args: json.RawMessage(`{"job_id":"j1"}`)}})[0]
	if r.IsError || !r.Truncated || r.SpillPath == "" {
		t.Fatalf("want a truncated, spilled result: error=%v truncated=%v spill=%q", r.IsError, r.Truncated, r.SpillPath)
	}
	if !strings.HasPrefix(r.Text, "[job j1: exited, exit: 0]\n1\n2\n") || !strings.Contains(r.Text, "999999\n1000000\nEND\n") {
		t.Errorf("head or tail lost: %.100q ... %q", r.Text, r.Text[max(0, len(r.Text)-300):])
	}
	spilled, err := os.ReadFile(r.SpillPath)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(spilled), "bytes of output dropped") {
		t.Error("the spilled text does not say what the job's buffer dropped")
	}
}
