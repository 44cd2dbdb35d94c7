package setup

import (
	"context"
	"fmt"
	"time"

	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/telemetry"
)

// flushTimeout bounds how long a program waits, on its way out, for its
// queued spans to reach the collector.
const flushTimeout = 5 * time.Second

// Tracing starts the process's span exporter: off (no exporter, a no-op
// Tracer) unless endpoint (telemetry.otlp_endpoint, which
// OTEL_EXPORTER_OTLP_ENDPOINT sets) or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT
// is set. service is the default service.name (OTEL_SERVICE_NAME wins).
// The returned stop flushes and closes it; the program calls it once as
// it ends. Export failures are logged as warnings, never fatal.
func Tracing(ctx context.Context, endpoint, service string, getenv func(string) string, log zerolog.Logger) (*telemetry.Provider, func(), error) {
	p, err := telemetry.Start(ctx, telemetry.Config{Endpoint: endpoint, Service: service, Getenv: getenv, Log: log})
	if err != nil {
		return nil, func() {}, fmt.Errorf("telemetry: %w", err)
	}
	stop := func() {
		p.Warn(p.ShutdownWithin(flushTimeout)) // one line at most, export failures included
	}
	return p, stop, nil
}
