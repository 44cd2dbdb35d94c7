package llm_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/troupe-ai/troupe/llm"
	"github.com/troupe-ai/troupe/llm/llmtest"
)

// gap is the time between the end of request i's answer and the arrival
// of request i+1, as the server recorded them.
func gap(t *testing.T, reqs []llmtest.Recorded, i int) time.Duration {
	t.Helper()
	if reqs[i].Answered.IsZero() {
		t.Fatalf("request %d was not answered", i)
	}
	return reqs[i+1].Received.Sub(reqs[i].Answered)
}

func TestRateLimitHonoursRetryAfter(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		after time.Duration
	}{
		{"retry-after-ms", 300 * time.Millisecond}, // sent as retry-after-ms: 300
		{"retry-after seconds", time.Second},       // sent as Retry-After: 1
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := llmtest.New(script(llmtest.RateLimited(tc.after), llmtest.Text("finally")))
			defer srv.Close()
			// MaxBackoff is far below the Retry-After: the provider's
			// delay still wins.
			c := newClient(t, srv, nil)
			resp, err := c.Complete(t.Context(), request("q"), nil)
			if err != nil {
				t.Fatal(err)
			}
			if resp.Attempts != 2 || resp.Message.Content != "finally" {
				t.Errorf("attempts %d content %q", resp.Attempts, resp.Message.Content)
			}
			reqs := srv.Requests()
			if len(reqs) != 2 {
				t.Fatalf("%d requests, want 2", len(reqs))
			}
			if g := gap(t, reqs, 0); g < tc.after {
				t.Errorf("retry came %v after the 429, before its Retry-After %v", g, tc.after)
			}
		})
	}
}

func TestRetryAfterCappedByMaxRetryAfter(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(script(llmtest.RateLimited(time.Hour), llmtest.Text("ok")))
	defer srv.Close()
	c := newClient(t, srv, func(cfg *llm.Config) { cfg.MaxRetryAfter = 20 * time.Millisecond })
	resp, err := c.Complete(t.Context(), request("q"), nil)
	if err != nil || resp.Attempts != 2 {
		t.Fatalf("attempts %d err %v", resp.Attempts, err)
	}
	if g := gap(t, srv.Requests(), 0); g < 20*time.Millisecond {
		t.Errorf("retried after %v, before the 20ms cap", g)
	}
}

func TestServerErrorThenSuccess(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(script(llmtest.Status(500, "upstream exploded"), llmtest.Status(503, ""), llmtest.Text("ok")))
	defer srv.Close()
	var d deltas
	resp, err := newClient(t, srv, nil).Complete(t.Context(), request("q"), d.add)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Attempts != 3 || resp.Message.Content != "ok" {
		t.Errorf("attempts %d content %q", resp.Attempts, resp.Message.Content)
	}
	// Failed attempts streamed nothing, so no reset marker.
	if content, _, resets := d.since(); content != "ok" || resets != 0 {
		t.Errorf("deltas %q resets %d", content, resets)
	}
}

func TestUnauthorizedReportedAtOnce(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(script(llmtest.Turn{Fail: &llmtest.Failure{Kind: llmtest.FailStatus, Status: 401,
		Message: "invalid api key", Code: "invalid_api_key"}}, llmtest.Text("never")))
	defer srv.Close()
	resp, err := newClient(t, srv, nil).Complete(t.Context(), request("q"), nil)
	var apiErr *llm.APIError
	if !errors.As(err, &apiErr) {
		t.Fatalf("err = %v, want *llm.APIError", err)
	}
	if apiErr.Status != 401 || apiErr.Message != "invalid api key" || apiErr.Code != "invalid_api_key" || apiErr.Retryable {
		t.Errorf("api error = %+v", apiErr)
	}
	if err.Error() != "model API: 401 Unauthorized: invalid api key (code invalid_api_key)" {
		t.Errorf("error text = %q", err)
	}
	if n := len(srv.Requests()); n != 1 || resp.Attempts != 1 {
		t.Errorf("%d requests, %d attempts; want 1 and 1", n, resp.Attempts)
	}
}

