//go:build unix

package search

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// BenchmarkGrepGoroot searches the Go distribution's source tree, the tree
// tests/bench/search.sh compares with ripgrep on.
func BenchmarkGrepGoroot(b *testing.B) {
	root := filepath.Join(goroot(b), "src")
	if _, err := os.Stat(root); err != nil {
		b.Skipf("no Go source tree at %s", root)
	}
	for _, c := range []struct {
		name, pattern string
		mode          Mode
	}{
		{"literal", "ErrUnexpectedEOF", ModeFiles},
		{"smartcase", "bufio", ModeFiles},
		{"alternation", "MarshalJSON|UnmarshalJSON", ModeFiles},
		{"regex", `[A-Z][a-z]+Overflow`, ModeFiles},
		{"noliteral", `\w+\(\w+ \*\w+\)`, ModeFiles},
		{"count", `errors\.Is`, ModeCount},
	} {
		p, err := CompilePattern(c.pattern, PatternOptions{})
		if err != nil {
			b.Fatal(err)
		}
		b.Run(c.name, func(b *testing.B) {
			cpu := cpuTime()
			for b.Loop() {
				if _, err := Grep(b.Context(), Target{Root: root, Path: root, Workers: benchWorkers()}, p, GrepOptions{Mode: c.mode}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N)/1e6, "cpu-ms/op")
		})
	}
}

// BenchmarkFindGoroot walks the Go source tree for a glob.
func BenchmarkFindGoroot(b *testing.B) {
	root := filepath.Join(goroot(b), "src")
	if _, err := os.Stat(root); err != nil {
		b.Skipf("no Go source tree at %s", root)
	}
	g, _ := CompileGlob("*_test.go", true)
	for b.Loop() {
		if _, err := Find(b.Context(), Target{Root: root, Path: root}, g); err != nil {
			b.Fatal(err)
		}
	}
}

// cpuTime is the process's user and system time so far, in nanoseconds:
// on a shared machine it varies less than wall time.
func cpuTime() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// benchWorkers is SEARCH_WORKERS, to compare walker sizes (0: default).
func benchWorkers() int {
	n, _ := strconv.Atoi(os.Getenv("SEARCH_WORKERS"))
	return n
}

// goroot is the Go distribution's root as the go command reports it.
func goroot(b *testing.B) string {
	out, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		b.Skipf("go env GOROOT: %v", err)
	}
	return strings.TrimSpace(string(out))
}
