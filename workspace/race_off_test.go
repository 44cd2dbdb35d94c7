//go:build !race

package workspace

// raceEnabled says the test binary runs under the race detector.
const raceEnabled = false
