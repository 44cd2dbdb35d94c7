//go:build !race

package cluster

// raceEnabled says the test binary runs under the race detector.
const raceEnabled = false
