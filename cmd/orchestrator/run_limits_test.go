package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/troupe-ai/troupe/bus"
	"github.com/troupe-ai/troupe/llm/llmtest"
)

// A run against a server whose events stream exists applies the limits its
// configuration sets (events_max_age here) and keeps the others as the
// operator left them (max bytes), with the stream's events kept.
func TestRunAppliesConfiguredStreamLimits(t *testing.T) {
	e, c := embeddedServer(t)
	if err := c.EnsureStreams(t.Context(), bus.StreamLimits{EventsMaxAge: 3 * time.Hour, EventsMaxBytes: 5 << 20}); err != nil {
		t.Fatal(err)
	}
	ws := t.TempDir()
	cfg := filepath.Join(t.TempDir(), "limits.yaml")
	if err := os.WriteFile(cfg, []byte("nats:\n  events_max_age: 2h\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := scripted(t, llmtest.Turn{Text: "done"})
	code, out, errs := runCmd(t, t.Context(), testEnv(srv, t.TempDir()), false, "--workspace", ws, "--model", "m1",
		"--nats", e.URL(), "--config", cfg, "--quiet", "say done")
	if code != exitOK || out != "done\n" {
		t.Fatalf("exit %d, stdout %q, stderr %s", code, out, errs)
	}
	s, err := c.JetStream().Stream(t.Context(), bus.EventsStream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(t.Context(), jetstream.WithDeletedDetails(false))
	if err != nil {
		t.Fatal(err)
	}
	if info.Config.MaxAge != 2*time.Hour || info.Config.MaxBytes != 5<<20 || info.State.Msgs == 0 {
		t.Fatalf("stream after the run: max age %v, max bytes %d, %d events; want 2h, 5242880 and the run's events",
			info.Config.MaxAge, info.Config.MaxBytes, info.State.Msgs)
	}
}
