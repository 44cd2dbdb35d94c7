package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/bus"
	"github.com/troupe-ai/troupe/messages"
	"github.com/troupe-ai/troupe/ratelimit"
)

// Who owns a hub's rate limits. One process at a time keeps the quota
// (ratelimit.Quota) of every provider key used on the hub: the one that
// holds the "owner" entry of the rate bucket, a lease it rewrites every
// second and that expires after three without. `serve` is a candidate
// from its start and so owns the quota of a hub it serves; every run
// (a requester) is a candidate too, so that a run on its own embedded
// server, or on an external NATS without `serve`, owns it until it ends,
// and another candidate takes over within about three seconds when the
// owner dies. Nodes are never candidates. A new owner starts from the
// limits the processes send with their next leases (a lease holds one
// second, so a takeover costs at most that much pacing).

// rateOwnerKey is the owner's entry in the rate bucket.
const rateOwnerKey = "owner"

// Timings of the ownership lease.
const (
	rateOwnerTTL  = 3 * time.Second
	rateOwnerBeat = time.Second
)

// maxRateRequest bounds a rate request read from the wire.
const maxRateRequest = 64 << 10

// RateHubOptions configure a process's part in the hub's rate limits.
type RateHubOptions struct {
	// Candidate makes the process eligible to own the quota (serve and
	// runs; nodes are not).
	Candidate bool
	// Name names the process in the owner's entry and to the owner
	// (a unique ID is added).
	Name string
	Log  zerolog.Logger
}

// RateHub is one process's part in its hub's provider rate limits: the
// Limiter its model calls wait in, fed by the hub's quota (its own when
// it is the owner, else over NATS), and for a candidate, the chance to own
// the quota.
type RateHub struct {
	conn    *bus.Conn
	nc      *nats.Conn
	prefix  string
	log     zerolog.Logger
	id      string
	quota   *ratelimit.Quota
	limiter *ratelimit.Limiter
	owning  atomic.Bool
	frozen  *nats.Subscription

	mu     sync.Mutex
	served []*nats.Subscription // lease and report, while owning
	kv     jetstream.KeyValue
	rev    uint64

	rejected atomic.Uint64
	cancel   context.CancelFunc
	done     chan struct{}
}

// StartRateHub joins conn's hub: freeze notices reach the process's
// Limiter, and a candidate tries for the quota at once (a lone run owns
// it before its first model call) and then every second.
func StartRateHub(ctx context.Context, conn *bus.Conn, o RateHubOptions) (*RateHub, error) {
	h := &RateHub{conn: conn, nc: conn.NATS(), prefix: conn.Prefix(), done: make(chan struct{}),
		id: o.Name + "-" + uuid.NewString()[:8], log: o.Log.With().Str("component", "rate-limits").Logger()}
	if o.Name == "" {
		h.id = fmt.Sprintf("pid%d-%s", os.Getpid(), uuid.NewString()[:8])
	}
	h.quota = ratelimit.NewQuota(ratelimit.QuotaOptions{OnFreeze: h.announce})
	h.limiter = ratelimit.NewLimiter(h, ratelimit.LimiterOptions{Client: h.id})
	sub, err := h.nc.Subscribe(bus.RateSubject(h.prefix, messages.RateOpFrozen), func(m *nats.Msg) {
		if n, err := messages.Decode[messages.RateFrozen](m.Data, maxRateRequest); err == nil {
			h.limiter.Frozen(n)
		}
	})
	if err != nil {
		h.limiter.Close()
		return nil, fmt.Errorf("rate limits: %w", err)
	}
	h.frozen = sub
	lctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	if !o.Candidate {
		close(h.done)
		return h, h.nc.Flush()
	}
	if err := h.openBucket(ctx); err != nil {
		h.log.Warn().Err(err).Msg("the rate bucket cannot be used; this process paces on its own")
		close(h.done)
		return h, nil
	}
	h.contend(ctx)
	go h.keep(lctx)
	return h, nil
}

// Limiter is the process's limiter, for llm.Config.Limiter.
func (h *RateHub) Limiter() *ratelimit.Limiter { return h.limiter }

// Owning reports whether this process owns the hub's quota now.
func (h *RateHub) Owning() bool { return h.owning.Load() }

// Rejected counts the malformed requests the owner refused.
func (h *RateHub) Rejected() uint64 { return h.rejected.Load() }

// Close leaves the hub: an owner gives the quota up at once (deleting
// its entry) so that another candidate takes over without waiting for
// the lease to run out.
func (h *RateHub) Close() {
	h.cancel()
	<-h.done
	h.resign(true)
	_ = h.frozen.Unsubscribe()
	h.limiter.Close()
}

// Lease asks the quota's owner for the process's shares: the Quota itself
// when this process owns it, else over NATS.
func (h *RateHub) Lease(ctx context.Context, req messages.RateLeaseRequest) (messages.RateLeaseReply, error) {
	if h.owning.Load() {
		return h.quota.Lease(ctx, req)
	}
	var reply messages.RateLeaseReply
	if err := h.request(ctx, messages.RateOpLease, req, &reply); err != nil {
		return reply, err
	}
	if reply.Error != nil {
		return reply, fmt.Errorf("rate lease: %s: %s", reply.Error.Code, reply.Error.Message)
	}
	return reply, nil
}

// Report tells the quota's owner what a provider said.
func (h *RateHub) Report(ctx context.Context, rep messages.RateReport) error {
	if h.owning.Load() {
		return h.quota.Report(ctx, rep)
	}
	var reply messages.ErrorReply
	if err := h.request(ctx, messages.RateOpReport, rep, &reply); err != nil {
		return err
	}
	if reply.Error != nil {
		return fmt.Errorf("rate report: %s: %s", reply.Error.Code, reply.Error.Message)
	}
	return nil
}

func (h *RateHub) request(ctx context.Context, op string, req, reply any) error {
	b, err := json.Marshal(req)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	m, err := h.nc.RequestWithContext(ctx, bus.RateSubject(h.prefix, op), b)
	if err != nil {
		return fmt.Errorf("rate %s: %w", op, err)
	}
	if err := json.Unmarshal(m.Data, reply); err != nil {
		return fmt.Errorf("rate %s: malformed reply: %w", op, err)
	}
	return nil
}

// announce tells every process of the hub that a key froze.
func (h *RateHub) announce(n messages.RateFrozen) {
	b, _ := json.Marshal(n)
	if err := h.nc.Publish(bus.RateSubject(h.prefix, messages.RateOpFrozen), b); err != nil {
		h.log.Debug().Err(err).Msg("freeze notice")
	}
}
