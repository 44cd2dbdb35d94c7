package budget

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestSpawnRejectsBadLimits(t *testing.T) {
	sys := newSystem(t)
	for _, tc := range []struct {
		limits Limits
		field  string
	}{
		{Limits{}, "Limits.Tokens"},
		{Limits{Tokens: 1, USD: -1}, "Limits.USD"},
		{Limits{Tokens: 1, ToolCalls: -1}, "Limits.ToolCalls"},
		{Limits{Tokens: 1, WallTime: -time.Second}, "Limits.WallTime"},
		{Limits{Tokens: 1, MaxConcurrent: -1}, "Limits.MaxConcurrent"},
		{Limits{Tokens: 1, AcquireTimeout: -1}, "Limits.AcquireTimeout"},
		{Limits{Tokens: 1, PerKind: map[string]int{"explore": -1}}, "Limits.PerKind"},
	} {
		_, err := Spawn(sys.Root, "bad", tc.limits)
		if !errors.Is(err, ErrInvalidRequest) || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("Spawn(%+v) = %v, want ErrInvalidRequest naming %s", tc.limits, err, tc.field)
		}
	}
	if _, err := Spawn(sys.Root, "", Limits{Tokens: 1}); !errors.Is(err, ErrInvalidRequest) {
		t.Errorf("empty run ID: %v", err)
	}
	if _, err := Spawn(sys.Root, "twice", Limits{Tokens: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := Spawn(sys.Root, "twice", Limits{Tokens: 1}); err == nil {
		t.Error("a second budget actor for the same run was spawned")
	}
}

func TestBadRequestsGetClearErrors(t *testing.T) {
	f := start(t, Limits{Tokens: 1000, PerKind: map[string]int{"worker": 0}})
	f.acquire(t, "root", "", "root", 100)
	f.acquire(t, "gone", "", "root", 10)
	f.release(t, "gone", 0)
	ctx := ctxT(t)
	for _, tc := range []struct {
		name string
		req  Acquire
		want error
		text string
	}{
		{"no agent", Acquire{Kind: "root", Estimate: 1}, ErrInvalidRequest, "Acquire.Agent"},
		{"no kind", Acquire{Agent: "x", Estimate: 1}, ErrInvalidRequest, "Acquire.Kind"},
		{"zero estimate", Acquire{Agent: "x", Kind: "root"}, ErrInvalidRequest, "Acquire.Estimate"},
		{"negative dollars", Acquire{Agent: "x", Kind: "root", Estimate: 1, EstimateUSD: -1}, ErrInvalidRequest, "EstimateUSD"},
		{"duplicate", Acquire{Agent: "root", Kind: "root", Estimate: 1}, ErrDuplicateAgent, "root"},
		{"released ID", Acquire{Agent: "gone", Kind: "root", Estimate: 1}, ErrDuplicateAgent, "gone"},
		{"unknown parent", Acquire{Agent: "x", Parent: "ghost", Kind: "explore", Estimate: 1}, ErrUnknownAgent, "ghost"},
		{"released parent", Acquire{Agent: "x", Parent: "gone", Kind: "explore", Estimate: 1}, ErrReleased, "gone"},
		{"over the run", Acquire{Agent: "x", Kind: "root", Estimate: 5000}, ErrLimitExceeded, "at most 1000"},
		{"kind capped at zero", Acquire{Agent: "x", Parent: "root", Kind: "worker", Estimate: 1}, ErrLimitExceeded, "PerKind"},
	} {
		_, err := f.cl.Acquire(ctx, tc.req, nil)
		if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.text) {
			t.Errorf("%s: %v, want %v mentioning %q", tc.name, err, tc.want, tc.text)
		}
	}
	if _, err := f.cl.Usage(ctx, Usage{Agent: "ghost", Tokens: 1}); !errors.Is(err, ErrUnknownAgent) {
		t.Errorf("usage of unknown agent: %v", err)
	}
	if _, err := f.cl.Usage(ctx, Usage{Agent: "root", Tokens: -1}); !errors.Is(err, ErrInvalidRequest) {
		t.Errorf("negative usage: %v", err)
	}
	if _, err := f.cl.TopUp(ctx, TopUp{Agent: "root"}); !errors.Is(err, ErrInvalidRequest) {
		t.Errorf("top-up of zero: %v", err)
	}
	if _, err := f.cl.TopUp(ctx, TopUp{Agent: "gone", Want: 5}); !errors.Is(err, ErrReleased) {
		t.Errorf("top-up of a released lease: %v", err)
	}
	if _, err := f.cl.Release(ctx, Release{Agent: "ghost"}); !errors.Is(err, ErrUnknownAgent) {
		t.Errorf("release of unknown agent: %v", err)
	}
	if _, err := f.cl.Release(ctx, Release{Agent: "root", Used: -3}); !errors.Is(err, ErrInvalidRequest) {
		t.Errorf("release with negative use: %v", err)
	}
	// None of it changed the ledger.
	if s := f.snap(t); s.Reserved != 100 || s.Used.Tokens != 0 || s.Waiting != 0 {
		t.Fatalf("bad requests changed the ledger: %+v", s)
	}
}

func TestLateUsageAfterReleaseIsBooked(t *testing.T) {
	f := start(t, Limits{Tokens: 1000})
	f.acquire(t, "root", "", "root", 500)
	f.acquire(t, "w", "root", "worker", 100)
	f.release(t, "w", 40)
	u, err := f.cl.Usage(ctxT(t), Usage{Agent: "w", Tokens: 25})
	if err != nil || u.State != StateReleased || u.Used != 65 || u.Remaining != 0 {
		t.Fatalf("late usage = %+v, %v", u, err)
	}
	s := f.snap(t)
	if r := agentLine(t, s, "root"); r.Available != 500-65 || r.Subtree.Tokens != 65 {
		t.Fatalf("root after late usage: %+v", r)
	}
	if s.Used.Tokens != 65 {
		t.Fatalf("run used %d, want 65", s.Used.Tokens)
	}
}
