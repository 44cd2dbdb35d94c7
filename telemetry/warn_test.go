package telemetry_test

import (
	"bytes"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"go.opentelemetry.io/otel"

	"github.com/troupe-ai/troupe/internal/testport"
	"github.com/troupe-ai/troupe/telemetry"
)

// A collector that is down fails every batch, and the flush at exit: the
// SDK's failures and the flush's come to one warning line naming where
// the spans were to go.
func TestExportFailuresWarnOnce(t *testing.T) {
	endpoint := "http://127.0.0.1:" + strconv.Itoa(testport.Free(t))
	var buf bytes.Buffer
	p, err := telemetry.Start(t.Context(), telemetry.Config{Endpoint: endpoint, Getenv: env(nil), Log: zerolog.New(&buf)})
	if err != nil {
		t.Fatal(err)
	}
	_, s := p.Tracer().StartAgent(t.Context(), telemetry.Agent{Run: "r", ID: "root", Kind: "root"})
	s.EndAgent(telemetry.AgentEnd{Status: "completed"})
	for range 3 { // three failed batches, as the SDK reports them
		otel.Handle(errors.New("connection refused"))
	}
	p.Warn(p.ShutdownWithin(5 * time.Second))
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 1 || !strings.Contains(lines[0], endpoint) {
		t.Errorf("want one warning naming %s, got %d:\n%s", endpoint, len(lines), buf.String())
	}
}
