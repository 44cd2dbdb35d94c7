package llm_test

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/troupe-ai/troupe/llm"
)

// These tests play providers whose wire behaviour llmtest does not script:
// hand-written HTTP handlers on a real loopback server.

// quirkServer answers the n-th request (from 0) with answers[n], the last
// one again when they run out.
func quirkServer(t *testing.T, answers ...func(w http.ResponseWriter)) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		i := min(int(n.Add(1))-1, len(answers)-1)
		answers[i](w)
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

func sse(events ...string) func(w http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, e := range events {
			fmt.Fprintf(w, "data: %s\n\n", e)
			w.(http.Flusher).Flush()
		}
	}
}

const (
	quirkRole   = `{"id":"q","object":"chat.completion.chunk","created":1,"model":"local","choices":[{"index":0,"delta":{"role":"assistant","content":"Hel"}}]}`
	quirkMore   = `{"id":"q","object":"chat.completion.chunk","created":1,"model":"local","choices":[{"index":0,"delta":{"content":"lo"}}]}`
	quirkFinish = `{"id":"q","object":"chat.completion.chunk","created":1,"model":"local","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`
)

func quirkClient(t *testing.T, url string, edit func(*llm.Config)) *llm.OpenAIClient {
	t.Helper()
	cfg := llm.DefaultConfig()
	cfg.BaseURL, cfg.Model = url, "local"
	cfg.InitialBackoff, cfg.MaxBackoff = 0, 0
	if edit != nil {
		edit(&cfg)
	}
	cfg.InitialBackoff, cfg.MaxBackoff = 1, 1 // nanoseconds: no real wait
	c, err := llm.NewClient(cfg, noLog)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestStreamWithoutDoneAccepted(t *testing.T) {
	t.Parallel()
	// Some local servers end the body cleanly after the finish reason
	// without sending [DONE]; that answer is whole.
	srv, n := quirkServer(t, sse(quirkRole, quirkMore, quirkFinish))
	resp, err := quirkClient(t, srv.URL, nil).Complete(t.Context(), request("q"), nil)
	if err != nil || resp.Message.Content != "Hello" || resp.Attempts != 1 || n.Load() != 1 {
		t.Fatalf("content %q attempts %d requests %d err %v", resp.Message.Content, resp.Attempts, n.Load(), err)
	}
}

func TestStreamEndedCleanlyMidAnswerIsRetried(t *testing.T) {
	t.Parallel()
	// A proxy that ends the body properly in the middle of the answer: no
	// finish reason, no [DONE]. That is a cut stream.
	srv, n := quirkServer(t, sse(quirkRole), sse(quirkRole, quirkMore, quirkFinish, "[DONE]"))
	var d deltas
	resp, err := quirkClient(t, srv.URL, nil).Complete(t.Context(), request("q"), d.add)
	if err != nil || resp.Message.Content != "Hello" || resp.Attempts != 2 || n.Load() != 2 {
		t.Fatalf("content %q attempts %d requests %d err %v", resp.Message.Content, resp.Attempts, n.Load(), err)
	}
	if content, _, resets := d.since(); content != "Hello" || resets != 1 {
		t.Errorf("deltas after reset %q, %d resets", content, resets)
	}

	one, _ := quirkServer(t, sse(quirkRole))
	_, err = quirkClient(t, one.URL, func(c *llm.Config) { c.MaxAttempts = 1 }).Complete(t.Context(), request("q"), nil)
	if !errors.Is(err, llm.ErrStreamIncomplete) {
		t.Errorf("err = %v, want ErrStreamIncomplete", err)
	}
}

func TestJSONAnswerToStreamingRequest(t *testing.T) {
	t.Parallel()
	// A server that ignores "stream": true and answers one JSON document.
	srv, n := quirkServer(t, func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"x","object":"chat.completion","created":1,"model":"local",`+
			`"choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}]}`)
	})
	_, err := quirkClient(t, srv.URL, nil).Complete(t.Context(), request("q"), nil)
	if !errors.Is(err, llm.ErrNotEventStream) || !strings.Contains(err.Error(), "application/json") || n.Load() != 1 {
		t.Fatalf("err = %v after %d requests; want ErrNotEventStream at once", err, n.Load())
	}
	// The same server works with streaming off.
	resp, err := quirkClient(t, srv.URL, func(c *llm.Config) { c.Stream = false }).Complete(t.Context(), request("q"), nil)
	if err != nil || resp.Message.Content != "hi" {
		t.Fatalf("non-streaming: %q, %v", resp.Message.Content, err)
	}
}

func TestNonOpenAIErrorBodyShown(t *testing.T) {
	t.Parallel()
	srv, _ := quirkServer(t, func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(w, `{"detail":"model 'qwen9' not found, try pulling it first"}`)
	})
	_, err := quirkClient(t, srv.URL, nil).Complete(t.Context(), request("q"), nil)
	var apiErr *llm.APIError
	if !errors.As(err, &apiErr) || apiErr.Status != 404 || !strings.Contains(apiErr.Message, "try pulling it first") {
		t.Fatalf("err = %v", err)
	}
}

func TestForeignErrorBodies(t *testing.T) {
	t.Parallel()
	for body, want := range map[string]string{
		`{"error":"model \"qwen9\" not found, try pulling it first"}`:     `model "qwen9" not found, try pulling it first`,
		`{"detail":[{"loc":["body","messages"],"msg":"field required"}]}`: "field required",
		`{"message":"quota exceeded"}`:                                    "quota exceeded",
		`<html>502 Bad Gateway</html>`:                                    "<html>502 Bad Gateway</html>",
		``:                                                                "",
		`{}`:                                                              "",
	} {
		srv, _ := quirkServer(t, func(w http.ResponseWriter) {
			w.WriteHeader(http.StatusUnprocessableEntity)
			_, _ = io.WriteString(w, body)
		})
		_, err := quirkClient(t, srv.URL, nil).Complete(t.Context(), request("q"), nil)
		var apiErr *llm.APIError
		if !errors.As(err, &apiErr) || apiErr.Status != 422 || apiErr.Message != want {
			t.Errorf("body %s: err = %v, want message %q", body, err, want)
		}
	}
}

func TestShouldRetryHeaderOverrides(t *testing.T) {
	t.Parallel()
	refuse := func(w http.ResponseWriter) {
		w.Header().Set("X-Should-Retry", "false")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = io.WriteString(w, `{"error":{"message":"maintenance","type":"server_error"}}`)
	}
	srv, n := quirkServer(t, refuse, sse(quirkRole, quirkFinish, "[DONE]"))
	_, err := quirkClient(t, srv.URL, nil).Complete(t.Context(), request("q"), nil)
	var apiErr *llm.APIError
	if !errors.As(err, &apiErr) || apiErr.Status != 503 || apiErr.Retryable || n.Load() != 1 {
		t.Fatalf("err = %v after %d requests; x-should-retry: false must stop retries", err, n.Load())
	}

	conflict := func(w http.ResponseWriter) {
		w.Header().Set("X-Should-Retry", "true")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, `{"error":{"message":"try again"}}`)
	}
	srv2, n2 := quirkServer(t, conflict, sse(quirkRole, quirkFinish, "[DONE]"))
	resp, err := quirkClient(t, srv2.URL, nil).Complete(t.Context(), request("q"), nil)
	if err != nil || resp.Attempts != 2 || n2.Load() != 2 {
		t.Fatalf("attempts %d requests %d err %v; x-should-retry: true must retry", resp.Attempts, n2.Load(), err)
	}
}
