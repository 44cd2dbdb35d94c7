package llm_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/troupe-ai/troupe/llm"
	"github.com/troupe-ai/troupe/llm/llmtest"
)

// A hostile (or broken) model's answer is refused as soon as it passes a
// cap, whatever shape the excess takes, and the client stops reading
// there: 100 MB streamed cost the process a bounded number of bytes, far
// below the answer's size, and the call was not retried.
func TestHugeAnswersRefused(t *testing.T) {
	const hundredMB = 100 << 20
	many := make([]llmtest.ToolCall, 10_000)
	for i := range many {
		many[i] = llmtest.Tool("read_file", fmt.Sprintf(`{"path":"f%d.go"}`, i))
	}
	for _, tc := range []struct {
		name   string
		turn   llmtest.Turn
		stream bool
		what   string
	}{
		{"100 MB of tool arguments, streamed", llmtest.Flooded(0, hundredMB), true, llm.LimitToolCall},
		{"100 MB of text, streamed", llmtest.Flooded(hundredMB, 0), true, llm.LimitText},
		{"10,000 tool calls, streamed", llmtest.Call(many...), true, llm.LimitToolCalls},
		{"100 MB of tool arguments, one body", llmtest.Flooded(0, hundredMB), false, llm.LimitBody},
		{"100 MB of text, one body", llmtest.Flooded(hundredMB, 0), false, llm.LimitBody},
		{"10,000 tool calls, one body", llmtest.Call(many...), false, llm.LimitToolCalls},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.New(script(tc.turn))
			defer srv.Close()
			c := newClient(t, srv, func(c *llm.Config) { c.Stream = tc.stream })
			req := request("write the biggest file you can")
			req.MaxToolCalls = 64
			var resp llm.Response
			var err error
			used := llmtest.Measure(func() { resp, err = c.Complete(context.Background(), req, nil) })
			var le *llm.LimitError
			if !errors.As(err, &le) || !errors.Is(err, llm.ErrOverLimit) || le.What != tc.what {
				t.Fatalf("err = %v, want a LimitError for %s", err, tc.what)
			}
			if !strings.Contains(err.Error(), le.Setting) || le.Setting == "" {
				t.Errorf("the error %q does not name the setting that sets the cap", err)
			}
			waitFor(t, func() bool { return srv.InFlight() == 0 })
			if resp.Attempts != 1 || len(srv.Requests()) != 1 {
				t.Errorf("attempts = %d, requests = %d: a refused answer is not retried by the client", resp.Attempts, len(srv.Requests()))
			}
			t.Logf("%s: %s; %s", tc.name, err, used)
			// The caps are 4 MiB of text and 1 MiB per call. Reading stops
			// at the first byte past one: the process allocates less than
			// the answer (decoding copies each chunk a few times), and its
			// heap stays within a few MiB of the cap.
			if used.Allocated > 96<<20 {
				t.Errorf("%s: reading did not stop at the cap", used)
			}
			if used.Peak > 40<<20 {
				t.Errorf("%s: the heap grew by more than 40 MiB (the caps are 4 MiB and 1 MiB)", used)
			}
		})
	}
}

// An answer just under each cap is taken whole: the caps refuse excess,
// not large honest answers.
func TestAnswersUnderTheCapsPass(t *testing.T) {
	for _, stream := range []bool{true, false} {
		srv := llmtest.New(script(llmtest.Flooded(3<<20, 900<<10)))
		c := newClient(t, srv, func(c *llm.Config) { c.Stream = stream })
		resp, err := c.Complete(context.Background(), request("big"), nil)
		srv.Close()
		if err != nil {
			t.Fatalf("stream=%v: %v", stream, err)
		}
		if len(resp.Message.Content) != 3<<20 || len(resp.Message.ToolCalls) != 1 ||
			len(resp.Message.ToolCalls[0].Args) != 900<<10+len(`{"content":""}`) {
			t.Fatalf("stream=%v: content %d bytes, %d calls", stream, len(resp.Message.Content), len(resp.Message.ToolCalls))
		}
	}
}

// One server-sent event that never ends (data lines without the blank
// line that closes an event) is cut at the event cap: the SDK's decoder,
// which would append every line, never sees the rest.
func TestEndlessEventRefused(t *testing.T) {
	line := "data: " + strings.Repeat("y", 60<<10) + "\n"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for range 2000 { // 120 MB, one event
			if _, err := w.Write([]byte(line)); err != nil {
				return
			}
		}
	}))
	defer srv.Close()
	cfg := llm.DefaultConfig()
	cfg.BaseURL, cfg.Model = srv.URL+"/v1", "m"
	c, err := llm.NewClient(cfg, noLog)
	if err != nil {
		t.Fatal(err)
	}
	var resp llm.Response
	used := llmtest.Measure(func() { resp, err = c.Complete(context.Background(), request("x"), nil) })
	var le *llm.LimitError
	if !errors.As(err, &le) || le.What != llm.LimitEvent {
		t.Fatalf("err = %v, want the event cap", err)
	}
	if resp.Attempts != 1 {
		t.Errorf("attempts = %d", resp.Attempts)
	}
	t.Log(used)
	if used.Allocated > 96<<20 || used.Peak > 32<<20 {
		t.Errorf("%s: the event was read past its cap", used)
	}
}
