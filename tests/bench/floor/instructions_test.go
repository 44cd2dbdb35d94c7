package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/troupe-ai/troupe/internal/peer"
)

// maxStartupRatio is issue 34's bound: `orchestrator version` and `tools
// call grep` on a 10-file directory cost at most this many times what the
// floor costs.
const maxStartupRatio = 1.10

// startupRuns is how many times each command runs under callgrind; the
// fewest instructions of its runs is its figure (a run only ever gains
// instructions: a goroutine spinning while the scheduler looks for work).
const startupRuns = 3

var collected = regexp.MustCompile(`Collected : (\d+)`)

// instructions runs bin args under callgrind and returns the instructions
// it executed, start to exit. Both sides run on one P (GOMAXPROCS=1):
// callgrind runs one thread at a time anyway, and idle Ps looking for work
// spin for a count that varies by 2 % from run to run (0.2 % on one P).
// Asynchronous preemption is off: its signals trip callgrind (valgrind
// 3.19).
func instructions(t *testing.T, valgrind, home, bin string, args ...string) int64 {
	t.Helper()
	cmd := exec.Command(valgrind, append([]string{"--tool=callgrind", "--callgrind-out-file=/dev/null", bin}, args...)...)
	cmd.Env = append(os.Environ(), "GODEBUG=asyncpreemptoff=1", "GOMAXPROCS=1", "HOME="+home,
		"XDG_STATE_HOME="+filepath.Join(home, "state"), "XDG_CONFIG_HOME="+filepath.Join(home, "config"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("callgrind %s %v: %v\n%s", bin, args, err, stderr.String())
	}
	m := collected.FindSubmatch(stderr.Bytes())
	if m == nil {
		t.Fatalf("callgrind %s %v said no instruction count:\n%s", bin, args, stderr.String())
	}
	n, err := strconv.ParseInt(string(m[1]), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// fewest is the fewest instructions of startupRuns runs.
func fewest(t *testing.T, valgrind, home, bin string, args ...string) int64 {
	t.Helper()
	var least int64
	for range startupRuns {
		if n := instructions(t, valgrind, home, bin, args...); least == 0 || n < least {
			least = n
		}
	}
	return least
}

// Start-up stays at its floor: counted in instructions under callgrind
// (the same count on an idle and a loaded machine, unlike time),
// `orchestrator version` and `tools call grep` over ten small files cost
// at most maxStartupRatio times the floor, a main that links the same
// packages outside troupe and does nothing (main.go: it reaches the HTML
// parser tools/web calls, whose tables the linker would otherwise drop).
func TestStartupInstructionsWithinTheFloor(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the orchestrator and runs it under valgrind")
	}
	valgrind := peer.Need(t, "valgrind")
	dir, home, ten := t.TempDir(), t.TempDir(), t.TempDir()
	for i := 1; i <= 10; i++ {
		src := fmt.Sprintf("package p\n\n// F%d says hello.\nfunc F%d() string { return \"hello %d\" }\n", i, i, i)
		if err := os.WriteFile(filepath.Join(ten, fmt.Sprintf("f%d.go", i)), []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ours, floorBin := build(t, dir, "./cmd/orchestrator"), build(t, dir, "./tests/bench/floor")
	floor := fewest(t, valgrind, home, floorBin)
	for _, c := range []struct {
		name string
		args []string
	}{
		{"version", []string{"version"}},
		{"tools call grep", []string{"tools", "call", "grep", `{"pattern":"hello"}`, "--workspace", ten}},
	} {
		n := fewest(t, valgrind, home, ours, c.args...)
		ratio := float64(n) / float64(floor)
		t.Logf("%s: %d instructions, the floor %d: %.3fx", c.name, n, floor, ratio)
		if ratio > maxStartupRatio {
			t.Errorf("orchestrator %s costs %.3fx the floor's instructions (%d vs %d), over %.2fx: "+
				"something initialises or runs that the command does not need (GODEBUG=inittrace=1, tests/bench/startup.sh)",
				c.name, ratio, n, floor, maxStartupRatio)
		}
	}
}
