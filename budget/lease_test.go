package budget

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestLeaseLifecycle(t *testing.T) {
	f := start(t, Limits{Tokens: 1000})
	root := f.acquire(t, "root", "", "root", 400)
	if root.Tokens != 400 || root.Ticket != 1 || root.Order != 1 || root.Parent != "" {
		t.Fatalf("root lease = %+v", root)
	}
	f.acquire(t, "c1", "root", "explore", 150)

	s := f.snap(t)
	if s.Reserved != 400 || s.Available != 600 || s.Slots != 2 {
		t.Fatalf("run: reserved %d available %d slots %d, want 400 600 2", s.Reserved, s.Available, s.Slots)
	}
	if r := agentLine(t, s, "root"); r.Granted != 400 || r.Reserved != 400 || r.Available != 250 || r.Children != 1 {
		t.Fatalf("root line = %+v", r)
	}
	if c := agentLine(t, s, "c1"); c.Parent != "root" || c.Kind != "explore" || c.Reserved != 150 {
		t.Fatalf("c1 line = %+v", c)
	}

	u, err := f.cl.Usage(ctxT(t), Usage{Agent: "root", Tokens: 50, Cost: 0.01, ToolCalls: 2})
	if err != nil || u.State != StateOK || u.Remaining != 200 || u.Used != 50 || u.Lent != 150 {
		t.Fatalf("root usage = %+v, %v; want ok, 200 left, 50 used, 150 lent", u, err)
	}
	u, err = f.cl.Usage(ctxT(t), Usage{Agent: "c1", Tokens: 100, ToolCalls: 3})
	if err != nil || u.State != StateOK || u.Remaining != 50 {
		t.Fatalf("c1 usage = %+v, %v; want ok, 50 left", u, err)
	}
	s = f.snap(t)
	if r := agentLine(t, s, "root"); r.Used.Tokens != 50 || r.Subtree.Tokens != 150 || r.Subtree.ToolCalls != 5 {
		t.Fatalf("root totals = used %+v subtree %+v", r.Used, r.Subtree)
	}
	if s.ByKind["explore"].Used.Tokens != 100 || s.ByKind["root"].Live != 1 {
		t.Fatalf("by kind = %+v", s.ByKind)
	}

	// Release reports 120 used: the 20 not yet reported are charged, 30 go back.
	rel := f.release(t, "c1", 120)
	if rel.Returned != 30 || rel.Used.Tokens != 120 || rel.Already {
		t.Fatalf("release c1 = %+v, want 30 returned, 120 used", rel)
	}
	if r := agentLine(t, f.snap(t), "root"); r.Available != 400-50-120 || r.Children != 0 {
		t.Fatalf("root after child release = %+v", r)
	}
	rel = f.release(t, "root", 0)
	if rel.Returned != 400-170 {
		t.Fatalf("release root returned %d, want %d", rel.Returned, 400-170)
	}
	s = f.snap(t)
	if s.Reserved != 0 || s.Slots != 0 || s.Available != 1000-170 || s.Used.Tokens != 170 {
		t.Fatalf("run after all released: %+v", s)
	}
	if again := f.release(t, "root", 0); !again.Already || again.Returned != 0 {
		t.Fatalf("second release = %+v, want Already and nothing returned", again)
	}
}

func TestSubtreeDrawsFromParentGrant(t *testing.T) {
	f := start(t, Limits{Tokens: 10_000})
	f.acquire(t, "root", "", "root", 100)
	_, err := f.cl.Acquire(ctxT(t), Acquire{Agent: "big", Parent: "root", Kind: "worker", Estimate: 150}, nil)
	if !errors.Is(err, ErrLimitExceeded) {
		t.Fatalf("child larger than its parent's grant: err %v, want ErrLimitExceeded", err)
	}
	f.acquire(t, "w1", "root", "worker", 60)
	p := f.acquireAsync(ctxT(t), Acquire{Agent: "w2", Parent: "root", Kind: "worker", Estimate: 60})
	q := p.mustQueue(t)
	if q.Reason != "tokens" || q.Pool != "root" || q.Position != 1 {
		t.Fatalf("queued = %+v, want tokens from root at position 1", q)
	}
	// The run has 9,900 free tokens, but w2 draws from root only.
	f.release(t, "w1", 10)
	r := p.wait(t)
	if r.err != nil || r.lease.Tokens != 60 {
		t.Fatalf("w2 = %+v", r)
	}
	if got := agentLine(t, f.snap(t), "root").Available; got != 100-10-60 {
		t.Fatalf("root available %d, want 30", got)
	}
}

