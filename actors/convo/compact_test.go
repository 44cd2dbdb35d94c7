package convo

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/llm"
	"github.com/troupe-ai/troupe/llm/llmtest"
	"github.com/troupe-ai/troupe/messages"
)

// summaryServer starts the scripted model answering every request (the
// summarizer matched by kind "compact") with a summary that counts the
// messages of the transcript it was sent.
func summaryServer(t *testing.T) *llmtest.Server {
	t.Helper()
	srv := llmtest.New(llmtest.Script{Agents: []llmtest.AgentScript{{
		Match: llmtest.Matcher{Fallback: true},
		Turns: repeatTurn(llmtest.Turn{Dynamic: func(req llmtest.Recorded) llmtest.Turn {
			tr := req.Messages[len(req.Messages)-1].Content
			return llmtest.Text(fmt.Sprintf("Summary: %d messages.", strings.Count(tr, "\n[round ")))
		}}, 2000),
	}}})
	t.Cleanup(srv.Close)
	return srv
}

func repeatTurn(t llmtest.Turn, n int) []llmtest.Turn {
	out := make([]llmtest.Turn, n)
	for i := range out {
		out[i] = t
	}
	return out
}

func summarizer(t *testing.T, srv *llmtest.Server) Summarizer {
	return Summarizer{Client: testClient(t, srv), Model: "summary-model", Run: "run-1", Agent: "agent-1", Kind: "worker"}
}

// longConv: a system prompt and a task (pinned, 100 chars together), then
// rounds 1..n of one read_file call with results of size chars, at 4 chars
// per token.
func longConv(t *testing.T, cfg Config, n, size int) *Conversation {
	t.Helper()
	cfg.CharsPerToken = 4
	c := newConv(t, cfg)
	if err := c.AppendSystem(strings.Repeat("s", 42)); err != nil {
		t.Fatal(err)
	}
	if err := c.AppendTask(strings.Repeat("t", 42)); err != nil {
		t.Fatal(err)
	}
	for r := 1; r <= n; r++ {
		readRound(t, c, r, size)
	}
	return c
}

func TestCompactLayout(t *testing.T) {
	t.Parallel()
	srv := summaryServer(t)
	// 2 pinned messages (100 chars), then 20 rounds: rounds 1..9 of 800
	// chars, rounds 10..20 of 802 (7-char call ids). The 60 % notice lands
	// on round 15, the 80 % one on round 20: about 16400 chars in all,
	// 42 messages. The recency window (10) is rounds 16..20.
	c := longConv(t, Config{Window: 5000, SummaryMaxTokens: 100}, 20, 739)
	before := c.Entries()
	st, err := c.Compact(t.Context(), summarizer(t, srv))
	if err != nil {
		t.Fatal(err)
	}
	after := c.Entries()
	if err := ValidatePairs(msgsOf(after)); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(after[:2], before[:2]) {
		t.Fatal("pinned prefix changed")
	}
	sum := after[2]
	if sum.Message.Role != llm.RoleUser || !sum.Summary || !strings.HasPrefix(sum.Message.Content, SummaryPrefix+"\n") {
		t.Fatalf("message after the prefix is not the summary: %+v", sum.Message)
	}
	// The target is 50 % = 10000 chars, with room for a full summary (100
	// tokens = 400 chars + prefix): about 6850 chars must go. Rounds 1..8
	// are 6400, rounds 1..9 are 7200: 18 messages are summarized, rounds
	// 10..15 stay as the middle and 16..20 as the recency window.
	if st.Summarized != 18 || len(after) != 2+1+22 {
		t.Fatalf("summarized %d, %d messages after; want 18 and 25", st.Summarized, len(after))
	}
	if !reflect.DeepEqual(after[3:], before[20:]) {
		t.Fatal("the messages after the summary are not the unchanged rounds 10..20")
	}
	if st.MessagesBefore != 42 || st.MessagesAfter != 25 ||
		st.EstimateBefore != tokensFor(sumChars(before), 4) || st.EstimateAfter != c.Estimate() || c.Estimate() > 2500 {
		t.Errorf("stats %+v, estimate now %d", st, c.Estimate())
	}
	// The summary was asked for the summarized messages: the scripted
	// model counted them in the transcript.
	if want := fmt.Sprintf("Summary: %d messages.", st.Summarized); !strings.HasSuffix(sum.Message.Content, want) {
		t.Errorf("summary %q, want it to end %q", sum.Message.Content, want)
	}
	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests, want 1", len(reqs))
	}
	r := reqs[0]
	if r.Model != "summary-model" || r.Agent != "agent-1" || r.Run != "run-1" || r.Kind != "worker" || r.MaxTokens != 100 {
		t.Errorf("side request model %q agent %q run %q kind %q max_tokens %d", r.Model, r.Agent, r.Run, r.Kind, r.MaxTokens)
	}
	if r.Messages[0].Role != "system" || r.Messages[0].Content != SummaryPrompt || !strings.Contains(r.Messages[1].Content, strings.Repeat("t", 42)) {
		t.Errorf("side request messages: %+v", r.Messages[:1])
	}
}