func TestPermanentStatusesNotRetried(t *testing.T) {
	t.Parallel()
	for _, status := range []int{400, 403, 404, 422} {
		srv := llmtest.New(script(llmtest.Status(status, "no"), llmtest.Text("never")))
		_, err := newClient(t, srv, nil).Complete(t.Context(), request("q"), nil)
		var apiErr *llm.APIError
		if !errors.As(err, &apiErr) || apiErr.Status != status || apiErr.Retryable {
			t.Errorf("status %d: err = %v", status, err)
		}
		if n := len(srv.Requests()); n != 1 {
			t.Errorf("status %d: %d requests, want 1", status, n)
		}
		srv.Close()
	}
}

func TestGivesUpAfterMaxAttempts(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(script(llmtest.Status(502, "bad gateway"), llmtest.Status(502, "bad gateway"),
		llmtest.Status(502, "bad gateway"), llmtest.Text("too late")))
	defer srv.Close()
	resp, err := newClient(t, srv, func(cfg *llm.Config) { cfg.MaxAttempts = 3 }).Complete(t.Context(), request("q"), nil)
	var apiErr *llm.APIError
	if !errors.As(err, &apiErr) || apiErr.Status != 502 || !apiErr.Retryable {
		t.Fatalf("err = %v", err)
	}
	if !strings.Contains(err.Error(), "gave up after 3 attempts") || resp.Attempts != 3 || len(srv.Requests()) != 3 {
		t.Errorf("err %q attempts %d requests %d", err, resp.Attempts, len(srv.Requests()))
	}
}

func TestStreamCutIsRetried(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		fail llmtest.Turn
		want error
	}{
		{"dropped", llmtest.Dropped(4), llm.ErrStreamIncomplete},
		{"malformed", llmtest.Malformed(3), llm.ErrMalformedChunk},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			const answer = "a complete answer in several chunks"
			first := llmtest.Turn{Text: "a partial answer that will be cut", Fail: tc.fail.Fail}
			srv := llmtest.New(script(first, first, llmtest.Turn{Text: answer, Reasoning: "why"}))
			defer srv.Close()
			var d deltas
			resp, err := newClient(t, srv, nil).Complete(t.Context(), request("q"), d.add)
			if err != nil {
				t.Fatal(err)
			}
			if resp.Attempts != 3 || resp.Message.Content != answer || resp.Message.Reasoning != "why" {
				t.Errorf("attempts %d message %+v", resp.Attempts, resp.Message)
			}
			// Both cut attempts had streamed fragments: two reset markers,
			// and what follows the last one is the answer.
			if content, reasoning, resets := d.since(); content != answer || reasoning != "why" || resets != 2 {
				t.Errorf("after resets: %q / %q, %d resets", content, reasoning, resets)
			}

			// With one attempt only, the cause is reported.
			srv2 := llmtest.New(script(first))
			defer srv2.Close()
			_, err = newClient(t, srv2, func(cfg *llm.Config) { cfg.MaxAttempts = 1 }).Complete(t.Context(), request("q"), nil)
			if !errors.Is(err, tc.want) {
				t.Errorf("err = %v, want %v", err, tc.want)
			}
		})
	}
}

