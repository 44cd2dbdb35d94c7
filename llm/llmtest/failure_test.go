package llmtest_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/troupe-ai/troupe/llm/llmtest"
)

func TestStatusFailures(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name       string
		turn       llmtest.Turn
		status     int
		message    string
		code       string
		header     string
		headerWant string
	}{
		{"429 seconds", llmtest.RateLimited(2 * time.Second), 429, "rate limited (scripted)", "rate_limit_exceeded", "Retry-After", "2"},
		{"429 ms", llmtest.RateLimited(150 * time.Millisecond), 429, "rate limited (scripted)", "rate_limit_exceeded", "Retry-After-Ms", "150"},
		{"500", llmtest.Status(500, ""), 500, "Internal Server Error (scripted)", "", "", ""},
		{"401", llmtest.Turn{Fail: &llmtest.Failure{Kind: llmtest.FailStatus, Status: 401, Message: "invalid api key", Code: "invalid_api_key"}},
			401, "invalid api key", "invalid_api_key", "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := llmtest.New(llmtest.Script{Agents: []llmtest.AgentScript{
				{Match: llmtest.Matcher{Fallback: true}, Turns: []llmtest.Turn{tc.turn, llmtest.Text("after")}},
			}})
			defer srv.Close()
			c := client(srv)
			var res *http.Response
			_, err := c.Chat.Completions.New(t.Context(), params("t"), option.WithResponseInto(&res))
			var apiErr *openai.Error
			if !errors.As(err, &apiErr) {
				t.Fatalf("err = %v, want *openai.Error", err)
			}
			if apiErr.StatusCode != tc.status || apiErr.Message != tc.message || apiErr.Code != tc.code {
				t.Errorf("got %d %q %q", apiErr.StatusCode, apiErr.Message, apiErr.Code)
			}
			if tc.header != "" && apiErr.Response.Header.Get(tc.header) != tc.headerWant {
				t.Errorf("%s = %q, want %q", tc.header, apiErr.Response.Header.Get(tc.header), tc.headerWant)
			}
			// The failure did not complete the round: the next request is
			// still round 1 and gets the answer.
			cc, err := c.Chat.Completions.New(t.Context(), params("t"))
			if err != nil {
				t.Fatal(err)
			}
			if cc.Choices[0].Message.Content != "after" {
				t.Errorf("after the failure: %q", cc.Choices[0].Message.Content)
			}
			reqs := srv.Requests()
			if len(reqs) != 2 || reqs[0].Round != 1 || reqs[1].Round != 1 || reqs[0].Reply.Fail == nil {
				t.Errorf("recorded rounds %d,%d fail %v", reqs[0].Round, reqs[1].Round, reqs[0].Reply.Fail)
			}
		})
	}
}

func TestStreamBreaks(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		turn llmtest.Turn
	}{
		{"drop", llmtest.Dropped(3)},
		{"malformed", llmtest.Malformed(2)},
		{"drop before any chunk", llmtest.Dropped(0)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := llmtest.New(llmtest.Script{Agents: []llmtest.AgentScript{
				{Match: llmtest.Matcher{Fallback: true}, Turns: []llmtest.Turn{
					{Text: "a long enough answer", Fail: tc.turn.Fail}, llmtest.Text("whole answer")}},
			}})
			defer srv.Close()
			c := client(srv)
			cc, _, err := stream(t, c, params("t"))
			if err == nil {
				t.Fatalf("broken stream read without error; content %q", cc.Choices[0].Message.Content)
			}
			cc, _, err = stream(t, c, params("t"))
			if err != nil {
				t.Fatal(err)
			}
			if got := cc.Choices[0].Message.Content; got != "whole answer" {
				t.Errorf("second call: %q", got)
			}
		})
	}
}

func TestErrorEvent(t *testing.T) {
	t.Parallel()
	fail := llmtest.Turn{Text: "partial answer", Fail: &llmtest.Failure{Kind: llmtest.FailErrorEvent, AfterChunks: 2,
		Message: "upstream overloaded", Code: "502"}}
	srv := llmtest.New(script1(fail, fail))
	defer srv.Close()
	c := client(srv)
	_, _, err := stream(t, c, params("t"))
	if err == nil || !strings.Contains(err.Error(), "upstream overloaded") {
		t.Errorf("streamed error event: err = %v", err)
	}
	// Not streaming: HTTP 200 with only an error body, no choices.
	cc, err := c.Chat.Completions.New(t.Context(), params("t"))
	if err != nil {
		t.Fatal(err)
	}
	if len(cc.Choices) != 0 || !strings.Contains(cc.RawJSON(), "upstream overloaded") {
		t.Errorf("non-streaming error body = %s", cc.RawJSON())
	}
}

