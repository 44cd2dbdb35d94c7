// Package config loads, layers and validates troupe's configuration.
//
// Layers, later ones winning: the defaults compiled in from
// configs/default.yaml (as a Go value, defaults_value.go, generated from
// the file and checked against it by TestDefaultsGoValue, so that no
// command decodes YAML before it starts); ~/.config/troupe/config.yaml; the workspace's
// .troupe/config.yaml; the file named by --config; the environment
// (OPENAI_API_KEY, OPENAI_BASE_URL, TROUPE_MODEL, TROUPE_CHEAP_MODEL,
// TROUPE_NATS_URL, ...); flags, applied by the caller, who records them
// with SetByFlag. A config is a value: Load returns it, remembering where
// each setting that is not a default was set (a file and line, a variable);
// Validate checks it, and its error names the setting, where it was set
// and the values it accepts, in words; Settings lists every value with its
// origin (config print). An unknown key in a file is an error, so a typo
// never goes unnoticed.
package config
