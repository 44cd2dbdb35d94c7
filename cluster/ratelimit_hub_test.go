package cluster

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/messages"
	"github.com/troupe-ai/troupe/ratelimit"
)

var hubKey = messages.RateKey{Host: "api.example.com", Account: ratelimit.Fingerprint("sk-x"), Model: "m"}

// One candidate owns the hub's quota; another process (a node) leases
// from it over NATS; a 429 one process saw freezes the key in every
// other; when the owner leaves, another candidate takes over, and when
// the owner dies without a word, within its lease's lapse.
func TestRateHubOwnershipAndFreeze(t *testing.T) {
	s := natsServer(t)
	start := func(candidate bool, name string) *RateHub {
		h, err := StartRateHub(t.Context(), wrap(t, connect(t, s)), RateHubOptions{Candidate: candidate, Name: name, Log: zerolog.Nop()})
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	first := start(true, "serve")
	second := start(true, "run")
	node := start(false, "node")
	defer node.Close()
	defer second.Close()
	if !first.Owning() || second.Owning() || node.Owning() {
		t.Fatalf("owning: first %v, second %v, node %v", first.Owning(), second.Owning(), node.Owning())
	}
	// The node leases through NATS and gets the whole (single) demand.
	reply, err := node.Lease(t.Context(), messages.RateLeaseRequest{V: 1, Key: hubKey, Client: node.id,
		Limits: messages.RateLimits{RPM: 600}, Demand: []messages.RateDemand{{Run: "r1", Waiting: 2}}})
	if err != nil || len(reply.Shares) != 1 || reply.Shares[0].RPS < 9 || reply.Limits.RPM != 600 {
		t.Fatalf("lease over NATS: %+v, %v", reply, err)
	}
	// A 429 seen by the node freezes the key in the second process.
	p, err := node.Limiter().Wait(t.Context(), ratelimit.Ticket{Key: hubKey, Run: "r1", Limits: messages.RateLimits{RPM: 600}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	hdr := http.Header{}
	hdr.Set("retry-after", "30")
	p.Settle(ratelimit.Outcome{Status: 429, Header: hdr, Used: -1})
	checkFor(t, 5*time.Second, func() error {
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
		defer cancel()
		var info ratelimit.WaitInfo
		_, err := second.Limiter().Wait(ctx, ratelimit.Ticket{Key: hubKey, Run: "r2"}, func(w ratelimit.WaitInfo) { info = w })
		if err == nil || info.Reason != ratelimit.ReasonFrozen || info.Status != 429 {
			return fmt.Errorf("the second process is not frozen: %v %+v", err, info)
		}
		return nil
	})
	// The owner leaves: the second candidate takes over at its next try.
	first.Close()
	checkFor(t, 10*time.Second, func() error {
		if !second.Owning() {
			return fmt.Errorf("no takeover")
		}
		return nil
	})
	if _, err := node.Lease(t.Context(), messages.RateLeaseRequest{V: 1, Key: hubKey, Client: node.id}); err != nil {
		t.Fatalf("lease from the new owner: %v", err)
	}
	// A third candidate; the owner dies without deleting its entry: the
	// third takes over once the entry's lease lapses.
	third := start(true, "run3")
	defer third.Close()
	second.cancel()
	<-second.done
	second.mu.Lock()
	for _, sub := range second.served {
		_ = sub.Unsubscribe()
	}
	second.mu.Unlock()
	second.owning.Store(false)
	checkFor(t, 15*time.Second, func() error {
		if !third.Owning() {
			return fmt.Errorf("no takeover after the owner died")
		}
		return nil
	})
	// Bad requests get an answer, never a crash.
	bad, err := node.nc.Request("troupe.rate.v1.lease", []byte(`{"v":1,"key":{"host":"a|b"}}`), 2*time.Second)
	if err != nil || third.Rejected() == 0 {
		t.Fatalf("bad request: %v, rejected %d, reply %s", err, third.Rejected(), bad.Data)
	}
}