func script1(turns ...llmtest.Turn) llmtest.Script {
	return llmtest.Script{Agents: []llmtest.AgentScript{{Match: llmtest.Matcher{Fallback: true}, Turns: turns}}}
}

func TestStall(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(script1(llmtest.Turn{Text: "an answer that stops", Fail: llmtest.Stalled(2).Fail}))
	defer srv.Close()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	s := client(srv).Chat.Completions.NewStreaming(ctx, params("t"))
	defer s.Close()
	got := 0
	for got < 2 && s.Next() {
		got++
	}
	if got != 2 {
		t.Fatalf("read %d chunks before the stall, want 2 (err %v)", got, s.Err())
	}
	// Nothing more comes; the client gives up.
	cancel()
	if s.Next() {
		t.Error("a chunk arrived after the stall")
	}
	waitFor(t, func() bool { return len(srv.Requests()) == 1 })
	if r := srv.Requests()[0]; !r.Canceled || !r.Answered.IsZero() || r.Ended.Before(r.Received) {
		t.Errorf("recorded canceled=%v answered=%v received %v ended %v", r.Canceled, r.Answered, r.Received, r.Ended)
	}
}

func TestNonStreamingBreaks(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(llmtest.Script{Agents: []llmtest.AgentScript{
		{Match: llmtest.Matcher{Fallback: true}, Turns: []llmtest.Turn{llmtest.Dropped(0), llmtest.Malformed(0), llmtest.Text("ok")}},
	}})
	defer srv.Close()
	c := client(srv)
	if _, err := c.Chat.Completions.New(t.Context(), params("t")); err == nil {
		t.Error("dropped connection read without error")
	}
	if _, err := c.Chat.Completions.New(t.Context(), params("t")); err == nil {
		t.Error("malformed body read without error")
	}
	cc, err := c.Chat.Completions.New(t.Context(), params("t"))
	if err != nil || cc.Choices[0].Message.Content != "ok" {
		t.Fatalf("third call: %v", err)
	}
	reqs := srv.Requests()
	if len(reqs) != 3 || !reqs[0].Answered.IsZero() || reqs[1].Answered.IsZero() {
		t.Errorf("answered times: %v / %v", reqs[0].Answered, reqs[1].Answered)
	}
}

func TestLatencyHonoursCancel(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(llmtest.Script{Agents: []llmtest.AgentScript{
		{Match: llmtest.Matcher{Fallback: true}, Turns: []llmtest.Turn{{Text: "slow", Latency: llmtest.Duration(time.Hour)}}},
	}})
	defer srv.Close()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := client(srv).Chat.Completions.New(ctx, params("t"))
		done <- err
	}()
	waitFor(t, func() bool { return srv.InFlight() == 1 })
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("err = %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("call still blocked 10s after cancel")
	}
	waitFor(t, func() bool { return len(srv.Requests()) == 1 })
	if r := srv.Requests()[0]; !r.Canceled || !r.Answered.IsZero() {
		t.Errorf("recorded canceled=%v answered=%v", r.Canceled, r.Answered)
	}
}

func TestLatencyDelaysAnswer(t *testing.T) {
	t.Parallel()
	const delay = 50 * time.Millisecond
	srv := llmtest.New(llmtest.Script{Agents: []llmtest.AgentScript{
		{Match: llmtest.Matcher{Fallback: true}, Turns: []llmtest.Turn{{Text: "slow", Latency: llmtest.Duration(delay)}}},
	}})
	defer srv.Close()
	if _, err := client(srv).Chat.Completions.New(t.Context(), params("t")); err != nil {
		t.Fatal(err)
	}
	r := srv.Requests()[0]
	if gap := r.Answered.Sub(r.Received); gap < delay {
		t.Errorf("answered %v after receipt, want >= %v", gap, delay)
	}
}

func TestInvalidScriptAnswers400(t *testing.T) {
	t.Parallel()
	srv, err := llmtest.Open(llmtest.Script{Agents: []llmtest.AgentScript{{Turns: []llmtest.Turn{llmtest.Text("x")}}}})
	if err == nil {
		t.Fatal("Open accepted a matcher with no criteria")
	}
	defer srv.Close()
	_, err = client(srv).Chat.Completions.New(t.Context(), params("t"))
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Message != srv.Err().Error() {
		t.Errorf("err = %v (%+v), want 400 with %q", err, apiErr, srv.Err())
	}
}
