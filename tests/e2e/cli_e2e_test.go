package e2e

import (
	"strings"
	"testing"
	"time"
)

// demo --nodes 2 runs the explore agents on two node processes: the live
// view (one line per event off a terminal) shows them placed remotely,
// the nodes get ready, and the demo ends with its answer.
func TestDemoWithNodes(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process")
	}
	d := start(t, bin.orchestrator, []string{"OPENAI_API_KEY=", "OPENAI_BASE_URL=", "TROUPE_NATS_URL=", "NO_COLOR=1"}, "demo", "--nodes", "2")
	if code := d.wait(3 * time.Minute); code != 0 {
		t.Fatalf("demo --nodes 2 exited %d:\n%s", code, d.errs())
	}
	errs := d.errs()
	for _, want := range []string{"the MODEL IS SCRIPTED", "watch it from another terminal: orchestrator watch --nats nats://127.0.0.1:",
		" --from-start\n", // the run's WatchCommand: it works whenever it is copied
		"ready: kinds explore", "(remote)", "explore-", "finished after", "whole run: 7 agents"} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errs)
		}
	}
	if strings.Contains(errs, "\x1b[") {
		t.Error("colour codes off a terminal")
	}
	if !strings.HasPrefix(d.out(), "Done.") {
		t.Errorf("stdout %q", d.out())
	}
}

// The node program explains itself and says what it is.
func TestNodeHelpAndVersion(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process")
	}
	h := start(t, bin.node, nil, "--help")
	if code := h.wait(30 * time.Second); code != 0 || !strings.HasPrefix(h.out(), "Usage: node --nats URL") || !strings.Contains(h.out(), "Examples:") {
		t.Errorf("node --help: exit %d\n%s%s", code, h.out(), h.errs())
	}
	v := start(t, bin.node, nil, "version")
	if code := v.wait(30 * time.Second); code != 0 || !strings.HasPrefix(v.out(), "node ") || !strings.Contains(v.out(), " go1.") {
		t.Errorf("node version: exit %d %q", code, v.out())
	}
	n := start(t, bin.node, []string{"TROUPE_NATS_URL="}, "--workspace", t.TempDir())
	if code := n.wait(30 * time.Second); code != 2 || !strings.Contains(n.errs(), "no NATS server: give --nats URL") {
		t.Errorf("node without --nats: exit %d\n%s", code, n.errs())
	}
}
