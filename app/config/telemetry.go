package config

import "net/url"

// Telemetry configures OpenTelemetry traces (package telemetry).
type Telemetry struct {
	// OTLPEndpoint is the OTLP/HTTP base URL spans are exported to (its
	// /v1/traces), e.g. http://127.0.0.1:4318; OTEL_EXPORTER_OTLP_ENDPOINT
	// sets it too. Empty: no traces, unless
	// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT names the traces URL itself.
	OTLPEndpoint string `yaml:"otlp_endpoint"`
}

// validate reports a malformed endpoint, naming the setting.
func (t Telemetry) validate() error {
	if t.OTLPEndpoint == "" {
		return nil
	}
	u, err := url.Parse(t.OTLPEndpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return bad("telemetry.otlp_endpoint", "must be the http:// or https:// base URL of an OTLP/HTTP receiver (spans go to its /v1/traces), e.g. http://127.0.0.1:4318; got %q", t.OTLPEndpoint)
	}
	return nil
}
