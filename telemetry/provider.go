package telemetry

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/rs/zerolog"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
)

// The standard environment variables Start looks at (the SDK reads the
// rest of OTEL_EXPORTER_OTLP_*: headers, timeout, certificates).
const (
	EnvEndpoint       = "OTEL_EXPORTER_OTLP_ENDPOINT"
	EnvTracesEndpoint = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	EnvServiceName    = "OTEL_SERVICE_NAME"
	EnvSDKDisabled    = "OTEL_SDK_DISABLED"
)

// The default service names of the two programs.
const (
	ServiceOrchestrator = "troupe-orchestrator"
	ServiceNode         = "troupe-node"
)

// scope is the instrumentation scope of every span.
const scope = "github.com/troupe-ai/troupe"

// Config says where spans go.
type Config struct {
	// Endpoint is the OTLP/HTTP base URL (telemetry.otlp_endpoint, or
	// OTEL_EXPORTER_OTLP_ENDPOINT through the configuration's environment
	// layer), e.g. http://127.0.0.1:4318; spans go to its /v1/traces.
	// Empty: traces are off unless OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is
	// set.
	Endpoint string
	// Service is the default service.name; OTEL_SERVICE_NAME wins.
	Service string
	// Getenv reads the environment (os.Getenv in the programs; nil: none).
	Getenv func(string) string
	// Log gets the SDK's export errors (a collector that is down).
	Log zerolog.Logger

	blocking bool // a full span queue waits instead of dropping (benchmarks)
}

// Enabled reports whether c turns tracing on: an endpoint is set and
// OTEL_SDK_DISABLED is not true.
func (c Config) Enabled() bool {
	getenv := c.getenv()
	if strings.EqualFold(strings.TrimSpace(getenv(EnvSDKDisabled)), "true") {
		return false
	}
	return c.Endpoint != "" || getenv(EnvTracesEndpoint) != ""
}

func (c Config) getenv() func(string) string {
	if c.Getenv == nil {
		return func(string) string { return "" }
	}
	return c.Getenv
}

// Provider owns the exporter of a process's spans. The zero Provider (and
// a nil one) is off: its Tracer is the no-op Tracer and Shutdown does
// nothing.
type Provider struct {
	tp     *sdktrace.TracerProvider
	log    zerolog.Logger
	target string // where spans go, for the warning
	warned atomic.Bool
}

// Warn reports that spans could not be exported: one warning line for
// the provider's life (a collector that is down fails every batch), so an
// unreachable endpoint costs one line, not one per batch.
func (p *Provider) Warn(err error) {
	if p == nil || err == nil || !p.warned.CompareAndSwap(false, true) {
		return
	}
	p.log.Warn().Err(err).Msgf("telemetry: spans cannot be exported to %s (is the collector up?); further failures are not reported", p.target)
}

// Start returns the process's Provider: off when c is not Enabled (no
// exporter is created), else exporting over OTLP/HTTP in batches. Call
// Shutdown when the program ends to flush what is queued.
func Start(ctx context.Context, c Config) (*Provider, error) {
	if !c.Enabled() {
		return &Provider{}, nil
	}
	var opts []otlptracehttp.Option
	target := c.getenv()(EnvTracesEndpoint)
	if target == "" {
		// The signal's own variable, when set, is the SDK's to read and
		// wins; otherwise the base URL's /v1/traces.
		u, err := TracesURL(c.Endpoint)
		if err != nil {
			return nil, err
		}
		opts = append(opts, otlptracehttp.WithEndpointURL(u))
		target = u
	}
	exp, err := otlptracehttp.New(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("start the OTLP exporter: %w", err)
	}
	service := c.Service
	if service == "" {
		service = ServiceOrchestrator
	}
	// Later sources win: OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES
	// over the program's default name.
	// service.instance.id tells this process's spans from those of another
	// process of the same service (two nodes); host.name says where it ran.
	res, err := resource.New(ctx, resource.WithAttributes(semconv.ServiceName(service), semconv.ServiceInstanceID(uuid.NewString())),
		resource.WithHost(), resource.WithTelemetrySDK(), resource.WithFromEnv())
	if err != nil {
		return nil, fmt.Errorf("describe the traced process: %w", err)
	}
	p := &Provider{log: c.Log, target: target}
	// The SDK reports export failures through its one global handler.
	otel.SetErrorHandler(otel.ErrorHandlerFunc(p.Warn))
	batch := []sdktrace.BatchSpanProcessorOption{sdktrace.WithBatchTimeout(2 * time.Second)}
	if c.blocking {
		batch = append(batch, sdktrace.WithBlocking())
	}
	p.tp = sdktrace.NewTracerProvider(sdktrace.WithResource(res), sdktrace.WithBatcher(exp, batch...))
	return p, nil
}

// TracesURL is the OTLP/HTTP traces URL of a base endpoint: its path with
// /v1/traces appended. The endpoint must be an http or https URL with a
// host.
func TracesURL(endpoint string) (string, error) {
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("%w: %q is not an http:// or https:// URL with a host, e.g. http://127.0.0.1:4318", ErrEndpoint, endpoint)
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + "/v1/traces"
	return u.String(), nil
}

// Enabled reports whether p exports spans.
func (p *Provider) Enabled() bool { return p != nil && p.tp != nil }

// Tracer is p's Tracer: the no-op Tracer when p is off.
func (p *Provider) Tracer() Tracer {
	if !p.Enabled() {
		return Tracer{}
	}
	return Tracer{t: p.tp.Tracer(scope)}
}

// Shutdown flushes the queued spans and stops the exporter, within ctx.
func (p *Provider) Shutdown(ctx context.Context) error {
	if !p.Enabled() {
		return nil
	}
	if err := p.tp.Shutdown(ctx); err != nil {
		return fmt.Errorf("flush spans: %w", err)
	}
	return nil
}

// ShutdownWithin is Shutdown bounded by d, for a program's deferred exit.
func (p *Provider) ShutdownWithin(d time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return p.Shutdown(ctx)
}
