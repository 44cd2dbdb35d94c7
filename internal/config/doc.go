// Package config loads, layers and validates troupe's configuration.
//
// Layers, later ones winning: the defaults compiled in from
// configs/default.yaml; ~/.config/troupe/config.yaml; the workspace's
// .troupe/config.yaml; the file named by --config; the environment
// (OPENAI_API_KEY, OPENAI_BASE_URL, TROUPE_MODEL, TROUPE_CHEAP_MODEL,
// TROUPE_NATS_URL); flags, applied by the caller. A config is a value:
// Load returns it, Validate checks it and names the field at fault. An
// unknown key in a file is an error, so a typo never goes unnoticed.
package config
