package actors_test

import (
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/llm"
	"github.com/troupe-ai/troupe/llm/llmtest"
	"github.com/troupe-ai/troupe/messages"
	"github.com/troupe-ai/troupe/ratelimit"
)

// An agent whose model call gets a 429 says so, waits out the freeze in
// the limiter (throttled) and resumes: llm.throttled refused, waiting
// (frozen, 429) and resumed, each decoding strictly; the retry waited the
// provider's retry-after.
func TestThrottledEvents(t *testing.T) {
	srv := llmtest.New(script(kind("root", llmtest.RateLimited(200*time.Millisecond), say("done"))))
	defer srv.Close()
	lim := ratelimit.NewLimiter(ratelimit.NewQuota(ratelimit.QuotaOptions{}), ratelimit.LimiterOptions{Client: "t"})
	defer lim.Close()
	c, err := llm.NewClient(llm.Config{BaseURL: srv.URL(), Model: "big-model", Stream: true, MaxAttempts: 4,
		InitialBackoff: time.Millisecond, MaxBackoff: 20 * time.Millisecond, Limiter: lim}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	rec := &actors.Recorder{}
	o := options(t, srv, workspace(t, nil), "answer", rec)
	o.Client = c
	res := run(t, o)
	if res.Status != actors.StatusCompleted || res.Text != "done" {
		t.Fatalf("result %+v", res.AgentResult)
	}
	var phases []string
	var waited int64
	for _, ev := range rec.OfType(messages.EvtLLMThrottled) {
		if err := strictDecode(ev); err != nil {
			t.Error(err)
		}
		d, _ := messages.DecodeAs[messages.LLMThrottled](ev)
		phases = append(phases, d.Phase)
		switch d.Phase {
		case messages.ThrottleRefused:
			if d.Status != 429 || d.RetryAfterMS != 200 || d.Attempt != 1 {
				t.Errorf("refused %+v", d)
			}
		case messages.ThrottleWaiting:
			if d.Reason != ratelimit.ReasonFrozen || d.Status != 429 || d.FrozenMS <= 0 || d.Attempt != 2 {
				t.Errorf("waiting %+v", d)
			}
		case messages.ThrottleResumed:
			waited = d.WaitedMS
		}
	}
	if len(phases) != 3 || phases[0] != "refused" || phases[1] != "waiting" || phases[2] != "resumed" {
		t.Fatalf("llm.throttled phases %v", phases)
	}
	if waited < 150 {
		t.Errorf("waited %d ms after a 429 asking for 200", waited)
	}
}

// Rate and budget slots never wait on each other: with room for the
// root and one child at a time (the others wait for a slot while the
// root holds its own) and a key limited to 2 calls a second, four
// children still all get their turns and the run completes, both waits
// having happened.
func TestRateAndSlotsDoNotDeadlock(t *testing.T) {
	child := []llmtest.Turn{calls(tc("think", `{"thought":"look"}`)), say("found")}
	srv := llmtest.New(script(
		kind("root", calls(delegate("explore", "a", false), delegate("explore", "b", false),
			delegate("explore", "c", false), delegate("explore", "d", false)), say("all found")),
		llmtest.AgentScript{Match: llmtest.Matcher{Kind: "explore"}, Repeat: true, Turns: child}))
	defer srv.Close()
	lim := ratelimit.NewLimiter(ratelimit.NewQuota(ratelimit.QuotaOptions{}), ratelimit.LimiterOptions{Client: "t"})
	defer lim.Close()
	c, err := llm.NewClient(llm.Config{BaseURL: srv.URL(), Model: "big-model", Stream: true, MaxAttempts: 4,
		InitialBackoff: time.Millisecond, MaxBackoff: 20 * time.Millisecond, Limiter: lim,
		RateLimits: map[string]messages.RateLimits{"big-model": {RPM: 120}, "small-model": {RPM: 120}}}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	rec := &actors.Recorder{}
	o := options(t, srv, workspace(t, map[string]string{"a.go": "package a\n"}), "find", rec)
	o.Client = c
	o.Settings = noPlan()
	o.Budget.MaxConcurrent = 2
	res := run(t, o)
	if res.Status != actors.StatusCompleted || res.Text != "all found" {
		t.Fatalf("result %+v", res.AgentResult)
	}
	if len(rec.OfType(messages.EvtBudgetWaiting)) == 0 {
		t.Error("no child waited for a slot: the slots were not tight")
	}
	resumed := 0
	for _, ev := range rec.OfType(messages.EvtLLMThrottled) {
		if d, _ := messages.DecodeAs[messages.LLMThrottled](ev); d.Phase == messages.ThrottleResumed {
			resumed++
		}
	}
	if resumed == 0 {
		t.Error("no call waited for its turn: the rate was not tight")
	}
	if n := len(rec.OfType(messages.EvtAgentFinished)); n != 5 {
		t.Errorf("%d agents finished, want 5", n)
	}
}