func TestTopUp(t *testing.T) {
	f := start(t, Limits{Tokens: 1000})
	f.acquire(t, "root", "", "root", 300)
	f.acquire(t, "child", "root", "worker", 200)

	// The child uses its lease up; 100 more come from root's free 100.
	u, err := f.cl.Usage(ctxT(t), Usage{Agent: "child", Tokens: 200, TopUp: 100})
	if err != nil || u.State != StateOK || u.ToppedUp != 100 || u.Granted != 300 || u.Remaining != 100 {
		t.Fatalf("usage with top-up = %+v, %v", u, err)
	}
	// It overshoots by 50; root has nothing left: exhausted.
	u, err = f.cl.Usage(ctxT(t), Usage{Agent: "child", Tokens: 150, TopUp: 100})
	if err != nil || u.State != StateExhausted || u.ToppedUp != 0 || u.Remaining != -50 {
		t.Fatalf("overshooting usage = %+v, %v", u, err)
	}
	if r := agentLine(t, f.snap(t), "root"); r.Reserved != 350 || r.Available != -50 {
		t.Fatalf("root carries the overshoot: %+v", r)
	}
	// Root tops up from the run (650 free), then the child from root.
	u, err = f.cl.TopUp(ctxT(t), TopUp{Agent: "root", Want: 500})
	if err != nil || u.ToppedUp != 500 || u.Remaining != 450 {
		t.Fatalf("root top-up = %+v, %v", u, err)
	}
	u, err = f.cl.TopUp(ctxT(t), TopUp{Agent: "child", Want: 100})
	if err != nil || u.ToppedUp != 100 || u.State != StateOK || u.Remaining != 50 {
		t.Fatalf("child top-up = %+v, %v", u, err)
	}
	if s := f.snap(t); s.Reserved != 800 || s.Available != 200 {
		t.Fatalf("run reserved %d available %d, want 800 200", s.Reserved, s.Available)
	}
}

func TestTopUpLeavesWhatWaitersNeed(t *testing.T) {
	f := start(t, Limits{Tokens: 100})
	f.acquire(t, "a", "", "root", 60)
	p := f.acquireAsync(ctxT(t), Acquire{Agent: "b", Kind: "root", Estimate: 50})
	p.mustQueue(t)
	u, err := f.cl.TopUp(ctxT(t), TopUp{Agent: "a", Want: 40})
	if err != nil || u.ToppedUp != 0 {
		t.Fatalf("top-up took tokens a queued acquire waits for: %+v, %v", u, err)
	}
	f.release(t, "a", 0)
	if r := p.wait(t); r.err != nil {
		t.Fatalf("b: %v", r.err)
	}
}

func TestRunExhaustion(t *testing.T) {
	f := start(t, Limits{Tokens: 1000})
	f.acquire(t, "r1", "", "root", 500)
	f.acquire(t, "r2", "", "root", 500)
	u, _ := f.cl.Usage(ctxT(t), Usage{Agent: "r1", Tokens: 600})
	if u.State != StateExhausted {
		t.Fatalf("r1 over its lease: %+v, want exhausted", u)
	}
	u, _ = f.cl.Usage(ctxT(t), Usage{Agent: "r2", Tokens: 300})
	if u.State != StateOK || u.Remaining != 200 {
		t.Fatalf("r2 within its lease: %+v", u)
	}
	if s := f.snap(t); s.Exhausted {
		t.Fatal("run exhausted at 900 of 1000 tokens")
	}
	u, _ = f.cl.Usage(ctxT(t), Usage{Agent: "r2", Tokens: 150})
	if u.State != StateExhausted {
		t.Fatalf("r2 after the run passed its limit: %+v", u)
	}
	if _, err := f.cl.Acquire(ctxT(t), Acquire{Agent: "r3", Kind: "root", Estimate: 1}, nil); !errors.Is(err, ErrBudgetExhausted) {
		t.Fatalf("acquire on exhausted run: %v", err)
	}
	if u, _ := f.cl.TopUp(ctxT(t), TopUp{Agent: "r2", Want: 10}); u.ToppedUp != 0 || u.State != StateExhausted {
		t.Fatalf("top-up on exhausted run: %+v", u)
	}
	s := f.snap(t)
	if !s.Exhausted || s.ExhaustedBy != "tokens" || s.Used.Tokens != 1050 {
		t.Fatalf("snapshot: exhausted %v by %q used %d", s.Exhausted, s.ExhaustedBy, s.Used.Tokens)
	}
}

