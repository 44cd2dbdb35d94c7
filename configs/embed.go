// Package configs holds troupe's documented default configuration,
// compiled into the binaries so they run with no file at all.
package configs

import _ "embed"

// Default is configs/default.yaml.
//
//go:embed default.yaml
var Default []byte