func TestErrorEventIsRetried(t *testing.T) {
	t.Parallel()
	fail := llmtest.Turn{Text: "partial", Fail: &llmtest.Failure{Kind: llmtest.FailErrorEvent, AfterChunks: 2, Message: "upstream overloaded"}}
	for _, stream := range []bool{true, false} {
		srv := llmtest.New(script(fail, llmtest.Text("recovered")))
		resp, err := newClient(t, srv, func(cfg *llm.Config) { cfg.Stream = stream }).Complete(t.Context(), request("q"), nil)
		if err != nil || resp.Attempts != 2 || resp.Message.Content != "recovered" {
			t.Errorf("stream=%v: attempts %d content %q err %v", stream, resp.Attempts, resp.Message.Content, err)
		}
		srv.Close()

		// With one attempt, the provider's message is in the error.
		srv = llmtest.New(script(fail))
		_, err = newClient(t, srv, func(cfg *llm.Config) { cfg.Stream = stream; cfg.MaxAttempts = 1 }).Complete(t.Context(), request("q"), nil)
		if err == nil || !strings.Contains(err.Error(), "upstream overloaded") {
			t.Errorf("stream=%v: err = %v", stream, err)
		}
		if stream && !strings.Contains(err.Error(), "error event in stream") {
			t.Errorf("error event not named as such: %v", err)
		}
		srv.Close()
	}
}

func TestNonStreamingBreaksAreRetried(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(script(llmtest.Dropped(0), llmtest.Malformed(0), llmtest.Text("ok")))
	defer srv.Close()
	resp, err := newClient(t, srv, func(cfg *llm.Config) { cfg.Stream = false }).Complete(t.Context(), request("q"), nil)
	if err != nil || resp.Attempts != 3 || resp.Message.Content != "ok" {
		t.Fatalf("attempts %d content %q err %v", resp.Attempts, resp.Message.Content, err)
	}
}

func TestAttemptTimeoutIsRetried(t *testing.T) {
	t.Parallel()
	// The first attempt meets an answer that never comes and must be cut
	// by RequestTimeout. The timeout is generous and the fast answer is
	// scripted three times, because on a loaded machine (race detector, two
	// cores) a later attempt can also run out its time before it is served.
	fast := llmtest.Text("fast")
	srv := llmtest.New(script(llmtest.Turn{Text: "slow", Latency: llmtest.Duration(time.Hour)}, fast, fast, fast))
	defer srv.Close()
	c := newClient(t, srv, func(cfg *llm.Config) { cfg.RequestTimeout = time.Second })
	resp, err := c.Complete(t.Context(), request("q"), nil)
	if err != nil || resp.Attempts < 2 || resp.Message.Content != "fast" {
		t.Fatalf("attempts %d content %q err %v", resp.Attempts, resp.Message.Content, err)
	}
	waitFor(t, func() bool { return srv.InFlight() == 0 })
	if r := srv.Requests()[0]; r.Reply.Text != "slow" || !r.Canceled {
		t.Errorf("the slow attempt was not abandoned: %+v", r)
	}
}

func TestStalledStreamIsRetried(t *testing.T) {
	t.Parallel()
	const answer = "the whole answer"
	stall := llmtest.Turn{Text: "a beginning that goes quiet", Fail: llmtest.Stalled(2).Fail}
	srv := llmtest.New(script(stall, llmtest.Text(answer)))
	defer srv.Close()
	// RequestTimeout stays long: only the idle limit can end the stall.
	c := newClient(t, srv, func(cfg *llm.Config) { cfg.StreamIdleTimeout = 200 * time.Millisecond; cfg.RequestTimeout = time.Hour })
	var d deltas
	resp, err := c.Complete(t.Context(), request("q"), d.add)
	if err != nil || resp.Attempts != 2 || resp.Message.Content != answer {
		t.Fatalf("attempts %d content %q err %v", resp.Attempts, resp.Message.Content, err)
	}
	if content, _, resets := d.since(); content != answer || resets != 1 {
		t.Errorf("deltas after reset %q, %d resets", content, resets)
	}
	waitFor(t, func() bool { return srv.InFlight() == 0 })
	r := srv.Requests()
	// The idle timer starts after the stalled request arrived, so the retry
	// cannot arrive sooner than the idle limit after it.
	if !r[0].Canceled || r[1].Received.Sub(r[0].Received) < 200*time.Millisecond {
		t.Errorf("stalled request canceled=%v; retry %v after it began", r[0].Canceled, r[1].Received.Sub(r[0].Received))
	}

	srv2 := llmtest.New(script(stall))
	defer srv2.Close()
	_, err = newClient(t, srv2, func(cfg *llm.Config) { cfg.StreamIdleTimeout = 50 * time.Millisecond; cfg.MaxAttempts = 1 }).
		Complete(t.Context(), request("q"), nil)
	if !errors.Is(err, llm.ErrStreamStalled) || !strings.Contains(err.Error(), "nothing received for 50ms") {
		t.Errorf("err = %v, want ErrStreamStalled", err)
	}
}

