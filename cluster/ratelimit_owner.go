package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/troupe-ai/troupe/bus"
	"github.com/troupe-ai/troupe/messages"
)

// openBucket opens the rate bucket, creating it where it is missing.
func (h *RateHub) openBucket(ctx context.Context) error {
	js, name := h.conn.JetStream(), h.conn.Names().Rate
	kv, err := js.KeyValue(ctx, name)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		kv, err = js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: name, TTL: rateOwnerTTL, History: 1,
			Description: "troupe: the process that owns the hub's provider rate limits"})
		if errors.Is(err, jetstream.ErrBucketExists) {
			err = nil
		}
		if err == nil { // no direct gets on troupe's buckets (bus/direct.go)
			err = noDirect(ctx, js, "KV_"+name)
		}
		if err == nil {
			kv, err = js.KeyValue(ctx, name)
		}
	}
	if err != nil {
		return fmt.Errorf("open %s: %w", name, err)
	}
	h.kv = kv
	return nil
}

// keep holds the ownership while it lasts and tries for it while another
// holds it, every rateOwnerBeat, until ctx ends.
func (h *RateHub) keep(ctx context.Context) {
	defer close(h.done)
	t := time.NewTicker(rateOwnerBeat)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		h.contend(ctx)
	}
}

// contend renews the ownership if this process holds it, or takes it if
// nobody does.
func (h *RateHub) contend(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	entry, _ := json.Marshal(map[string]string{"owner": h.id, "since": time.Now().UTC().Format(time.RFC3339)})
	h.mu.Lock()
	rev := h.rev
	h.mu.Unlock()
	if h.owning.Load() {
		next, err := h.kv.Update(ctx, rateOwnerKey, entry, rev)
		if err != nil {
			if ctx.Err() == nil {
				h.log.Warn().Err(err).Msg("lost the hub's rate limits to another process")
			}
			h.resign(false)
			return
		}
		h.mu.Lock()
		h.rev = next
		h.mu.Unlock()
		return
	}
	next, err := h.kv.Create(ctx, rateOwnerKey, entry)
	if err != nil {
		return // another owns it (or the server is out of reach): ask it
	}
	if err := h.serve(); err != nil {
		h.log.Warn().Err(err).Msg("cannot serve the hub's rate limits")
		_ = h.kv.Delete(ctx, rateOwnerKey, jetstream.LastRevision(next))
		return
	}
	h.mu.Lock()
	h.rev = next
	h.mu.Unlock()
	h.owning.Store(true)
	h.log.Debug().Str("owner", h.id).Msg("owns the hub's rate limits")
}

// serve answers lease and report requests for the hub.
func (h *RateHub) serve() error {
	var subs []*nats.Subscription
	for _, op := range []string{messages.RateOpLease, messages.RateOpReport} {
		sub, err := h.nc.Subscribe(bus.RateSubject(h.prefix, op), h.answer)
		if err != nil {
			for _, s := range subs {
				_ = s.Unsubscribe()
			}
			return err
		}
		subs = append(subs, sub)
	}
	if err := h.nc.Flush(); err != nil {
		return err
	}
	h.mu.Lock()
	h.served = subs
	h.mu.Unlock()
	return nil
}

// resign stops serving; release also deletes the owner's entry (a clean
// exit), so that another candidate takes over at its next try.
func (h *RateHub) resign(release bool) {
	if !h.owning.Swap(false) {
		return
	}
	h.mu.Lock()
	subs, rev := h.served, h.rev
	h.served = nil
	h.mu.Unlock()
	for _, s := range subs {
		_ = s.Unsubscribe()
	}
	if release && h.kv != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = h.kv.Delete(ctx, rateOwnerKey, jetstream.LastRevision(rev))
	}
}

// answer serves one lease or report request; nothing from the wire can
// crash it, and a malformed request gets a bad_request reply.
func (h *RateHub) answer(m *nats.Msg) {
	if m.Reply == "" || fromStream(m) {
		h.rejected.Add(1)
		return
	}
	var reply any
	var err error
	switch op := m.Subject[strings.LastIndexByte(m.Subject, '.')+1:]; op {
	case messages.RateOpLease:
		var req messages.RateLeaseRequest
		if req, err = messages.Decode[messages.RateLeaseRequest](m.Data, maxRateRequest); err == nil {
			reply, err = h.quota.Lease(context.Background(), req)
		}
	case messages.RateOpReport:
		var rep messages.RateReport
		if rep, err = messages.Decode[messages.RateReport](m.Data, maxRateRequest); err == nil {
			err = h.quota.Report(context.Background(), rep)
			reply = messages.ErrorReply{V: messages.ProtocolVersion}
		}
	}
	if err != nil {
		h.rejected.Add(1)
		h.log.Warn().Str("subject", m.Subject).Err(err).Msg("rate request refused")
		reply = messages.ErrorReply{V: messages.ProtocolVersion, Error: &messages.Error{Code: messages.CodeBadRequest, Message: err.Error()}}
	}
	b, _ := json.Marshal(reply)
	_ = m.Respond(b)
}

// noDirect turns direct gets off on stream (nats.go makes buckets with
// them on): reads go through STREAM.MSG.GET, as on every troupe bucket.
func noDirect(ctx context.Context, js jetstream.JetStream, stream string) error {
	s, err := js.Stream(ctx, stream)
	if err != nil {
		return err
	}
	cfg := s.CachedInfo().Config
	if !cfg.AllowDirect {
		return nil
	}
	cfg.AllowDirect = false
	_, err = js.UpdateStream(ctx, cfg)
	return err
}
