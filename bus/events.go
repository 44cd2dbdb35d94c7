package bus

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/messages"
)

// WatchOptions choose the events to follow.
type WatchOptions struct {
	// Run limits the events to one run; "" follows every run.
	Run string
	// FromStart replays the stream's events first (the whole run, even one
	// that has ended), then follows live; otherwise only new events come.
	FromStart bool
	// MaxBytes is the largest event accepted (0: MaxEventBytes).
	MaxBytes int
	Log      zerolog.Logger
}

// Delivery is one event read from the stream, with the stream's own
// sequence number (gap-free per stream, for checking nothing was missed).
type Delivery struct {
	Event     messages.Event
	StreamSeq uint64
	Subject   string
	// Pending is how many stored events matching the filter come after
	// this one: 0 means the replay has caught up with the stream.
	Pending uint64
	// Raw is the event as stored, which Event was decoded and validated
	// from: a consumer that passes events on may send it as it is.
	Raw []byte
}

// EventStream is a subscription to events. C delivers them in stream
// order; it is closed when the context given to Events ends or Stop is
// called.
type EventStream struct {
	C <-chan Delivery
	// Backlog is how many stored events the replay starts with (0 when
	// following live only, or when there is nothing to replay).
	Backlog  uint64
	f        *Following
	mu       sync.Mutex
	rejected map[string]uint64
	total    atomic.Uint64
	stopOnce sync.Once
	stopped  chan struct{}
}

// Events follows the events of o.Run (or every run) through an ordered
// consumer of TROUPE_EVENTS, replaced by a new one should a lost server
// leave it stalled (Follow): every stored event comes once, in order.
// Messages that fail DecodeEvent are counted, logged at warn with their
// subject, and skipped.
func (c *Conn) Events(ctx context.Context, o WatchOptions) (*EventStream, error) {
	if o.Run != "" {
		if err := CheckToken("run", o.Run); err != nil {
			return nil, err
		}
	}
	policy := jetstream.DeliverNewPolicy
	if o.FromStart {
		policy = jetstream.DeliverAllPolicy
	}
	out := make(chan Delivery, 1024)
	s := &EventStream{C: out, rejected: map[string]uint64{}, stopped: make(chan struct{})}
	var err error
	s.f, err = c.Follow(ctx, FollowConfig{Stream: c.Names().Events, Filters: []string{EventsFilter(c.prefix, o.Run)}, Policy: policy,
		What: "events", Log: o.Log}, func(m jetstream.Msg) {
		ev, err := DecodeEvent(c.prefix, m.Subject(), m.Data(), o.MaxBytes)
		if err != nil {
			s.reject(reason(err))
			o.Log.Warn().Err(err).Str("subject", m.Subject()).Msg("event rejected")
			return
		}
		d := Delivery{Event: ev, Subject: m.Subject(), Raw: m.Data()}
		if md, err := m.Metadata(); err == nil {
			d.StreamSeq, d.Pending = md.Sequence.Stream, md.NumPending
		}
		select {
		case out <- d:
		case <-s.stopped:
		case <-ctx.Done():
		}
	})
	if err != nil {
		return nil, fmt.Errorf("follow events: %w (is this a troupe NATS server? run or serve creates %s)", err, c.Names().Events)
	}
	s.Backlog = s.f.Backlog()
	go func() {
		select {
		case <-ctx.Done():
		case <-s.stopped:
		}
		s.Stop()
		<-s.f.Done()
		close(out)
	}()
	return s, nil
}

func (s *EventStream) reject(why string) {
	s.total.Add(1)
	s.mu.Lock()
	s.rejected[why]++
	s.mu.Unlock()
}

// Stop ends the subscription; C is closed soon after.
func (s *EventStream) Stop() {
	s.stopOnce.Do(func() {
		close(s.stopped)
		s.f.Stop()
	})
}

// Resumed counts the consumers replaced after a lost server left one
// stalled.
func (s *EventStream) Resumed() uint64 { return s.f.Resumed() }

// Rejected counts the rejected messages by reason.
func (s *EventStream) Rejected() map[string]uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]uint64, len(s.rejected))
	for k, v := range s.rejected {
		out[k] = v
	}
	return out
}

// RejectedTotal counts every rejected message.
func (s *EventStream) RejectedTotal() uint64 { return s.total.Load() }
