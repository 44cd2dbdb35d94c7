package telemetry

import "errors"

// ErrEndpoint is a malformed OTLP endpoint.
var ErrEndpoint = errors.New("telemetry: bad OTLP endpoint")