func TestDollarLimit(t *testing.T) {
	f := start(t, Limits{Tokens: 1000, USD: 1.0})
	a := f.acquire(t, "a", "", "root", 500) // no EstimateUSD: half the tokens, half the dollars
	if a.USD != 0.5 {
		t.Fatalf("lease USD = %v, want 0.5", a.USD)
	}
	_, err := f.cl.Acquire(ctxT(t), Acquire{Agent: "c", Kind: "root", Estimate: 10, EstimateUSD: 2}, nil)
	if !errors.Is(err, ErrLimitExceeded) {
		t.Fatalf("acquire of $2 under a $1 limit: %v", err)
	}
	p := f.acquireAsync(ctxT(t), Acquire{Agent: "b", Kind: "root", Estimate: 100, EstimateUSD: 0.6})
	if q := p.mustQueue(t); q.Reason != "tokens" || q.Pool != "run" {
		t.Fatalf("b waits for dollars: %+v", q)
	}
	u, _ := f.cl.Usage(ctxT(t), Usage{Agent: "a", Tokens: 10, Cost: 0.5})
	if u.State != StateExhausted {
		t.Fatalf("a spent its dollars: %+v", u)
	}
	// a ends having spent $0.50 for good: b's $0.60 can never fit any more.
	f.release(t, "a", 0)
	if r := p.wait(t); !errors.Is(r.err, ErrLimitExceeded) {
		t.Fatalf("b after the pool shrank for good: %v", r.err)
	}
	f.acquire(t, "d", "", "root", 100)
	f.cl.Usage(ctxT(t), Usage{Agent: "d", Tokens: 10, Cost: 0.5})
	if s := f.snap(t); !s.Exhausted || s.ExhaustedBy != "usd" || s.Used.CostUSD != 1.0 {
		t.Fatalf("run at $1.00: exhausted %v by %q cost %v", s.Exhausted, s.ExhaustedBy, s.Used.CostUSD)
	}
}

func TestToolCallLimit(t *testing.T) {
	f := start(t, Limits{Tokens: 1000, ToolCalls: 5})
	f.acquire(t, "a", "", "root", 100)
	if u, _ := f.cl.Usage(ctxT(t), Usage{Agent: "a", Tokens: 1, ToolCalls: 4}); u.State != StateOK {
		t.Fatalf("4 of 5 tool calls: %+v", u)
	}
	if u, _ := f.cl.Usage(ctxT(t), Usage{Agent: "a", Tokens: 1, ToolCalls: 1}); u.State != StateExhausted {
		t.Fatalf("5 of 5 tool calls: %+v", u)
	}
	if s := f.snap(t); s.ExhaustedBy != "tool_calls" {
		t.Fatalf("exhausted by %q", s.ExhaustedBy)
	}
}

func TestReleaseParentReleasesDescendants(t *testing.T) {
	f := start(t, Limits{Tokens: 1000, MaxConcurrent: 10})
	f.acquire(t, "root", "", "root", 500)
	f.acquire(t, "w", "root", "worker", 200)
	f.acquire(t, "e", "w", "explore", 50)
	f.cl.Usage(ctxT(t), Usage{Agent: "e", Tokens: 30})
	p := f.acquireAsync(ctxT(t), Acquire{Agent: "e2", Parent: "w", Kind: "explore", Estimate: 190})
	p.mustQueue(t)

	f.release(t, "root", 0)
	if r := p.wait(t); !errors.Is(r.err, ErrReleased) {
		t.Fatalf("child queued on a released parent: %v", r.err)
	}
	s := f.snap(t)
	if s.Slots != 0 || s.Reserved != 0 || s.Available != 970 || s.Waiting != 0 {
		t.Fatalf("run after releasing the tree: %+v", s)
	}
	for _, a := range s.Agents {
		if a.State != StateReleased || a.Reserved != 0 {
			t.Fatalf("%s: state %s reserved %d", a.Agent, a.State, a.Reserved)
		}
	}
	if w := agentLine(t, s, "w"); w.Subtree.Tokens != 30 || w.Descendants != 1 {
		t.Fatalf("w rollup = %+v", w)
	}
}

func TestSnapshotWire(t *testing.T) {
	f := start(t, Limits{Tokens: 1000, PerKind: map[string]int{"explore": 2}})
	f.acquire(t, "root", "", "root", 100)
	b, err := json.Marshal(f.snap(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{`"v":1`, `"run":"run1"`, `"per_kind":{"explore":2}`, `"kind_slots":{"root":1}`,
		`"agents":[{"agent":"root"`, `"tool_calls":0`, `"by_kind":{"root":`} {
		if !strings.Contains(string(b), key) {
			t.Errorf("snapshot JSON lacks %s: %s", key, b)
		}
	}
}
