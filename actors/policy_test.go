package actors_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/llm/llmtest"
	"github.com/troupe-ai/troupe/messages"
	"github.com/troupe-ai/troupe/tools"
)

// Approval: deny refuses without running; ask goes to the approver (here
// the terminal approver reading a scripted terminal), which may say yes or no.
func TestApprovalPolicies(t *testing.T) {
	write := func(name string) llmtest.Turn {
		return calls(tc("write_file", fmt.Sprintf(`{"path":%q,"content":"x\n"}`, name)))
	}
	cases := []struct {
		policy, answer string
		wantFile       bool
		wantText       string
	}{
		{actors.PolicyDeny, "", false, "denied by this run's approval policy"},
		{actors.PolicyAsk, "y\n", true, "Wrote 1 lines to a.txt"},
		{actors.PolicyAsk, "n\n", false, "did not approve this write_file call (denied by the user)"},
		{actors.PolicyAuto, "", true, "Wrote 1 lines to a.txt"},
	}
	for _, c := range cases {
		t.Run(c.policy+strings.TrimSpace(c.answer), func(t *testing.T) {
			srv := llmtest.New(script(kind("root", write("a.txt"), say("ok"))))
			defer srv.Close()
			rec := &actors.Recorder{}
			ws := workspace(t, nil)
			o := options(t, srv, ws, "write", rec)
			o.Settings = noPlan()
			o.Settings.Approval = map[string]string{"write_file": c.policy}
			var prompt strings.Builder
			if c.answer != "" {
				o.Approver = &actors.TerminalApprover{In: strings.NewReader(c.answer), Out: &prompt}
			}
			run(t, o)
			_, err := os.Stat(filepath.Join(ws, "a.txt"))
			if (err == nil) != c.wantFile {
				t.Errorf("file written = %v, want %v", err == nil, c.wantFile)
			}
			if got := lastTool(srv.Requests()[1]); !strings.Contains(got, c.wantText) {
				t.Errorf("result %q, want %q", got, c.wantText)
			}
			if c.policy == actors.PolicyAsk {
				if len(rec.OfType(messages.EvtApprovalRequested)) != 1 || !strings.Contains(prompt.String(), "wants to run write_file") {
					t.Errorf("no approval.requested event or prompt: %q", prompt.String())
				}
			}
			if c.policy != actors.PolicyAuto && len(rec.OfType(messages.EvtApprovalDecided)) != 1 {
				t.Error("no approval.decided event")
			}
		})
	}
	// Headless (no approver): ask is a no.
	srv := llmtest.New(script(kind("root", write("b.txt"), say("ok"))))
	defer srv.Close()
	o := options(t, srv, workspace(t, nil), "write", &actors.Recorder{})
	o.Settings = noPlan()
	o.Settings.Approval = map[string]string{"write_file": actors.PolicyAsk}
	run(t, o)
	if got := lastTool(srv.Requests()[1]); !strings.Contains(got, "no approver (headless run)") {
		t.Errorf("headless ask: %q", got)
	}
}

// The run's tool-call limit ends agents like an exhausted token budget.
func TestToolCallLimitWrapsUp(t *testing.T) {
	think := calls(tc("think", `{"thought":"1"}`), tc("think", `{"thought":"2"}`))
	srv := llmtest.New(script(kind("root", think, say("stopped"))))
	defer srv.Close()
	o := options(t, srv, workspace(t, nil), "think", &actors.Recorder{})
	o.Settings = noPlan()
	o.Budget.ToolCalls = 2
	res := run(t, o)
	reqs := srv.Requests()
	last := reqs[len(reqs)-1].Messages
	if !strings.Contains(last[len(last)-1].Content, "token budget is exhausted") {
		t.Errorf("no wrap-up after the tool-call limit: %+v", last[len(last)-1])
	}
	if res.Text != "stopped" || res.Reason != actors.ReasonBudgetExhausted {
		t.Errorf("%+v", res.AgentResult)
	}
}

// A parent that finishes while a background child runs cancels it by
// default, or waits for it with on_parent_finish: wait.
func TestParentFinishWithBackgroundChild(t *testing.T) {
	for _, mode := range []string{"cancel", "wait"} {
		t.Run(mode, func(t *testing.T) {
			var srv *llmtest.Server
			rootDone := func() bool { return len(requestsOf(srv, "root")) >= 2 }
			srv = llmtest.New(script(
				kind("root", calls(delegate("explore", "slow look", true)), say("parent done")),
				kind("explore", llmtest.Turn{Dynamic: func(llmtest.Recorded) llmtest.Turn {
					if mode == "cancel" {
						return llmtest.Turn{Text: "late", Latency: llmtest.Duration(5 * time.Minute)}
					}
					for !rootDone() {
						<-time.After(time.Millisecond)
					}
					return say("child done")
				}}),
			))
			defer srv.Close()
			rec := &actors.Recorder{}
			o := options(t, srv, workspace(t, fixtureRepo), "bg", rec)
			o.Settings.OnParentFinish = mode
			res := run(t, o)
			if res.Text != "parent done" || res.Status != actors.StatusCompleted {
				t.Fatalf("%+v", res.AgentResult)
			}
			var child []messages.Event
			for _, ev := range rec.Events() {
				if ev.Kind == actors.KindExplore && (ev.Type == messages.EvtAgentFinished || ev.Type == messages.EvtAgentCancelled) {
					child = append(child, ev)
				}
			}
			want := map[string]string{"cancel": messages.EvtAgentCancelled, "wait": messages.EvtAgentFinished}[mode]
			if len(child) != 1 || child[0].Type != want {
				t.Errorf("child's final events %v, want one %s", child, want)
			}
			if b := res.Budget; b == nil || b.Slots != 0 {
				t.Errorf("leases left: %+v", b)
			}
		})
	}
}