func sumChars(es []Entry) int {
	n := 0
	for _, e := range es {
		n += e.Chars
	}
	return n
}

func TestCompactFailureKeepsConversation(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(llmtest.Script{Agents: []llmtest.AgentScript{{
		Match: llmtest.Matcher{Fallback: true},
		Turns: []llmtest.Turn{llmtest.Status(400, "context too long"), llmtest.Status(400, "context too long")},
	}}})
	t.Cleanup(srv.Close)
	c := longConv(t, Config{Window: 5000}, 20, 739)
	before := c.Entries()
	if _, err := c.Compact(t.Context(), summarizer(t, srv)); err == nil {
		t.Fatal("Compact succeeded against a failing model")
	}
	if !reflect.DeepEqual(c.Entries(), before) {
		t.Fatal("a failed compaction changed the conversation")
	}
	// Fit: eviction (MinAge 3: rounds 1..17) would get below 80 % on its
	// own here; with MinAge 20 no result is old enough, so Fit compacts.
	if err := c.SetConfig(Config{Window: 5000, CharsPerToken: 4, MinAge: 20}); err != nil {
		t.Fatal(err)
	}
	m, err := c.Fit(t.Context(), summarizer(t, srv))
	if err == nil || !strings.Contains(err.Error(), "summarize") {
		t.Fatalf("Fit err = %v, want the side request's error", err)
	}
	if m.Compaction != nil || m.Fallback.Count == 0 || c.Over() {
		t.Fatalf("Fit = %+v, over %v: want a fallback eviction that got under the threshold", m, c.Over())
	}
	if err := ValidatePairs(c.Messages()); err != nil {
		t.Fatal(err)
	}
	if len(c.Entries()) != len(before) {
		t.Fatal("the fallback lost messages")
	}
}

func TestFit(t *testing.T) {
	t.Parallel()
	srv := summaryServer(t)
	s := summarizer(t, srv)
	// Under the threshold: nothing.
	c := longConv(t, Config{Window: 100000}, 5, 739)
	if m, err := c.Fit(t.Context(), s); err != nil || m.Eviction.Count != 0 || m.Compaction != nil {
		t.Fatalf("Fit under threshold = %+v, %v", m, err)
	}
	// Eviction suffices.
	c = longConv(t, Config{Window: 5000}, 20, 739)
	m, err := c.Fit(t.Context(), s)
	if err != nil || m.Eviction.Count == 0 || m.Compaction != nil || c.Over() {
		t.Fatalf("Fit = %+v, %v", m, err)
	}
	// Protected results cannot be cleared: compaction runs.
	c = newConv(t, Config{Window: 5000, CharsPerToken: 4, Protected: []string{"todo"}})
	if err := c.AppendTask("t"); err != nil {
		t.Fatal(err)
	}
	for r := 1; r <= 20; r++ {
		addRound(t, c, r, []messages.ToolCall{call(fmt.Sprintf("t%d", r), "todo", `{}`)}, []string{strings.Repeat("x", 1000)})
	}
	m, err = c.Fit(t.Context(), s)
	if err != nil || m.Eviction.Count != 0 || m.Compaction == nil || c.Over() {
		t.Fatalf("Fit with protected results = %+v, %v (over %v)", m, err, c.Over())
	}
	if len(srv.Requests()) != 1 {
		t.Errorf("%d side requests, want 1", len(srv.Requests()))
	}
}

