package messages

import (
	"encoding/json"
	"testing"
)

// TestBudgetPayloadsJSON pins the wire names of the budget event payloads:
// renaming a field is a version bump, so a change here must be deliberate.
func TestBudgetPayloadsJSON(t *testing.T) {
	for _, tc := range []struct {
		v    any
		want string
	}{
		{BudgetAcquired{Agent: "a1", Parent: "root", Kind: "explore", Tokens: 5000, USD: 0.25, WaitedMS: 12},
			`{"agent":"a1","parent":"root","kind":"explore","tokens":5000,"usd":0.25,"waited_ms":12}`},
		{BudgetWaiting{Agent: "a1", Kind: "explore", Position: 2, Reason: BudgetWaitSlots, Pool: "slots:explore"},
			`{"agent":"a1","kind":"explore","position":2,"reason":"slots","pool":"slots:explore"}`},
		{BudgetReleased{Agent: "a1", Used: BudgetUsage{Tokens: 10, CostUSD: 0.5, ToolCalls: 3}, Returned: 90},
			`{"agent":"a1","used":{"tokens":10,"cost_usd":0.5,"tool_calls":3},"returned":90}`},
		{BudgetAdvisory{Agent: "a1", State: BudgetStateExhausted, Remaining: -20, Text: "wrap up"},
			`{"agent":"a1","state":"exhausted","remaining":-20,"text":"wrap up"}`},
		{BudgetKindTotals{Agents: 3, Live: 1, Used: BudgetUsage{Tokens: 7}},
			`{"agents":3,"live":1,"used":{"tokens":7,"cost_usd":0,"tool_calls":0}}`},
	} {
		b, err := json.Marshal(tc.v)
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != tc.want {
			t.Errorf("%T:\n got %s\nwant %s", tc.v, b, tc.want)
		}
	}
}

func TestBudgetSnapshotRoundTrip(t *testing.T) {
	in := BudgetSnapshot{V: BudgetSnapshotVersion, Run: "r1", Limits: BudgetLimits{Tokens: 100, PerKind: map[string]int{"worker": 2}},
		Used: BudgetUsage{Tokens: 40}, Reserved: 50, Available: 10, Slots: 1, KindSlots: map[string]int{"worker": 1},
		Agents: []BudgetAgent{{Agent: "w", Kind: "worker", State: BudgetStateOK, Granted: 50, Reserved: 50, Available: 10,
			Used: BudgetUsage{Tokens: 40}, Subtree: BudgetUsage{Tokens: 40}}},
		ByKind: map[string]BudgetKindTotals{"worker": {Agents: 1, Live: 1, Used: BudgetUsage{Tokens: 40}}}}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var out BudgetSnapshot
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if out.Run != "r1" || out.Limits.PerKind["worker"] != 2 || out.Agents[0].Granted != 50 ||
		out.ByKind["worker"].Used.Tokens != 40 || out.KindSlots["worker"] != 1 || out.Agents[0].ReleasedAt != nil {
		t.Fatalf("round trip lost data:\n%s\n%+v", b, out)
	}
}