func TestCancelDuringLatency(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(script(llmtest.Turn{Text: "slow", Latency: llmtest.Duration(time.Hour)}))
	defer srv.Close()
	cancelMidCall(t, srv, newClient(t, srv, nil), func() bool { return srv.InFlight() == 1 })
}

func TestCancelDuringBackoff(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(script(llmtest.RateLimited(time.Hour), llmtest.Text("never")))
	defer srv.Close()
	c := newClient(t, srv, func(cfg *llm.Config) { cfg.MaxRetryAfter = time.Hour })
	cancelMidCall(t, srv, c, func() bool { return len(srv.Requests()) == 1 })
}

// cancelMidCall starts a Complete, cancels it once reached() holds, and
// checks that it returns context.Canceled having sent exactly one request:
// a cancelled call is never retried.
func cancelMidCall(t *testing.T, srv *llmtest.Server, c *llm.OpenAIClient, reached func() bool) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := c.Complete(ctx, request("q"), nil)
		done <- err
	}()
	waitFor(t, reached)
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("err = %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Complete still running 10s after cancel")
	}
	// Complete has returned, so every request it made has reached the
	// server; once none is in flight the record is final.
	waitFor(t, func() bool { return srv.InFlight() == 0 })
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("%d requests after cancel, want 1: the cancelled call was retried", n)
	}
}

func TestAPIKeyNeverInErrors(t *testing.T) {
	t.Parallel()
	const key = "sk-live-SECRET-9f8e7d6c5b4a"
	srv := llmtest.New(script(llmtest.Turn{Fail: &llmtest.Failure{Kind: llmtest.FailStatus, Status: 401,
		Message: "Incorrect API key provided: " + key + ". Check it.", Code: "invalid_api_key"}}))
	defer srv.Close()
	c := newClient(t, srv, func(cfg *llm.Config) { cfg.APIKey = key })
	_, err := c.Complete(t.Context(), request("q"), nil)
	var apiErr *llm.APIError
	if !errors.As(err, &apiErr) {
		t.Fatalf("err = %v", err)
	}
	if strings.Contains(err.Error(), key) || strings.Contains(apiErr.Message, key) {
		t.Errorf("key leaked: %q", err)
	}
	if !strings.Contains(apiErr.Message, "Incorrect API key provided: [redacted]") {
		t.Errorf("message = %q", apiErr.Message)
	}

	// A connection error: nothing listens on the port any more.
	ln, lerr := net.Listen("tcp", "127.0.0.1:0")
	if lerr != nil {
		t.Fatal(lerr)
	}
	addr := ln.Addr().String()
	ln.Close()
	dead, err := llm.NewClient(llm.Config{BaseURL: "http://" + addr + "/v1", APIKey: key, Model: "m", MaxAttempts: 2,
		InitialBackoff: time.Millisecond, MaxBackoff: time.Millisecond}, noLog)
	if err != nil {
		t.Fatal(err)
	}
	_, err = dead.Complete(t.Context(), request("q"), nil)
	if err == nil || strings.Contains(err.Error(), key) || !strings.Contains(err.Error(), "gave up after 2 attempts") {
		t.Errorf("connection error = %v", err)
	}
}