func TestCompactRearmsAdvisoriesAndRollsUp(t *testing.T) {
	t.Parallel()
	srv := summaryServer(t)
	s := summarizer(t, srv)
	c := longConv(t, Config{Window: 5000, SummaryMaxTokens: 100}, 20, 739)
	if !c.fired[AdvisoryAdvise] || !c.fired[AdvisoryWarn] {
		t.Fatal("setup: both advisories should have fired")
	}
	if _, err := c.Compact(t.Context(), s); err != nil {
		t.Fatal(err)
	}
	// Down to under 50 %: both re-armed; growing again fires them again.
	var got []AdvisoryLevel
	for r := 21; r <= 40 && len(got) < 2; r++ {
		if adv := readRound(t, c, r, 739); adv.Level != NoAdvisory {
			got = append(got, adv.Level)
		}
	}
	if !reflect.DeepEqual(got, []AdvisoryLevel{AdvisoryAdvise, AdvisoryWarn}) {
		t.Fatalf("advisories after compaction: %v, want advise then warn", got)
	}
	// A second compaction summarizes the first summary with the rest.
	if _, err := c.Compact(t.Context(), s); err != nil {
		t.Fatal(err)
	}
	reqs := srv.Requests()
	if tr := reqs[len(reqs)-1].Messages[1].Content; !strings.Contains(tr, SummaryPrefix) {
		t.Error("the second summary request did not include the first summary")
	}
	n := 0
	for _, e := range c.Entries() {
		if e.Summary {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d summary messages after two compactions, want 1", n)
	}
}

func TestCompactNothingToDo(t *testing.T) {
	t.Parallel()
	srv := summaryServer(t)
	c := longConv(t, Config{Window: 1000}, 4, 739) // 2 pinned + 8 messages, all in the recency window
	if _, err := c.Compact(t.Context(), summarizer(t, srv)); !errors.Is(err, ErrNothingToCompact) {
		t.Fatalf("err = %v, want ErrNothingToCompact", err)
	}
	if len(srv.Requests()) != 0 {
		t.Error("a side request was made with nothing to summarize")
	}
	if err := c.AppendAssistant(5, assistantWith(call("p", "ls", `{}`))); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Compact(t.Context(), summarizer(t, srv)); !errors.Is(err, ErrPendingToolCalls) {
		t.Fatalf("err = %v, want ErrPendingToolCalls", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	c = longConv(t, Config{Window: 5000}, 20, 739)
	if _, err := c.Compact(ctx, summarizer(t, srv)); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled context: err = %v", err)
	}
}

// TestCompactNeverOrphans builds conversations with many parallel calls
// per round, text answers, user messages and injected pinned context, and
// compacts them at many sizes and recency windows. Every result must pair
// every call, keep every pinned message in order, keep the last messages
// verbatim and put exactly one summary after the pinned ones.
func TestCompactNeverOrphans(t *testing.T) {
	t.Parallel()
	srv := summaryServer(t)
	s := summarizer(t, srv)
	rng := rand.New(rand.NewPCG(1, 2))
	compacted := 0
	for iter := range 150 {
		recent := 1 + rng.IntN(15)
		c := newConv(t, Config{Window: 1 << 30, RecentMessages: recent})
		if err := c.AppendSystem("sys"); err != nil {
			t.Fatal(err)
		}
		if err := c.AppendTask(fmt.Sprintf("task %d", iter)); err != nil {
			t.Fatal(err)
		}
		rounds := 1 + rng.IntN(25)
		for r := 1; r <= rounds; r++ {
			switch k := rng.IntN(7); {
			case k == 0:
				if err := c.AppendAssistant(r, llm.Message{Role: llm.RoleAssistant, Content: "thinking"}); err != nil {
					t.Fatal(err)
				}
				if err := c.AppendUser(r, "continue"); err != nil {
					t.Fatal(err)
				}
			case k == 1 && r > 1:
				if err := c.AppendSystem(fmt.Sprintf("injected context %d", r)); err != nil {
					t.Fatal(err)
				}
			default:
				calls := make([]messages.ToolCall, 1+rng.IntN(6))
				contents := make([]string, len(calls))
				for i := range calls {
					calls[i] = call(fmt.Sprintf("c%d_%d", r, i), "grep", `{"pattern":"x"}`)
					contents[i] = strings.Repeat("y", rng.IntN(3000))
				}
				addRound(t, c, r, calls, contents)
			}
		}
		// Size the window so the conversation is at 80..130 % of it.
		window := int(float64(c.Estimate()) / (0.8 + 0.5*rng.Float64()))
		if err := c.SetConfig(Config{Window: max(window, 1), RecentMessages: recent, SummaryMaxTokens: 1 + rng.IntN(500)}); err != nil {
			t.Fatal(err)
		}
		before := c.Entries()
		st, err := c.Compact(t.Context(), s)
		after := c.Entries()
		if errors.Is(err, ErrNothingToCompact) {
			checkNothingToCompact(t, iter, before, recent)
			continue
		}
		if err != nil {
			t.Fatalf("iter %d: %v", iter, err)
		}
		compacted++
		checkCompacted(t, iter, before, after, recent, st)
	}
	if compacted < 100 {
		t.Errorf("only %d of 150 conversations were compacted: the test exercises too little", compacted)
	}
}

func checkCompacted(t *testing.T, iter int, before, after []Entry, recent int, st Compaction) {
	t.Helper()
	if err := ValidatePairs(msgsOf(after)); err != nil {
		t.Fatalf("iter %d: %v", iter, err)
	}
	var pinB, pinA []Entry
	for _, e := range before {
		if e.Pinned {
			pinB = append(pinB, e)
		}
	}
	i := 0
	for ; i < len(after) && after[i].Pinned; i++ {
		pinA = append(pinA, after[i])
	}
	if i == len(after) || !after[i].Summary || after[i].Message.Role != llm.RoleUser ||
		!strings.HasPrefix(after[i].Message.Content, SummaryPrefix) {
		t.Fatalf("iter %d: message %d is not the summary", iter, i)
	}
	tail := after[i+1:]
	for _, e := range tail {
		if e.Summary {
			t.Fatalf("iter %d: two summaries", iter)
		}
		if e.Pinned {
			pinA = append(pinA, e)
		}
	}
	if !reflect.DeepEqual(pinA, pinB) {
		t.Fatalf("iter %d: pinned messages changed: %d before, %d after", iter, len(pinB), len(pinA))
	}
	if !reflect.DeepEqual(tail, before[len(before)-len(tail):]) {
		t.Fatalf("iter %d: the messages after the summary are not an unchanged tail", iter)
	}
	if len(tail) < recent {
		t.Fatalf("iter %d: kept %d messages, recency window %d", iter, len(tail), recent)
	}
	if len(tail) > 0 && tail[0].Message.Role == llm.RoleTool {
		t.Fatalf("iter %d: a tool message follows the summary", iter)
	}
	if st.MessagesAfter != len(after) || st.MessagesBefore != len(before) || st.Summarized != len(before)-len(after)+1 {
		t.Fatalf("iter %d: stats %+v for %d -> %d messages", iter, st, len(before), len(after))
	}
}

// checkNothingToCompact fails unless every unpinned message of before lies
// in the recency window (grown to its tool-call group).
func checkNothingToCompact(t *testing.T, iter int, before []Entry, recent int) {
	t.Helper()
	start := 0
	for start < len(before) && before[start].Pinned {
		start++
	}
	cut := max(len(before)-recent, start)
	for cut > start && before[cut].Message.Role == llm.RoleTool {
		cut--
	}
	for _, e := range before[start:cut] {
		if !e.Pinned {
			t.Fatalf("iter %d: ErrNothingToCompact with unpinned messages before the recency window", iter)
		}
	}
}

// testClient is the real model client pointed at the scripted server, with
// one attempt per call so injected failures reach the caller.
func testClient(t *testing.T, srv *llmtest.Server) llm.Client {
	t.Helper()
	c, err := llm.NewClient(llm.Config{BaseURL: srv.URL(), Model: "default-model", Stream: true, MaxAttempts: 1}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	return c
}
