package telemetry

// Blocking makes c's span queue block when full instead of dropping, for
// benchmarks that must count every span's export.
func Blocking(c Config) Config {
	c.blocking = true
	return c
}
