package actors_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/actors/convo"
	"github.com/troupe-ai/troupe/llm"
	"github.com/troupe-ai/troupe/llm/llmtest"
	"github.com/troupe-ai/troupe/messages"
)

func fileOf(lines, width int, tag string) string {
	var b strings.Builder
	for i := range lines {
		fmt.Fprintf(&b, "%s line %04d %s\n", tag, i, strings.Repeat("x", width))
	}
	return b.String()
}

// toLLM converts what the server recorded back into messages, to check
// the pairing rules providers enforce.
func toLLM(rms []llmtest.RecordedMessage) []llm.Message {
	out := make([]llm.Message, len(rms))
	for i, m := range rms {
		out[i] = llm.Message{Role: llm.Role(m.Role), Content: m.Content, ToolCallID: m.ToolCallID, Name: m.Name}
		for _, c := range m.ToolCalls {
			out[i].ToolCalls = append(out[i].ToolCalls, messages.ToolCall{ID: c.ID, Name: c.Name, Args: c.Args})
		}
	}
	return out
}

// A small context window forces eviction of old tool results, then a
// compaction with a side request; no request ever orphans a tool message.
func TestEvictionThenCompaction(t *testing.T) {
	files := map[string]string{"big.txt": fileOf(220, 30, "big")}
	var turns []llmtest.Turn
	for i := 1; i <= 5; i++ {
		name := fmt.Sprintf("f%d.txt", i)
		files[name] = fileOf(30, 30, name)
		turns = append(turns, calls(tc("read_file", fmt.Sprintf(`{"path":%q}`, name))))
	}
	// Round 6's medium read pushes the context over 80 %: eviction of the
	// old results alone brings it back. Round 7's big read cannot be fixed
	// by eviction: compaction follows.
	files["medium.txt"] = fileOf(115, 30, "medium")
	turns = append(turns, calls(tc("read_file", `{"path":"medium.txt"}`)), calls(tc("read_file", `{"path":"big.txt"}`)),
		calls(tc("think", `{"thought":"enough"}`)), say("read them all"))
	srv := llmtest.New(script(kind("root", turns...),
		kind(actors.SummarizerKind, say("Read f1..f3: each holds 30 numbered lines; nothing else found."))))
	defer srv.Close()
	rec := &actors.Recorder{}
	o := options(t, srv, workspace(t, files), "read the files", rec)
	o.Settings = noPlan()
	o.Settings.RecentMessages = 4
	o.Models.Window = func(string) int { return 5000 }
	res := run(t, o)
	if res.Status != actors.StatusCompleted || res.Text != "read them all" {
		t.Fatalf("result %+v", res.AgentResult)
	}
	roots := requestsOf(srv, "root")
	cleared, summarized := -1, -1
	for i, r := range roots {
		if err := convo.ValidatePairs(toLLM(r.Messages)); err != nil {
			t.Errorf("request %d breaks tool pairing: %v", i+1, err)
		}
		for _, m := range r.Messages {
			if cleared < 0 && strings.HasPrefix(m.Content, "[Cleared: read_file(") {
				cleared = i
			}
			if summarized < 0 && strings.HasPrefix(m.Content, convo.SummaryPrefix) {
				summarized = i
			}
		}
	}
	if testing.Verbose() {
		for i, r := range roots {
			var parts []string
			for _, m := range r.Messages {
				parts = append(parts, fmt.Sprintf("%s:%d:%.25q", m.Role, len(m.Content), m.Content))
			}
			t.Logf("request %d: %s", i+1, strings.Join(parts, " | "))
		}
	}
	if cleared < 0 || summarized <= cleared {
		t.Fatalf("cleared at request %d, summary at request %d: want eviction first, then compaction", cleared+1, summarized+1)
	}
	if n := len(requestsOf(srv, actors.SummarizerKind)); n < 1 {
		t.Errorf("%d summarizer requests", n)
	}
	if len(rec.OfType(messages.EvtContextEvicted)) == 0 || len(rec.OfType(messages.EvtContextCompacted)) == 0 {
		t.Error("missing context.evicted or context.compacted events")
	}
	// The pinned prefix survives: system prompt and task lead every request.
	for i, r := range roots {
		if r.Messages[0].Role != "system" || r.Task != "read the files" {
			t.Errorf("request %d lost its pinned prefix", i+1)
		}
	}
}

