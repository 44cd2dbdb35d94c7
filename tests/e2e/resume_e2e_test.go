package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/troupe-ai/troupe/llm/llmtest"
)

// appendCalls are n shell calls, the i-th appending the line i to out.txt;
// the one numbered block, if any, then waits on a FIFO nobody opens for
// writing, so it is still running when the run is killed.
func appendCalls(n, block int) []llmtest.ToolCall {
	calls := make([]llmtest.ToolCall, n)
	for i := range calls {
		cmd := fmt.Sprintf("echo %d >> out.txt", i+1)
		if i+1 == block {
			cmd += " && read x < block.fifo"
		}
		args, _ := json.Marshal(map[string]string{"command": cmd})
		calls[i] = llmtest.ToolCall{Name: "shell", Args: args}
	}
	return calls
}

// lineCounts counts each line of out.txt.
func lineCounts(t *testing.T, ws string) map[string]int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(ws, "out.txt"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	counts := map[string]int{}
	for _, l := range strings.Fields(string(b)) {
		counts[l]++
	}
	return counts
}

// waitLines waits until out.txt holds at least n lines.
func waitLines(t *testing.T, p *proc, ws string, n int) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		total := 0
		for _, c := range lineCounts(t, ws) {
			total += c
		}
		if total >= n {
			return
		}
		select {
		case <-p.done:
			t.Fatalf("the run ended before out.txt had %d lines:\n%s", n, p.errs())
		case <-time.After(5 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("out.txt has %d lines after a minute, want %d:\n%s", total, n, p.errs())
		}
	}
}

// A run killed with SIGKILL in the middle of a tool step (commands 1-3
// done, command 4 running) resumes without running a completed command
// again: 1-3 keep their recorded results, 4 is reported interrupted and
// not run twice, 5-8 run once. The checkpoints go once the run succeeds.
func TestResumeAfterSIGKILLRunsNothingTwice(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process")
	}
	srv := llmtest.New(llmtest.Script{Agents: []llmtest.AgentScript{{Match: llmtest.Matcher{Kind: "root"},
		Turns: []llmtest.Turn{{ToolCalls: appendCalls(8, 4)}, {Text: "appended"}}}}})
	defer srv.Close()
	ws := repo(t, "")
	must(t, syscall.Mkfifo(filepath.Join(ws, "block.fifo"), 0o600))
	p := start(t, bin.orchestrator, modelEnv(srv), "run", "--workspace", ws, "--quiet", "append eight lines")
	waitLines(t, p, ws, 4) // 1-3 done, 4 blocked on the FIFO
	must(t, p.cmd.Process.Kill())
	p.wait(time.Minute)

	r := start(t, bin.orchestrator, modelEnv(srv), "resume", "--workspace", ws, "--json")
	res := runJSON(t, r)
	if res.Status != "completed" || res.Text != "appended" {
		t.Fatalf("resumed run: %+v\n%s", res, r.errs())
	}
	counts := lineCounts(t, ws)
	for i := 1; i <= 8; i++ {
		if c := counts[fmt.Sprint(i)]; c != 1 {
			t.Errorf("command %d ran %d times, want once (out.txt: %v)", i, c, counts)
		}
	}
	reqs := srv.Requests()
	results := toolResultsOf(reqs[len(reqs)-1])
	if len(results) != 8 {
		t.Fatalf("the resumed model request has %d tool results, want 8: %q", len(results), results)
	}
	for i, res := range results {
		want := "[exit: 0]"
		if i == 3 {
			want = "shell was interrupted"
		}
		if !strings.Contains(res, want) {
			t.Errorf("result %d = %q, want %q", i+1, res, want)
		}
	}
	if _, err := os.Stat(filepath.Join(stateDirOf(t, ws), "runs", res.Run)); !os.IsNotExist(err) {
		t.Errorf("the succeeded run's checkpoints are still there: %v", err)
	}
}

// The probe of issue 10: thirty appends in one turn, SIGKILL at whatever
// point the run has reached once ten lines are written, then resume. No
// command runs twice; at most the one cut off mid-run is missing.
func TestResumeAfterSIGKILLProbe(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process")
	}
	srv := llmtest.New(llmtest.Script{Agents: []llmtest.AgentScript{{Match: llmtest.Matcher{Kind: "root"},
		Turns: []llmtest.Turn{{ToolCalls: appendCalls(30, 0)}, {Text: "appended"}}}}})
	defer srv.Close()
	ws := repo(t, "")
	p := start(t, bin.orchestrator, modelEnv(srv), "run", "--workspace", ws, "--quiet", "append thirty lines")
	waitLines(t, p, ws, 10)
	must(t, p.cmd.Process.Kill())
	p.wait(time.Minute)
	killedAt := len(lineCounts(t, ws))

	r := start(t, bin.orchestrator, modelEnv(srv), "resume", "--workspace", ws, "--json")
	if res := runJSON(t, r); res.Status != "completed" {
		t.Fatalf("resumed run: %+v", res)
	}
	counts := lineCounts(t, ws)
	missing := 0
	for i := 1; i <= 30; i++ {
		switch c := counts[fmt.Sprint(i)]; {
		case c > 1:
			t.Errorf("command %d ran %d times", i, c)
		case c == 0:
			missing++
		}
	}
	if missing > 1 {
		t.Errorf("%d commands never ran; at most the one cut off may be missing (out.txt: %v)", missing, counts)
	}
	t.Logf("killed with %d of 30 lines written; after resume %d lines, %d missing (the call cut off is reported interrupted)",
		killedAt, len(counts), missing)
}

// toolResultsOf are the tool messages after the last assistant message.
func toolResultsOf(r llmtest.Recorded) []string {
	var out []string
	for _, m := range r.Messages {
		switch m.Role {
		case "assistant":
			out = nil
		case "tool":
			out = append(out, m.Content)
		}
	}
	return out
}
