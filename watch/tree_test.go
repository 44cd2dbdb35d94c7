package watch

import (
	"encoding/json"
	"fmt"
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
	if r.Missed != 0 || r.Task != "find main" || r.Tokens == 0 {
		t.Errorf("run: missed %d task %q tokens %d", r.Missed, r.Task, r.Tokens)
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
	if r.Missed != 1 {
		t.Errorf("missed %d, want 1", r.Missed)
	}
	if ids, _ := r.Ordered(); len(ids) != 2 {
		t.Errorf("ordered %v", ids)
	}
	if lines := Frame(tr, at, Layout{Width: 80}); len(lines) < 3 {
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
	lines := strings.Join(Frame(tr, time.Now(), Layout{Width: 120}), "\n")
	if !strings.Contains(lines, "nodes: box-1 (explore ×3) left") || !strings.Contains(lines, "node box-1 joined") {
		t.Errorf("frame:\n%s", lines)
	}
	if tr.AllFinished() {
		t.Error("no run seen, yet all finished")
	}
}

// A node a run reported lost (node.left in the run, from its orchestrator
// as agent "nodes") shows as gone, and back when the run reports it
// heard from again; the run gains no agent and misses nothing.
func TestTreeLostNode(t *testing.T) {
	tr := NewTree(10)
	ev, _ := messages.NewEvent("nodes", "n1", messages.EvtNodeJoined, 1, messages.NodeJoined{Node: "n1", Name: "box-1", Kinds: []string{"explore"}, Slots: 3})
	tr.Apply(ev)
	start, _ := messages.NewEvent("r1", "run", messages.EvtRunStarted, 1, messages.RunStarted{Task: "find main"})
	tr.Apply(start)
	lost, _ := messages.NewEvent("r1", "nodes", messages.EvtNodeLeft, 1, messages.NodeLeft{Node: "n1", Name: "box-1", Reason: "lost"})
	lost.Kind, lost.Node = "node", "n1"
	tr.Apply(lost)
	lines := strings.Join(Frame(tr, time.Now(), Layout{Width: 120}), "\n")
	if !strings.Contains(lines, "nodes: box-1 (explore ×3) left") || !strings.Contains(lines, "node box-1 left (lost)") {
		t.Errorf("frame:\n%s", lines)
	}
	back, _ := messages.NewEvent("r1", "nodes", messages.EvtNodeJoined, 2, messages.NodeJoined{Node: "n1", Name: "box-1", Kinds: []string{"explore"}, Slots: 3})
	back.Kind, back.Node = "node", "n1"
	tr.Apply(back)
	if n := tr.Nodes(); len(n) != 1 || n[0].Left {
		t.Errorf("nodes after the return: %+v", n)
	}
	r := tr.Runs()[0]
	if len(r.Agents) != 0 || r.Missed != 0 {
		t.Errorf("run %s: agents %v, missed %d", r.ID, r.Agents, r.Missed)
	}
}

// The frame of a finished run: header with totals, agents indented under
// their parent, no colour codes without Color, none wider than asked.
func TestFrame(t *testing.T) {
	tr := NewTree(4)
	for _, ev := range recordRun(t) {
		tr.Apply(ev)
	}
	lines := Frame(tr, time.Now(), Layout{Width: 90})
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
	colored := strings.Join(Frame(tr, time.Now(), Layout{Width: 90, Color: true}), "\n")
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

// mkEvent is an event of run from agent with an envelope filled in.
func mkEvent(t *testing.T, run, agent, parent, kind, typ string, seq uint64, data any) messages.Event {
	t.Helper()
	ev, err := messages.NewEvent(run, agent, typ, seq, data)
	if err != nil {
		t.Fatal(err)
	}
	ev.Parent, ev.Kind = parent, kind
	return ev
}

// task.redelivered, emitted in a run by the node that got the task, is
// not an agent: it marks the agent it concerns and joins the event tail;
// node events anywhere join the nodes line.
func TestTaskAndNodeEventsAreNotAgents(t *testing.T) {
	tr := NewTree(10)
	tr.Apply(mkEvent(t, "r1", "root", "", "root", messages.EvtAgentStarted, 1, messages.AgentStarted{Task: "t"}))
	tr.Apply(mkEvent(t, "r1", "root", "", "root", messages.EvtAgentSpawned, 2, messages.AgentSpawned{Child: "explore-1", Kind: "explore", Placement: "remote"}))
	ev := mkEvent(t, "r1", "explore-1", "root", "explore", messages.EvtAgentStarted, 1, messages.AgentStarted{Task: "look"})
	ev.Node, ev.Attempt = "node-a", 1
	tr.Apply(ev)
	tr.Apply(mkEvent(t, "r1", "node-b", "", "node", messages.EvtTaskRedelivered, 1,
		messages.TaskRedelivered{Agent: "explore-1", Kind: "explore", Attempt: 2, Node: "node-b"}))
	tr.Apply(mkEvent(t, "r1", "node-b", "", "node", messages.EvtNodeJoined, 2,
		messages.NodeJoined{Node: "node-b", Name: "box-b", Kinds: []string{"explore"}, Slots: 2}))
	r := tr.Runs()[0]
	if len(r.Agents) != 2 || r.Agents["node-b"] != nil {
		t.Fatalf("agents %v: a node became an agent", r.Agents)
	}
	if a := r.Agents["explore-1"]; a.Redelivered != 1 || a.Attempt != 2 {
		t.Errorf("explore-1: redelivered %d attempt %d", a.Redelivered, a.Attempt)
	}
	text := strings.Join(Frame(tr, time.Now(), Layout{Width: 160}), "\n")
	for _, want := range []string{"· 2 agents ·", "redelivered ×1", "task explore-1 redelivered (attempt 2) to node-b", "nodes: box-b (explore ×2)"} {
		if !strings.Contains(text, want) {
			t.Errorf("frame lacks %q:\n%s", want, text)
		}
	}
	if r.Missed != 0 {
		t.Errorf("missed %d", r.Missed)
	}
}

// Events lost at the end of an agent's stream are counted once
// run.finished names each agent's last seq; gaps count every missed
// event, not one per gap.
func TestMissedTailEvents(t *testing.T) {
	tr := NewTree(0)
	tr.Apply(mkEvent(t, "r1", "run", "", "run", messages.EvtRunStarted, 1, messages.RunStarted{Task: "t"}))
	tr.Apply(mkEvent(t, "r1", "root", "", "root", messages.EvtAgentStarted, 1, nil))
	tr.Apply(mkEvent(t, "r1", "root", "", "root", messages.EvtRoundStarted, 4, messages.RoundStarted{Round: 1})) // 2, 3 missed
	tr.Apply(mkEvent(t, "r1", "run", "", "run", messages.EvtRunFinished, 2,
		messages.RunFinished{Status: "completed", LastSeq: map[string]uint64{"run": 2, "root": 9, "explore-9": 3}}))
	r := tr.Runs()[0]
	if r.Missed != 2+5+3 {
		t.Errorf("missed %d, want 10 (a gap of 2, root's last 5, explore-9's 3)", r.Missed)
	}
	if head := Frame(tr, time.Now(), Layout{})[0]; !strings.Contains(head, "· 10 missed") {
		t.Errorf("header %q", head)
	}
}

// bigTree is a run with a root, 30 finished explore agents and 30 running
// workers, and a finished earlier run, plus a long event tail.
func bigTree(t *testing.T) *Tree {
	tr := NewTree(8)
	tr.Apply(mkEvent(t, "r0", "run", "", "run", messages.EvtRunStarted, 1, messages.RunStarted{Task: "earlier"}))
	tr.Apply(mkEvent(t, "r0", "root", "", "root", messages.EvtAgentStarted, 1, nil))
	tr.Apply(mkEvent(t, "r0", "run", "", "run", messages.EvtRunFinished, 2, messages.RunFinished{Status: "completed"}))
	tr.Apply(mkEvent(t, "r1", "run", "", "run", messages.EvtRunStarted, 1, messages.RunStarted{Task: "now"}))
	seq := uint64(1)
	tr.Apply(mkEvent(t, "r1", "root", "", "root", messages.EvtAgentStarted, seq, nil))
	for i := range 60 {
		kind := "explore"
		if i >= 30 {
			kind = "worker"
		}
		id := fmt.Sprintf("%s-%02d", kind, i)
		seq++
		tr.Apply(mkEvent(t, "r1", "root", "", "root", messages.EvtAgentSpawned, seq, messages.AgentSpawned{Child: id, Kind: kind}))
		tr.Apply(mkEvent(t, "r1", id, "root", kind, messages.EvtAgentStarted, 1, messages.AgentStarted{Task: "x"}))
		if kind == "explore" {
			tr.Apply(mkEvent(t, "r1", id, "root", kind, messages.EvtAgentFinished, 2, messages.AgentEnded{Status: "completed"}))
		}
	}
	return tr
}

// A tree taller than the terminal gives way so that every frame fits in
// the rows it has: the tail shrinks, ended agents fold into a count,
// running agents beyond the room show as "… N more agents".
func TestFrameFitsTheRows(t *testing.T) {
	tr := bigTree(t)
	full := Frame(tr, time.Now(), Layout{Width: 100})
	if len(full) < 70 {
		t.Fatalf("the full frame has %d lines", len(full))
	}
	for h := 1; h <= len(full)+2; h++ {
		lines := Frame(tr, time.Now(), Layout{Width: 100, Height: h})
		if len(lines) > h {
			t.Fatalf("height %d: %d lines", h, len(lines))
		}
		for _, l := range lines {
			if Width(l) > 100 {
				t.Fatalf("height %d: a line of %d columns", h, Width(l))
			}
		}
	}
	text := strings.Join(Frame(tr, time.Now(), Layout{Width: 100, Height: 24}), "\n")
	for _, want := range []string{"run r1 · running · 61 agents", "  root ", "ended agents not shown", "more agents (", "run r0 · finished"} {
		if !strings.Contains(text, want) {
			t.Errorf("24-row frame lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "explore-0") {
		t.Errorf("finished explore agents still shown in 24 rows:\n%s", text)
	}
	if len(Frame(tr, time.Now(), Layout{Width: 100, Height: len(full)})) != len(full) {
		t.Error("a frame that fits was shortened")
	}
}

// The view asks for the terminal's size before every frame, so a resized
// terminal gets frames that fit; each redraw replaces exactly the lines
// of the last one. Paused, it draws nothing, and after Resume it draws
// below what was printed meanwhile instead of over it.
func TestViewSizeAndPause(t *testing.T) {
	tr := bigTree(t)
	var b strings.Builder
	cols, rows := 80, 30
	v := &View{W: &b, Size: func() (int, int) { return cols, rows }}
	v.Draw(tr, time.Now())
	first := strings.Count(b.String(), "\n")
	if first > rows-1 {
		t.Fatalf("first frame %d lines on %d rows", first, rows)
	}
	rows = 12
	b.Reset()
	v.Draw(tr, time.Now())
	out := b.String()
	if !strings.HasPrefix(out, fmt.Sprintf("\x1b[%dF\x1b[J", first)) || strings.Count(out, "\n") > 11 {
		t.Errorf("resized redraw: %q", out)
	}
	v.Pause()
	b.Reset()
	v.Draw(tr, time.Now())
	if b.Len() != 0 {
		t.Errorf("drew while paused: %q", b.String())
	}
	v.Resume()
	v.Draw(tr, time.Now())
	if strings.HasPrefix(b.String(), "\x1b[") {
		t.Errorf("the frame after a pause moves over what was printed: %q", b.String()[:20])
	}
}
