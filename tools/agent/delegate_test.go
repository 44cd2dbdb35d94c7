package agent

import (
	"encoding/json"
	"testing"

	"github.com/troupe-ai/troupe/tools"
)

// delegate declares what it changes with the tool: not read-only, but as
// mutating as the kind a call starts (Spawns reads it from the call);
// its own calls change nothing (Mutates), so the executor neither orders
// nor invalidates around them. Its result and check_agent's are capped
// once, by the parent's result_cap: neither declares a cap of its own.
func TestDelegateDeclaresItsMutability(t *testing.T) {
	t.Parallel()
	s := Delegate().Spec()
	if s.ReadOnly || s.Spawns == nil || s.Mutates() {
		t.Fatalf("delegate: read-only %v, spawns %v, mutates %v", s.ReadOnly, s.Spawns != nil, s.Mutates())
	}
	for args, want := range map[string]string{
		`{"type":" worker ","task":"edit"}`: "worker",
		`{"type":"explore","task":"look"}`:  "explore",
		`{"task":"look"}`:                   "",
		`{"type":7}`:                        "",
		`not json`:                          "",
	} {
		got, ok := s.Spawns(json.RawMessage(args))
		if got != want || ok != (want != "") {
			t.Errorf("Spawns(%s) = %q, %v; want %q", args, got, ok, want)
		}
	}
	for _, tool := range []tools.Tool{Delegate(), CheckAgent(), CancelAgent()} {
		if tr := tool.Spec().Truncation; tr.Strategy != tools.NoTruncation {
			t.Errorf("%s caps its output itself (%+v): the child's result would be capped twice", tool.Spec().Name, tr)
		}
	}
}