// In the planning phase a mutating tool is refused with the way out.
func TestPlanningPhaseRefusalSaysHowToUnlock(t *testing.T) {
	srv := llmtest.New(script(kind("root", calls(tc("write_file", `{"path":"x.txt","content":"x"}`)), say("ok"))))
	defer srv.Close()
	run(t, options(t, srv, workspace(t, nil), "write", &actors.Recorder{}))
	got := lastTool(srv.Requests()[1])
	if !strings.Contains(got, `tool "write_file" is not allowed for root agents`) || !strings.Contains(got, "call submit_plan to get the rest of your tools") {
		t.Errorf("refusal %q", got)
	}
}

// A delegate call is approved like what it spawns: a worker (which may edit
// files) follows the strictest policy of its mutating tools, or the one set
// for delegate; an explore agent (read-only) needs no approval.
func TestDelegateApprovalFollowsTheKind(t *testing.T) {
	for _, c := range []struct {
		name     string
		approval map[string]string
		typ      string
		refused  bool
	}{
		{"worker, shell ask", map[string]string{"shell": actors.PolicyAsk}, "worker", true},
		{"worker, delegate deny", map[string]string{"delegate": actors.PolicyDeny}, "worker", true},
		{"worker, auto", nil, "worker", false},
		{"explore, shell ask", map[string]string{"shell": actors.PolicyAsk}, "explore", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := llmtest.New(script(kind("root", calls(delegate(c.typ, "do it", false)), say("ok")),
				kind("worker", say("worked")), kind("explore", say("explored"))))
			defer srv.Close()
			o := options(t, srv, workspace(t, nil), "t", &actors.Recorder{})
			o.Settings = noPlan()
			o.Settings.Approval = c.approval
			run(t, o) // headless: ask is a no
			got := lastTool(srv.Requests()[len(srv.Requests())-1])
			if refused := strings.Contains(got, "did not approve") || strings.Contains(got, "denied by this run's approval policy"); refused != c.refused {
				t.Errorf("refused = %v, want %v: %q", refused, c.refused, got)
			}
		})
	}
}

// Two tools of one name (an extra tool shadowing a built-in) are an error
// from Start, not a panic.
func TestDuplicateExtraToolIsAnError(t *testing.T) {
	srv := llmtest.New(script(kind("root", say("ok"))))
	defer srv.Close()
	o := options(t, srv, workspace(t, nil), "t", &actors.Recorder{})
	o.ExtraTools = []tools.Tool{tools.Think()}
	if _, err := actors.Start(t.Context(), o); err == nil || !strings.Contains(err.Error(), `two tools are named "think"`) {
		t.Errorf("err %v", err)
	}
}

// ask_user puts the question to the terminal (a numbered choice picks
// it); with nobody to ask it says so, and the agent goes on.
func TestAskUser(t *testing.T) {
	ask := calls(tc("ask_user", `{"question":"Which color?","choices":["red","blue"]}`))
	srv := llmtest.New(script(kind("root", ask, say("ok"))))
	defer srv.Close()
	o := options(t, srv, workspace(t, nil), "t", &actors.Recorder{})
	o.Settings = noPlan()
	var out strings.Builder
	o.Approver = &actors.TerminalApprover{In: strings.NewReader("2\n"), Out: &out}
	run(t, o)
	if got := lastTool(srv.Requests()[1]); got != "The user answered: blue" {
		t.Errorf("answer %q", got)
	}
	if !strings.Contains(out.String(), "asks: Which color?") || !strings.Contains(out.String(), "2. blue") {
		t.Errorf("prompt %q", out.String())
	}

	srv2 := llmtest.New(script(kind("root", ask, say("ok"))))
	defer srv2.Close()
	o = options(t, srv2, workspace(t, nil), "t", &actors.Recorder{})
	o.Settings = noPlan()
	run(t, o) // headless
	if got := lastTool(srv2.Requests()[1]); !strings.Contains(got, "nobody can answer questions in this run") {
		t.Errorf("headless: %q", got)
	}
}
