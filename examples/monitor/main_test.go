package main

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/bus"
	"github.com/troupe-ai/troupe/llm"
	"github.com/troupe-ai/troupe/llm/llmtest"
)

type syncBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuf) Write(p []byte) (int, error) { s.mu.Lock(); defer s.mu.Unlock(); return s.b.Write(p) }
func (s *syncBuf) String() string              { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// The monitor, subscribed to a real server, prints the agents of a real
// scripted run as they start and end, then the run's tree.
func TestMonitor(t *testing.T) {
	emb, err := bus.StartEmbedded(t.Context(), bus.EmbeddedOptions{Ephemeral: true}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer emb.Shutdown(context.Background())
	var out, errb syncBuf
	done := make(chan int)
	go func() { done <- run(t.Context(), []string{"--nats", emb.URL(), "--once"}, &out, &errb) }()
	for !strings.Contains(errb.String(), "monitoring") {
		select {
		case code := <-done:
			t.Fatalf("monitor exited %d: %s", code, errb.String())
		case <-time.After(5 * time.Millisecond):
		}
	}
	conn, err := bus.Connect(t.Context(), bus.ConnectOptions{URLs: emb.URL()}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.EnsureStreams(t.Context(), bus.StreamLimits{}); err != nil {
		t.Fatal(err)
	}
	pub, err := conn.NewPublisher(bus.PublisherOptions{})
	if err != nil {
		t.Fatal(err)
	}
	srv := llmtest.New(llmtest.Script{Agents: []llmtest.AgentScript{
		{Match: llmtest.Matcher{Kind: "root"}, Turns: []llmtest.Turn{
			{ToolCalls: []llmtest.ToolCall{{Name: "delegate", Args: json.RawMessage(`{"type":"explore","task":"look"}`)}}},
			{Text: "done"}}},
		{Match: llmtest.Matcher{Kind: "explore"}, Turns: []llmtest.Turn{{Text: "x.go:1"}}},
	}})
	defer srv.Close()
	client, _ := llm.NewClient(llm.Config{BaseURL: srv.URL(), Model: "m", Stream: true}, zerolog.Nop())
	res, err := actors.Run(t.Context(), actors.Options{Run: "monitored", Workspace: t.TempDir(), Task: "t", Client: client,
		Models: actors.Models{Default: "m"}, Events: pub, Log: zerolog.Nop(),
		Settings: actors.Settings{PlanFirst: map[string]bool{"root": false}}})
	if err != nil || res.Status != actors.StatusCompleted {
		t.Fatalf("run %+v %v", res, err)
	}
	if err := pub.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("exit %d", code)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("the monitor never saw run.finished:\n%s", out.String())
	}
	text := out.String()
	for _, want := range []string{"root                 started (root)", "completed:", "run monitore · finished · 2 agents", "\n    explore-"} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
}
