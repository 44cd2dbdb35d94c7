package actors_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/llm/llmtest"
)

// An agent uses a shell session (state carries over between its rounds)
// and a background job: each model request while the job lives carries a
// note of it (not kept in the conversation), and the job dies when the
// agent ends.
func TestAgentShellSessionAndBackgroundJob(t *testing.T) {
	ws := workspace(t, map[string]string{"sub/keep.txt": "x"})
	srv := llmtest.New(script(kind("root",
		calls(tc("submit_plan", `{"summary":"Start a server and check the session.","steps":[{"title":"run it"}]}`)),
		calls(tc("shell", `{"session":"dev","command":"cd sub && export GREETING=hi"}`),
			tc("shell", `{"background":true,"command":"echo $$ > job.pid; echo serving; exec sleep 1000"}`)),
		calls(tc("shell", `{"session":"dev","command":"pwd; echo $GREETING"}`),
			tc("job_output", `{"job_id":"j1","wait":10}`)),
		calls(tc("job_output", `{"job_id":"j9"}`)),
		say("The server runs and the session kept its state."),
	)))
	defer srv.Close()
	res := run(t, options(t, srv, ws, "start the server", &actors.Recorder{}))
	if res.Status != actors.StatusCompleted || res.Reason != actors.ReasonFinished {
		t.Fatalf("result %+v", res.AgentResult)
	}
	reqs := requestsOf(srv, "root")
	if len(reqs) != 5 {
		t.Fatalf("%d requests", len(reqs))
	}
	if !has(reqs[1].Tools, "job_output") || !has(reqs[1].Tools, "job_kill") {
		t.Errorf("execution tools lack the job tools: %s", toolNames(reqs[1]))
	}
	notes := func(r llmtest.Recorded) (n int, last string) {
		for _, m := range r.Messages {
			if strings.HasPrefix(m.Content, "[background jobs]") {
				n++
				last = m.Content
			}
		}
		return n, last
	}
	if n, _ := notes(reqs[1]); n != 0 {
		t.Errorf("a jobs note before any job: %d", n)
	}
	for _, i := range []int{2, 3, 4} {
		n, note := notes(reqs[i])
		if n != 1 || !strings.Contains(note, "- j1 `echo $$ > job.pid; echo serving; exec sleep 1000` (running, ") {
			t.Errorf("request %d: %d notes, %q", i+1, n, note)
		}
		if last := reqs[i].Messages[len(reqs[i].Messages)-1]; last.Content != note {
			t.Errorf("request %d: the note is not the last message", i+1)
		}
	}
	results := map[string]string{}
	for _, m := range reqs[3].Messages {
		if m.Role == "tool" {
			results[m.ToolCallID] = m.Content
		}
	}
	var session, output string
	for _, m := range reqs[3].Messages {
		for _, c := range m.ToolCalls {
			switch {
			case c.Name == "shell" && strings.Contains(string(c.Args), "GREETING\""):
				session = results[c.ID]
			case c.Name == "job_output":
				output = results[c.ID]
			}
		}
	}
	if want := fmt.Sprintf("[exit: 0]\n%s/sub\nhi\n", realPath(t, ws)); session != want {
		t.Errorf("session result %q, want %q", session, want)
	}
	if !strings.HasPrefix(output, "[job j1: running]\n") || !strings.Contains(output, "serving\n") {
		t.Errorf("job_output result %q", output)
	}
	last := reqs[4].Messages
	if bad := last[len(last)-2].Content; !strings.Contains(bad, `no job "j9"; your jobs: j1 (running)`) {
		t.Errorf("unknown job: %q", bad)
	}
	b, err := os.ReadFile(filepath.Join(ws, "job.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	// The agent's result is delivered after its session is closed.
	if err := syscall.Kill(pid, 0); err == nil && !zombie(pid) {
		t.Errorf("job %d outlived its agent", pid)
	}
}

func realPath(t *testing.T, p string) string {
	t.Helper()
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// zombie reports whether pid has exited and waits to be reaped.
func zombie(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && (s[i+2] == 'Z' || s[i+2] == 'X')
}

// Cancelling a run stops the agent's running session command, its
// sessions and its background jobs, with everything they started.
func TestCancelledRunStopsSessionsAndJobs(t *testing.T) {
	ws := workspace(t, nil)
	srv := llmtest.New(script(kind("root",
		calls(tc("shell", `{"background":true,"command":"sleep 1000 & echo $! > job.pid; echo $$ >> job.pid; exec sleep 1001"}`)),
		calls(tc("shell", `{"session":"s","command":"echo $$ > session.pid; sleep 1002"}`)),
		say("never"))))
	defer srv.Close()
	o := options(t, srv, ws, "sleep", &actors.Recorder{})
	o.Settings = noPlan()
	team, err := actors.Start(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	pids := func(name string) []int {
		b, _ := os.ReadFile(filepath.Join(ws, name))
		var out []int
		for _, f := range strings.Fields(string(b)) {
			if p, err := strconv.Atoi(f); err == nil {
				out = append(out, p)
			}
		}
		return out
	}
	checkFor(t, 30*time.Second, func() error {
		if len(pids("job.pid")) != 2 || len(pids("session.pid")) != 1 {
			return fmt.Errorf("pids not written yet")
		}
		return nil
	})
	team.Cancel()
	res, err := team.Wait(t.Context())
	if err != nil || res.Status != actors.StatusCancelled {
		t.Fatalf("%+v %v", res, err)
	}
	for _, p := range append(pids("job.pid"), pids("session.pid")...) {
		if err := syscall.Kill(p, 0); err == nil && !zombie(p) {
			t.Errorf("pid %d outlived the cancelled run", p)
		}
	}
}
