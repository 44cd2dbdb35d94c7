package cluster

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/budget"
	"github.com/troupe-ai/troupe/bus"
	"github.com/troupe-ai/troupe/messages"
)

// A node's agents use the run's budget over NATS exactly as local agents
// use the actor: leases, charges, top-ups, releases and the snapshot, and
// the budget's errors keep their identity across the wire.
func TestBudgetOverNATS(t *testing.T) {
	s := natsServer(t)
	local := budgetActor(t, "r1", budget.Limits{Tokens: 10_000, PerKind: map[string]int{"explore": 1}})
	srv, err := StartBudgetServer(wrap(t, connect(t, s)), "r1", local, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	remote := NewBudgetClient(connect(t, s), DefaultPrefix, "r1", "")
	ctx := t.Context()

	root, err := local.Acquire(ctx, budget.Acquire{Agent: "root", Kind: "root", Estimate: 10_000}, nil)
	if err != nil || root.Tokens != 10_000 {
		t.Fatalf("root lease %+v %v", root, err)
	}
	lease, err := remote.Acquire(ctx, budget.Acquire{Agent: "e1", Parent: "root", Kind: "explore", Estimate: 3000}, nil)
	if err != nil || lease.Tokens != 3000 || lease.Parent != "root" || lease.Order != 2 {
		t.Fatalf("remote lease %+v %v", lease, err)
	}
	rep, err := remote.Usage(ctx, budget.Usage{Agent: "e1", Tokens: 1000, Cost: 0.5, ToolCalls: 2})
	if err != nil || rep.Used != 1000 || rep.Remaining != 2000 || rep.State != budget.StateOK {
		t.Fatalf("usage %+v %v", rep, err)
	}
	if _, err := remote.Acquire(ctx, budget.Acquire{Agent: "e1", Parent: "root", Kind: "explore", Estimate: 10}, nil); !errors.Is(err, budget.ErrDuplicateAgent) {
		t.Errorf("duplicate agent over the wire: %v", err)
	}
	if _, err := remote.Usage(ctx, budget.Usage{Agent: "ghost", Tokens: 1}); !errors.Is(err, budget.ErrUnknownAgent) {
		t.Errorf("unknown agent over the wire: %v", err)
	}
	snap, err := remote.Snapshot(ctx)
	if err != nil || snap.Used.Tokens != 1000 || snap.Used.ToolCalls != 2 || len(snap.Agents) != 2 {
		t.Fatalf("snapshot %+v %v", snap, err)
	}
	rel, err := remote.Release(ctx, budget.Release{Agent: "e1", Used: 1200})
	if err != nil || rel.Returned != 1800 || rel.Already {
		t.Fatalf("release %+v %v", rel, err)
	}
	if rel, err := remote.Release(ctx, budget.Release{Agent: "e1"}); err != nil || !rel.Already {
		t.Errorf("second release %+v %v", rel, err)
	}
	snap, _ = local.Snapshot(ctx)
	if snap.Used.Tokens != 1200 {
		t.Errorf("the release's usage was not charged: %+v", snap.Used)
	}
}

// A remote acquire that waits for a slot and is then cancelled by its
// caller leaves nothing reserved: the client withdraws it.
func TestBudgetRemoteAcquireCancelled(t *testing.T) {
	s := natsServer(t)
	local := budgetActor(t, "r2", budget.Limits{Tokens: 10_000, PerKind: map[string]int{"explore": 1}})
	srv, err := StartBudgetServer(wrap(t, connect(t, s)), "r2", local, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	remote := NewBudgetClient(connect(t, s), DefaultPrefix, "r2", "")
	if _, err := local.Acquire(t.Context(), budget.Acquire{Agent: "root", Kind: "root", Estimate: 10_000}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := remote.Acquire(t.Context(), budget.Acquire{Agent: "e1", Parent: "root", Kind: "explore", Estimate: 100}, nil); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := remote.Acquire(ctx, budget.Acquire{Agent: "e2", Parent: "root", Kind: "explore", Estimate: 100}, nil)
		done <- err
	}()
	checkFor(t, 10*time.Second, func() error { // e2 waits for the explore slot
		snap, err := local.Snapshot(t.Context())
		if err != nil || snap.Waiting != 1 {
			return errors.New("not queued yet")
		}
		return nil
	})
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled acquire: %v", err)
	}
	checkFor(t, 10*time.Second, func() error {
		snap, err := local.Snapshot(t.Context())
		if err != nil || snap.Waiting != 0 {
			return errors.New("still queued")
		}
		for _, a := range snap.Agents {
			if a.Agent == "e2" && a.State != messages.BudgetStateReleased {
				return errors.New("e2 holds a lease")
			}
		}
		return nil
	})
}

// Hostile requests get a bad_request reply, are counted, and crash nothing.
func TestBudgetServerRejectsBadRequests(t *testing.T) {
	s := natsServer(t)
	local := budgetActor(t, "r3", budget.Limits{Tokens: 1000})
	srv, err := StartBudgetServer(wrap(t, connect(t, s)), "r3", local, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	nc := connect(t, s)
	for _, tc := range []struct{ op, body string }{
		{"acquire", "{not json"},
		{"acquire", `{"agent":"","estimate":5}`},
		{"acquire", `{"agent":"a","estimate":-1}`},
		{"usage", `[]`},
		{"release", `{"agent":7}`},
		{"bogus", `{}`},
		{"usage", `{"agent":"` + strings.Repeat("x", maxRequestBytes) + `"}`},
	} {
		m, err := nc.Request(bus.BudgetSubject(DefaultPrefix, "r3", tc.op), []byte(tc.body), 5*time.Second)
		if err != nil {
			t.Fatalf("%s %.40s: %v", tc.op, tc.body, err)
		}
		if !strings.Contains(string(m.Data), `"code":"bad_request"`) {
			t.Errorf("%s %.40s: reply %s", tc.op, tc.body, m.Data)
		}
	}
	if srv.Rejected() != 7 {
		t.Errorf("rejected %d, want 7", srv.Rejected())
	}
	if _, err := local.Snapshot(t.Context()); err != nil {
		t.Errorf("the budget actor is hurt: %v", err)
	}
}

// Nobody serving the run's budget for the client's timeout is a clear
// error, not a hang.
func TestBudgetClientNoServer(t *testing.T) {
	s := natsServer(t)
	remote := NewBudgetClient(connect(t, s), DefaultPrefix, "nobody", "").WithTimeout(100 * time.Millisecond)
	_, err := remote.Usage(t.Context(), budget.Usage{Agent: "a", Tokens: 1})
	if !errors.Is(err, budget.ErrUnreachable) || !strings.Contains(err.Error(), "nobody served the budget of run nobody") {
		t.Errorf("err %v", err)
	}
}

// A node that stops heartbeating (killed: no drain, no delete) has the
// leases it acquired for its agents' children returned after the lease
// timeout; a live node's stay.
func TestDeadNodeLeasesReturned(t *testing.T) {
	s := natsServer(t)
	nc := connect(t, s)
	remote, err := StartRemote(t.Context(), RemoteOptions{Bus: wrap(t, nc), Run: "rl", LeaseTimeout: 2500 * time.Millisecond, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	defer remote.Close()
	local := budgetActor(t, "rl", budget.Limits{Tokens: 10_000})
	if err := remote.ServeBudget(local); err != nil {
		t.Fatal(err)
	}
	if _, err := local.Acquire(t.Context(), budget.Acquire{Agent: "root", Kind: "root", Estimate: 10_000}, nil); err != nil {
		t.Fatal(err)
	}
	srv := fanoutScript(1, false)
	defer srv.Close()
	doomedConn := connect(t, s)
	_, err = StartNode(t.Context(), NodeOptions{Bus: wrap(t, doomedConn), ID: "doomed", Heartbeat: 100 * time.Millisecond,
		Agent: actors.Options{Workspace: workspace(t), Client: modelClient(t, srv), Models: actors.Models{Default: "big"}, Log: zerolog.Nop()},
		Log:   zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	live := startNode(t, s, srv, "live", 1, &recorder{})
	defer live.Drain(t.Context())
	checkFor(t, 10*time.Second, func() error {
		if len(remote.Nodes()) != 2 {
			return errorf("%d nodes", len(remote.Nodes()))
		}
		return nil
	})
	for _, c := range []struct{ node, agent string }{{"doomed", "w1-child"}, {"live", "w2-child"}} {
		bc := NewBudgetClient(connect(t, s), DefaultPrefix, "rl", c.node)
		if _, err := bc.Acquire(t.Context(), budget.Acquire{Agent: c.agent, Parent: "root", Kind: "explore", Estimate: 100}, nil); err != nil {
			t.Fatal(err)
		}
	}
	doomedConn.Close() // the process dies: no drain, no goodbye
	checkFor(t, 20*time.Second, func() error {
		snap, err := local.Snapshot(t.Context())
		if err != nil {
			return err
		}
		for _, a := range snap.Agents {
			if a.Agent == "w1-child" && a.State != messages.BudgetStateReleased {
				return errorf("the dead node's lease is still held")
			}
		}
		return nil
	})
	snap, _ := local.Snapshot(t.Context())
	for _, a := range snap.Agents {
		if a.Agent == "w2-child" && a.State == messages.BudgetStateReleased {
			t.Error("the live node's lease was returned")
		}
	}
}
