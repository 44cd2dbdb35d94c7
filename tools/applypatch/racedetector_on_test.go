//go:build race

package applypatch

// raceDetector reports whether the tests run under the race detector,
// which makes each tool call ten to twenty times slower.
const raceDetector = true
