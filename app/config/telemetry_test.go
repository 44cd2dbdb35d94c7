package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// telemetry.otlp_endpoint comes from a file or OTEL_EXPORTER_OTLP_ENDPOINT
// (which wins), shows in Settings with where it was set, and a malformed
// one is refused naming the setting.
func TestTelemetryEndpoint(t *testing.T) {
	c, err := Load(Sources{})
	if err != nil {
		t.Fatal(err)
	}
	if c.Telemetry.OTLPEndpoint != "" {
		t.Fatalf("default endpoint %q, want none", c.Telemetry.OTLPEndpoint)
	}
	file := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(file, []byte("telemetry:\n  otlp_endpoint: http://127.0.0.1:4318\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err = Load(Sources{File: file})
	if err != nil || c.Telemetry.OTLPEndpoint != "http://127.0.0.1:4318" || c.Validate() != nil {
		t.Fatalf("from a file: %q, %v, %v", c.Telemetry.OTLPEndpoint, err, c.Validate())
	}
	env := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "https://collector.example.org"}
	c, err = Load(Sources{File: file, Getenv: func(k string) string { return env[k] }})
	if err != nil || c.Telemetry.OTLPEndpoint != "https://collector.example.org" {
		t.Fatalf("from the environment: %q, %v", c.Telemetry.OTLPEndpoint, err)
	}
	settings, err := c.Settings()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, s := range settings {
		if s.Key == "telemetry.otlp_endpoint" {
			found = true
			if !strings.Contains(s.Value, "collector.example.org") || s.Origin != "env OTEL_EXPORTER_OTLP_ENDPOINT" {
				t.Errorf("setting %+v", s)
			}
		}
	}
	if !found {
		t.Error("telemetry.otlp_endpoint is not in Settings")
	}
	for _, bad := range []string{"127.0.0.1:4318", "grpc://127.0.0.1:4317", "http://", "http://h:4318/?x=1"} {
		c.Telemetry.OTLPEndpoint = bad
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), "telemetry.otlp_endpoint") {
			t.Errorf("endpoint %q: %v", bad, err)
		}
	}
}
