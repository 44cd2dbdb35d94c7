package setup

import (
	"testing"

	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/telemetry"
)

// No endpoint in the config nor the environment: no exporter is created
// and the tracer is off. A malformed one is refused.
func TestTracingOffWithoutEndpoint(t *testing.T) {
	p, stop, err := Tracing(t.Context(), "", telemetry.ServiceNode, func(string) string { return "" }, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	if p.Enabled() || p.Tracer().Enabled() {
		t.Fatal("tracing is on without an endpoint")
	}
	if _, _, err := Tracing(t.Context(), "localhost:4318", telemetry.ServiceNode, nil, zerolog.Nop()); err == nil {
		t.Fatal("an endpoint without a scheme was accepted")
	}
}
