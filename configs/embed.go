// Package configs holds troupe's documented default configuration,
// compiled into the binaries so they run with no file at all, and the
// public types of its agent and kinds sections (Agent, Kind), which the
// actors package uses as Settings and Kind.
package configs

import _ "embed"

// Default is configs/default.yaml.
//
//go:embed default.yaml
var Default []byte
