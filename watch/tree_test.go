package watch

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/llm"
	"github.com/troupe-ai/troupe/llm/llmtest"
	"github.com/troupe-ai/troupe/messages"
)

// recordRun runs a real scripted team (a root and two explore agents) and
// returns its events.
func recordRun(t *testing.T) []messages.Event {
	t.Helper()
	srv := llmtest.New(llmtest.Script{Agents: []llmtest.AgentScript{
		{Match: llmtest.Matcher{Kind: "root"}, Turns: []llmtest.Turn{
			{ToolCalls: []llmtest.ToolCall{
				{Name: "delegate", Args: json.RawMessage(`{"type":"explore","task":"where is main?"}`)},
				{Name: "delegate", Args: json.RawMessage(`{"type":"explore","task":"where are tests?"}`)}}},
			{Text: "done"}}},
		{Match: llmtest.Matcher{Kind: "explore"}, Repeat: true, Turns: []llmtest.Turn{
			{ToolCalls: []llmtest.ToolCall{{Name: "grep", Args: json.RawMessage(`{"pattern":"func"}`)}}},
			{Text: "main.go:1"}}},
	}})
	defer srv.Close()
	client, err := llm.NewClient(llm.Config{BaseURL: srv.URL(), Model: "big", Stream: true,
		Pricing: llm.Pricing{"big": {Input: 1, Output: 2}, "small": {Input: 0.1, Output: 0.2}}}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	rec := &actors.Recorder{}
	res, err := actors.Run(t.Context(), actors.Options{Run: "run-1234567890", Workspace: t.TempDir(), Task: "find main",
		Client: client, Models: actors.Models{Default: "big", Cheap: "small"}, Events: rec, Log: zerolog.Nop()})
	if err != nil || res.Status != actors.StatusCompleted {
		t.Fatalf("run: %+v %v", res, err)
	}
	return rec.Events()
}

// The tree built from a real run's events has the run, the root and its
// two explore children, finished, with their tokens and cost.
func TestTreeFromRealRun(t *testing.T) {
	evs := recordRun(t)
	tr := NewTree(5)
	for i, ev := range evs {
		tr.Apply(ev)
		if i < len(evs)-1 && tr.AllFinished() {
			t.Fatal("finished before run.finished")
		}
	}
	if !tr.AllFinished() || !tr.Finished("run-1234567890") {
		t.Fatal("run not finished after run.finished")
	}
	runs := tr.Runs()
	if len(runs) != 1 {
		t.Fatalf("%d runs", len(runs))
	}
	r := runs[0]
	root := r.Agents["root"]
	if root == nil || root.Status != StatusFinished || len(root.Children) != 2 || root.TokensIn == 0 || root.CostUSD == 0 {
		t.Fatalf("root: %+v", root)
	}
	for _, c := range root.Children {
		a := r.Agents[c]
		if a.Kind != "explore" || a.Status != StatusFinished || a.Round != 2 || a.Model != "small" || a.TokensOut == 0 ||
			len(a.Findings) != 1 || a.Findings[0] != "main.go:1" {
			t.Errorf("explore agent: %+v", a)
		}
	}
	if r.Gaps != 0 || r.Task != "find main" || r.Tokens == 0 {
		t.Errorf("run: gaps %d task %q tokens %d", r.Gaps, r.Task, r.Tokens)
	}
	ids, depth := r.Ordered()
	if ids[0] != "root" || depth[ids[1]] != 1 || len(ids) != 3 {
		t.Errorf("order %v %v", ids, depth)
	}
	if tail := tr.Tail(); len(tail) != 5 || !strings.Contains(tail[len(tail)-1], "run run-1234 finished") {
		t.Errorf("tail %q", tail)
	}
}

// A missing event shows as a gap; forged or odd events (no parent, a
// cycle, unknown types) neither crash nor hide the rest.
func TestTreeGapsAndOddEvents(t *testing.T) {
	tr := NewTree(3)
	at := time.Now()
	mk := func(agent, parent, typ string, seq uint64, data any) messages.Event {
		ev, _ := messages.NewEvent("r1", agent, typ, seq, data)
		ev.Parent, ev.Time = parent, at
		return ev
	}
	tr.Apply(mk("a", "b", messages.EvtAgentStarted, 1, messages.AgentStarted{Task: "x"}))
	tr.Apply(mk("b", "a", messages.EvtAgentStarted, 1, messages.AgentStarted{Task: "y"})) // a cycle
	tr.Apply(mk("a", "b", messages.EvtRoundStarted, 3, messages.RoundStarted{Round: 1}))  // seq 2 missed
	tr.Apply(mk("a", "b", "some.future.type", 4, map[string]any{"x": 1}))
	tr.Apply(mk("a", "b", messages.EvtToolFinished, 5, "not an object"))
	r := tr.Runs()[0]
	if r.Gaps != 1 {
		t.Errorf("gaps %d, want 1", r.Gaps)
	}
	if ids, _ := r.Ordered(); len(ids) != 2 {
		t.Errorf("ordered %v", ids)
	}
	if lines := Frame(tr, at, 80, false); len(lines) < 3 {
		t.Errorf("frame %q", lines)
	}
}

// Node events show in the nodes line.
func TestTreeNodes(t *testing.T) {
	tr := NewTree(10)
	ev, _ := messages.NewEvent("nodes", "n1", messages.EvtNodeJoined, 1, messages.NodeJoined{Node: "n1", Name: "box-1", Kinds: []string{"explore"}, Slots: 3})
	tr.Apply(ev)
	ev2, _ := messages.NewEvent("nodes", "n1", messages.EvtNodeLeft, 2, messages.NodeLeft{Node: "n1", Name: "box-1", Reason: "drained"})
	tr.Apply(ev2)
	lines := strings.Join(Frame(tr, time.Now(), 120, false), "\n")
	if !strings.Contains(lines, "nodes: box-1 (explore ×3) left") || !strings.Contains(lines, "node box-1 joined") {
		t.Errorf("frame:\n%s", lines)
	}
	if tr.AllFinished() {
		t.Error("no run seen, yet all finished")
	}
}

// The frame of a finished run: header with totals, agents indented under
// their parent, no colour codes without Color, none wider than asked.
func TestFrame(t *testing.T) {
	tr := NewTree(4)
	for _, ev := range recordRun(t) {
		tr.Apply(ev)
	}
	lines := Frame(tr, time.Now(), 90, false)
	text := strings.Join(lines, "\n")
	if !strings.HasPrefix(lines[0], "run run-1234 · finished · 3 agents · ") || strings.Contains(text, "\x1b[") {
		t.Errorf("frame:\n%s", text)
	}
	for _, l := range lines {
		if n := len([]rune(l)); n > 90 {
			t.Errorf("line of %d runes: %q", n, l)
		}
	}
	if !strings.Contains(text, "\n  root ") || !strings.Contains(text, "\n    explore-") {
		t.Errorf("indentation:\n%s", text)
	}
	colored := strings.Join(Frame(tr, time.Now(), 90, true), "\n")
	if !strings.Contains(colored, ansiGreen+"finished"+ansiReset) {
		t.Errorf("no colour on a terminal:\n%q", colored)
	}
	var b strings.Builder
	v := &View{W: &b, Width: 90}
	v.Draw(tr, time.Now())
	v.Draw(tr, time.Now())
	if !strings.Contains(b.String(), "\x1b["+itoa(len(lines))+"F\x1b[J") {
		t.Errorf("second draw does not replace the first: %q", b.String()[:80])
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
