package toolcli

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// The budget of one `tools call grep` over ten small files in a process
// of its own, after package initialisation (which TestStartupWithinBudget
// OfTheFloor in tests/bench/floor counts): configuration, tool set,
// session, argument validation and the search, first uses included.
// Counted in allocations and bytes, which do not depend on the machine's
// load as times do. About 680 allocations and 156 KB now; the YAML
// defaults decoded on every call made it 3,600 (475 KB), every tool
// built for each built-in kind's tool set 1,790, grep's JSON Schema built
// to check plainly valid arguments 880 (225 KB).
const (
	maxGrepCallAllocs = 800
	maxGrepCallBytes  = 200 << 10
)

const grepChildEnv = "TROUPE_TEST_GREP_CALL_CHILD"

// tools call grep cannot creep back up: what a grep call allocates in a
// fresh process (a child of this test binary, so that nothing is warm:
// no schema built, no JSON decoder cached) stays within the budget.
func TestGrepCallWithinBudget(t *testing.T) {
	if os.Getenv(grepChildEnv) != "" {
		grepCallChild(t)
		return
	}
	ws, home := t.TempDir(), t.TempDir()
	for i := 1; i <= 10; i++ {
		src := fmt.Sprintf("package p\n\n// F%d says hello.\nfunc F%d() string { return \"hello %d\" }\n", i, i, i)
		if err := os.WriteFile(filepath.Join(ws, fmt.Sprintf("f%d.go", i)), []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestGrepCallWithinBudget$", "-test.count=1")
	cmd.Env = append(os.Environ(), grepChildEnv+"="+ws, "HOME="+home, "XDG_STATE_HOME="+filepath.Join(home, "state"),
		"XDG_CONFIG_HOME="+filepath.Join(home, "config"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	var allocs, bytes uint64
	var files int
	for _, line := range strings.Split(string(out), "\n") {
		if _, err := fmt.Sscanf(line, "grep call: %d allocs, %d bytes, %d files", &allocs, &bytes, &files); err == nil {
			break
		}
	}
	if files != 10 {
		t.Fatalf("the child's grep found %d files, want 10:\n%s", files, out)
	}
	t.Logf("one tools call grep over ten files: %d allocations, %d bytes", allocs, bytes)
	maxBytes := uint64(maxGrepCallBytes)
	if raceBuild {
		maxBytes *= 2 // pools drop buffers at random: the count is the check
	}
	if allocs > maxGrepCallAllocs || bytes > maxBytes {
		t.Errorf("a tools call grep allocates %d times (%d B), over the budget of %d (%d B): build only what a grep call needs",
			allocs, bytes, maxGrepCallAllocs, maxBytes)
	}
}

// grepCallChild makes the one call and prints what it allocated.
func grepCallChild(t *testing.T) {
	o := Options{Workspace: os.Getenv(grepChildEnv), Getenv: func(string) string { return "" }, Stderr: os.Stderr}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	res, err := Call(t.Context(), o, "grep", json.RawMessage(`{"pattern":"hello"}`))
	runtime.ReadMemStats(&after)
	if err != nil || res.IsError {
		t.Fatalf("grep: %+v %v", res, err)
	}
	fmt.Printf("grep call: %d allocs, %d bytes, %d files\n", after.Mallocs-before.Mallocs, after.TotalAlloc-before.TotalAlloc,
		strings.Count(strings.TrimSpace(res.Text), "\n")+1)
}
