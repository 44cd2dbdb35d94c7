package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/troupe-ai/troupe"

// The start-up budget of troupe's own packages, as GODEBUG=inittrace=1
// counts their package initialisation in `orchestrator version`:
// allocations and bytes are deterministic, unlike times. Heavy things
// (compiled regular expressions, tool schemas, registries, providers,
// seccomp programs, servers) are built on first use, never at init; a
// package that needs more than this says why in a change of the budget.
const (
	maxInitAllocs      = 250      // all of troupe's packages together (about 170 now)
	maxInitBytes       = 32 << 10 // all of troupe's packages together (about 20 KB now)
	maxInitAllocsOfOne = 40       // any one package (main's command tables, 30, are the largest)
)

// deps lists the packages pkg links (go list -deps) that are not ours.
func deps(t *testing.T, pkg string) []string {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", pkg)
	cmd.Dir = filepath.Join("..", "..", "..")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps %s: %v", pkg, err)
	}
	var list []string
	for _, p := range strings.Fields(string(out)) {
		if p != module && !strings.HasPrefix(p, module+"/") {
			list = append(list, p)
		}
	}
	slices.Sort(list)
	return list
}

// The floor links every package outside troupe that the orchestrator
// links and nothing more, so that comparing the two measures troupe's own
// start-up. A dependency added to or dropped from troupe fails this until
// main.go's imports follow.
func TestFloorLinksWhatOrchestratorLinks(t *testing.T) {
	t.Parallel()
	ours, floor := deps(t, "./cmd/orchestrator"), deps(t, "./tests/bench/floor")
	var missing, extra []string
	for _, p := range ours {
		if _, found := slices.BinarySearch(floor, p); !found {
			missing = append(missing, p)
		}
	}
	for _, p := range floor {
		if _, found := slices.BinarySearch(ours, p); !found {
			extra = append(extra, p)
		}
	}
	if len(missing)+len(extra) > 0 {
		t.Errorf("the floor (tests/bench/floor/main.go) does not link what cmd/orchestrator links: "+
			"it lacks %v and has %v more; import there what troupe's packages import from outside", missing, extra)
	}
}

// Package main is reported as "main": the orchestrator's is troupe's,
// the floor's has nothing to initialise.

// initCost is one package's initialisation as inittrace reports it.
type initCost struct{ bytes, allocs int }

// inittrace runs bin with GODEBUG=inittrace=1 and returns each package's
// initialisation.
func inittrace(t *testing.T, bin string, args ...string) map[string]initCost {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = nil, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %v: %v\n%s", bin, args, err, stderr.String())
	}
	out := map[string]initCost{}
	sc := bufio.NewScanner(bytes.NewReader(stderr.Bytes()))
	for sc.Scan() {
		// init PKG @T ms, C ms clock, B bytes, A allocs
		f := strings.Fields(sc.Text())
		if len(f) != 11 || f[0] != "init" || f[8] != "bytes," || f[10] != "allocs" {
			continue
		}
		b, err1 := strconv.Atoi(f[7])
		a, err2 := strconv.Atoi(f[9])
		if err1 != nil || err2 != nil {
			t.Fatalf("inittrace line %q", sc.Text())
		}
		out[f[1]] = initCost{bytes: b, allocs: a}
	}
	if len(out) == 0 {
		t.Fatalf("%s printed no inittrace lines:\n%s", bin, stderr.String())
	}
	return out
}

func build(t *testing.T, dir, pkg string) string {
	t.Helper()
	out := filepath.Join(dir, filepath.Base(pkg))
	cmd := exec.Command("go", "build", "-o", out, pkg)
	cmd.Dir = filepath.Join("..", "..", "..")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, b)
	}
	return out
}

// Start-up cannot creep: `orchestrator version` initialises the same
// packages outside troupe as the floor, and troupe's own packages stay
// within the budget above (counted, not timed). What a `tools call grep`
// adds after package initialisation is counted the same way by
// TestGrepCallWithinBudget (app/toolcli).
func TestStartupWithinBudgetOfTheFloor(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the orchestrator")
	}
	t.Parallel()
	dir := t.TempDir()
	ours := inittrace(t, build(t, dir, "./cmd/orchestrator"), "version")
	floor := inittrace(t, build(t, dir, "./tests/bench/floor"))
	var total initCost
	var report []string
	for pkg, c := range ours {
		if _, inFloor := floor[pkg]; inFloor && pkg != "main" {
			continue
		}
		if pkg != "main" && pkg != module && !strings.HasPrefix(pkg, module+"/") {
			t.Errorf("%s initialises in the orchestrator but not in the floor", pkg)
			continue
		}
		total.bytes += c.bytes
		total.allocs += c.allocs
		report = append(report, fmt.Sprintf("%s: %d B, %d allocs", strings.TrimPrefix(pkg, module+"/"), c.bytes, c.allocs))
		if c.allocs > maxInitAllocsOfOne {
			t.Errorf("%s allocates %d times at package init (at most %d): build what it needs on first use (sync.OnceValue)",
				pkg, c.allocs, maxInitAllocsOfOne)
		}
	}
	for pkg := range floor {
		if _, ok := ours[pkg]; !ok && pkg != "main" {
			t.Errorf("%s initialises in the floor but not in the orchestrator", pkg)
		}
	}
	slices.Sort(report)
	t.Logf("troupe's package initialisation: %d B, %d allocs\n%s", total.bytes, total.allocs, strings.Join(report, "\n"))
	if total.allocs > maxInitAllocs || total.bytes > maxInitBytes {
		t.Errorf("troupe's packages allocate %d times (%d B) at init, over the budget of %d (%d B)",
			total.allocs, total.bytes, maxInitAllocs, maxInitBytes)
	}
}