// A run killed during round 3 resumes from its checkpoint and reaches the
// answer an uninterrupted run reaches, having sent the model the same
// conversation.
func TestResumeFromCheckpoint(t *testing.T) {
	files := map[string]string{"a.txt": "alpha\n", "b.txt": "beta\n"}
	r1, r2 := calls(tc("read_file", `{"path":"a.txt"}`)), calls(tc("read_file", `{"path":"b.txt"}`))
	final := say("alpha then beta")

	whole := llmtest.New(script(kind("root", r1, r2, final)))
	defer whole.Close()
	o := options(t, whole, workspace(t, files), "read a then b", &actors.Recorder{})
	o.Settings = noPlan()
	want := run(t, o)

	// Round 3 is slow the first time (the kill lands while it waits) and
	// answers when asked again: a cancelled request does not complete its
	// round, so the resumed agent's request replays round 3.
	var calls3 atomic.Int32
	round3 := make(chan struct{}) // closed when round 3's request has arrived
	slowOnce := llmtest.Turn{Dynamic: func(llmtest.Recorded) llmtest.Turn {
		if calls3.Add(1) == 1 {
			close(round3)
			return llmtest.Turn{Text: "too late", Latency: llmtest.Duration(time.Minute)}
		}
		return final
	}}
	srv := llmtest.New(script(kind("root", r1, r2, slowOnce, final)))
	defer srv.Close()
	ws := workspace(t, files)
	o = options(t, srv, ws, "read a then b", &actors.Recorder{})
	o.Settings = noPlan()
	ctx, cancel := context.WithCancel(t.Context())
	team, err := actors.Start(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-round3:
	case <-time.After(30 * time.Second):
		t.Fatal("round 3's request never arrived")
	}
	cancel() // the kill: mid model call of round 3
	killed, err := team.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if killed.Status != actors.StatusCancelled || killed.Checkpoint == "" {
		t.Fatalf("killed run: %+v", killed)
	}
	cp, err := actors.FindCheckpoint(stateOf(t, ws), killed.Run)
	if err != nil {
		t.Fatal(err)
	}
	if cp.Round != 2 || cp.Run != killed.Run || cp.Task != "read a then b" {
		t.Fatalf("checkpoint at round %d of run %s, task %q", cp.Round, cp.Run, cp.Task)
	}
	o = options(t, srv, ws, "", &actors.Recorder{})
	o.Settings = noPlan()
	o.Resume = cp
	got := run(t, o)
	if got.Status != actors.StatusCompleted || got.Text != want.Text {
		t.Fatalf("resumed: %+v, want text %q", got.AgentResult, want.Text)
	}
	resumedReq := srv.Requests()[3].Messages
	wholeReq := whole.Requests()[2].Messages
	if len(resumedReq) != len(wholeReq) {
		t.Fatalf("resumed request has %d messages, uninterrupted %d", len(resumedReq), len(wholeReq))
	}
	for i := range wholeReq {
		a, b := resumedReq[i], wholeReq[i]
		if a.Role != b.Role || a.Content != b.Content || len(a.ToolCalls) != len(b.ToolCalls) {
			t.Errorf("message %d differs after resume:\n%+v\n%+v", i, a, b)
		}
	}
}

// Cancel during a model call and during a tool: the run ends cancelled,
// promptly, with its lease released; Status answers while the call runs.
func TestCancelDuringModelCallAndTool(t *testing.T) {
	t.Run("model", func(t *testing.T) {
		arrived := make(chan struct{}) // the request is read and its turn chosen
		srv := llmtest.New(script(kind("root", llmtest.Turn{Dynamic: func(llmtest.Recorded) llmtest.Turn {
			close(arrived)
			return llmtest.Turn{Text: "never", Latency: llmtest.Duration(time.Minute)}
		}})))
		defer srv.Close()
		o := options(t, srv, workspace(t, nil), "wait", &actors.Recorder{})
		team, err := actors.Start(t.Context(), o)
		if err != nil {
			t.Fatal(err)
		}
		select {
		case <-arrived:
		case <-time.After(30 * time.Second):
			t.Fatal("the model request never arrived")
		}
		st, err := actors.RootStatus(t.Context(), team)
		if err != nil || st.Round != 1 || st.Phase != actors.PhasePlan {
			t.Fatalf("status mid-call: %+v %v", st, err)
		}
		team.Cancel()
		res, err := team.Wait(t.Context())
		if err != nil || res.Status != actors.StatusCancelled {
			t.Fatalf("%+v %v", res, err)
		}
		if res.Budget == nil || res.Budget.Slots != 0 || res.Budget.Reserved != 0 {
			t.Errorf("lease not released: %+v", res.Budget)
		}
		checkFor(t, 10*time.Second, func() error {
			if r := srv.Requests(); len(r) != 1 || !r[0].Canceled {
				return fmt.Errorf("server still answering: %d recorded, %d in flight", len(r), srv.InFlight())
			}
			return nil
		})
	})
	t.Run("tool", func(t *testing.T) {
		srv := llmtest.New(script(kind("root", calls(tc("shell", `{"command":"sleep 300"}`)), say("never"))))
		defer srv.Close()
		rec := &actors.Recorder{}
		o := options(t, srv, workspace(t, nil), "sleep", rec)
		o.Settings = noPlan()
		team, err := actors.Start(t.Context(), o)
		if err != nil {
			t.Fatal(err)
		}
		checkFor(t, 30*time.Second, func() error {
			st, err := actors.RootStatus(t.Context(), team)
			if err != nil || st.CurrentTool != "shell" {
				return fmt.Errorf("status %+v %v", st, err)
			}
			return nil
		})
		team.Cancel()
		res, err := team.Wait(t.Context())
		if err != nil || res.Status != actors.StatusCancelled {
			t.Fatalf("%+v %v", res, err)
		}
		fin := rec.OfType(messages.EvtToolFinished)
		if len(fin) != 1 || dataOf(t, fin[0])["is_error"] != true {
			t.Errorf("tool.finished after cancel: %v", fin)
		}
		if len(srv.Requests()) != 1 {
			t.Errorf("the model was called again after cancel")
		}
	})
}
