package watch

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/troupe-ai/troupe/messages"
)

// stream builds events of one run.
type stream struct {
	t      *testing.T
	events []messages.Event
	seq    map[string]uint64
}

func (s *stream) add(agent, kind, typ string, data any) {
	s.t.Helper()
	if s.seq == nil {
		s.seq = map[string]uint64{}
	}
	s.seq[agent]++
	ev, err := messages.NewEvent("r1", agent, typ, s.seq[agent], data)
	if err != nil {
		s.t.Fatal(err)
	}
	ev.Kind = kind
	s.events = append(s.events, ev)
}

func (s *stream) call(agent, kind string, round int, id, tool, args string, parallel bool, fin messages.ToolFinished) {
	s.add(agent, kind, messages.EvtToolStarted, messages.ToolStarted{Round: round, CallID: id, Tool: tool, Args: json.RawMessage(args), Parallel: parallel})
	fin.Round, fin.CallID, fin.Tool = round, id, tool
	s.add(agent, kind, messages.EvtToolFinished, fin)
}

func share(t *testing.T, name string, got Share, count, of int64) {
	t.Helper()
	if got.Count != count || got.Of != of {
		t.Errorf("%s: %d of %d, want %d of %d", name, got.Count, got.Of, count, of)
		return
	}
	if of == 0 {
		if got.Share != nil {
			t.Errorf("%s: share %v of nothing", name, *got.Share)
		}
		return
	}
	if got.Share == nil || math.Abs(*got.Share-float64(count)/float64(of)) > 1e-12 {
		t.Errorf("%s: share %v, want %v", name, got.Share, float64(count)/float64(of))
	}
}

// Every metric on a hand-built run whose values are known.
func TestMetricsOfAHandBuiltRun(t *testing.T) {
	s := &stream{t: t}
	// root, round 1: two reads in parallel (one from the cache), a grep in
	// files mode (default) and one in content mode.
	s.add("root", "root", messages.EvtLLMResponse, messages.LLMResponse{Round: 1, TokensIn: 1000, TokensOut: 50, ContextTokens: 1000, ToolResultTokens: 0})
	s.call("root", "root", 1, "c1", "read_file", `{"path":"a"}`, true, messages.ToolFinished{Cacheable: true})
	s.call("root", "root", 1, "c2", "read_file", `{"path":"b"}`, true, messages.ToolFinished{Cacheable: true, Cached: true})
	s.call("root", "root", 1, "c3", "grep", `{"pattern":"x"}`, true, messages.ToolFinished{Cacheable: true})
	s.call("root", "root", 1, "c4", "grep", `{"pattern":"x","mode":"content"}`, true, messages.ToolFinished{Cacheable: true})
	// round 2: two shells, one a file operation, run one after the other;
	// a blind write and a write after a read.
	s.add("root", "root", messages.EvtLLMResponse, messages.LLMResponse{Round: 2, TokensIn: 2000, TokensOut: 100, ContextTokens: 2000, ToolResultTokens: 500})
	s.call("root", "root", 2, "c5", "shell", `{"command":"cat a.txt"}`, false, messages.ToolFinished{})
	s.call("root", "root", 2, "c6", "shell", `{"command":"go test ./..."}`, false, messages.ToolFinished{})
	s.call("root", "root", 3, "c7", "write_file", `{"path":"a","content":"x"}`, false, messages.ToolFinished{IsError: true, Metadata: map[string]any{"blind": true}})
	s.call("root", "root", 4, "c8", "edit_file", `{}`, false, messages.ToolFinished{Diff: "--- a/a\n"})
	s.add("root", "root", messages.EvtLLMResponse, messages.LLMResponse{Round: 3, TokensIn: 3000, TokensOut: 10, ContextTokens: 3000, ToolResultTokens: 1500})
	// An explore agent and a worker (one compaction).
	s.add("explore-1", "explore", messages.EvtLLMResponse, messages.LLMResponse{Round: 1, TokensIn: 300, TokensOut: 30, ContextTokens: 400, ToolResultTokens: 100})
	s.add("worker-1", "worker", messages.EvtLLMResponse, messages.LLMResponse{Round: 1, TokensIn: 600, TokensOut: 60})
	s.add("worker-1", "worker", messages.EvtContextCompacted, messages.ContextCompacted{TokensIn: 30, TokensOut: 10})
	s.add("worker-1", "worker", messages.EvtToolFinished, "not a payload") // ignored

	m := ComputeMetrics(s.events)
	share(t, "shell_file_ops", m.ShellFileOps, 1, 2)
	share(t, "grep_files_mode", m.GrepFilesMode, 1, 2)
	share(t, "blind_writes", m.BlindWrites, 1, 2)
	share(t, "cache_hits", m.CacheHits, 1, 4)
	share(t, "parallel_rounds", m.ParallelRounds, 1, 2) // round 1 (4 calls) yes, round 2 (2 shells) no; rounds 3, 4 have one call
	share(t, "explore_vs_worker", m.ExploreVsWorker, 330, 330+700)
	// Shares 0, 0.25, 0.5 (root) and 0.25 (explore): mean 0.25, max 0.5.
	if r := m.ToolResultShare; r.Rounds != 4 || r.Mean != 0.25 || r.Max != 0.5 {
		t.Errorf("tool_result_share %+v", r)
	}
	want := map[string]int64{"root": 1050 + 2100 + 3010, "explore": 330, "worker": 700}
	if len(m.TokensByKind) != len(want) {
		t.Errorf("tokens_by_kind %v, want %v", m.TokensByKind, want)
	}
	for k, v := range want {
		if m.TokensByKind[k] != v {
			t.Errorf("tokens_by_kind[%s] = %d, want %d", k, m.TokensByKind[k], v)
		}
	}
	// Applying events one by one gives the same; metrics are a snapshot.
	c := NewMetricsCollector()
	for _, ev := range s.events {
		c.Apply(ev)
	}
	a, _ := json.Marshal(c.Metrics())
	b, _ := json.Marshal(m)
	if string(a) != string(b) {
		t.Errorf("collector %s\ncompute %s", a, b)
	}
}

// No events: every share is absent, not zero.
func TestMetricsOfNothing(t *testing.T) {
	m := ComputeMetrics(nil)
	b, _ := json.Marshal(m)
	if string(b) != `{"shell_file_ops":{"count":0,"of":0},"grep_files_mode":{"count":0,"of":0},"blind_writes":{"count":0,"of":0},`+
		`"tool_result_share":{"rounds":0,"mean":0,"max":0},"cache_hits":{"count":0,"of":0},"parallel_rounds":{"count":0,"of":0},`+
		`"tokens_by_kind":{},"explore_vs_worker":{"count":0,"of":0},"rate_limits":{"waits":0,"waited_ms":0,"provider_429s":0,"overloaded":0}}` {
		t.Errorf("%s", b)
	}
}
