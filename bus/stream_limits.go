package bus

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// LimitDiff is a limit of an existing stream that differs from the one
// asked for.
type LimitDiff struct {
	Stream  string // e.g. TROUPE_EVENTS
	Setting string // the configuration key: nats.events_max_age, nats.events_max_bytes or nats.replicas
	Had     string // the stream's limit as it was, written as the configuration writes it
	Want    string // the limit asked for
	Applied bool   // the stream now has Want; else it kept Had
	// Failed says why Want could not be applied, and how to apply it: a
	// warning whatever set the limit.
	Failed string
}

// String says what differs and what was done, naming the setting.
func (d LimitDiff) String() string {
	if d.Failed != "" {
		return fmt.Sprintf("stream %s keeps %s %s, not %s: %s", d.Stream, d.Setting, d.Had, d.Want, d.Failed)
	}
	if d.Applied {
		return fmt.Sprintf("stream %s: %s %s applied (it was %s); its messages are kept within the new limit",
			d.Stream, d.Setting, d.Want, d.Had)
	}
	return fmt.Sprintf("stream %s keeps %s %s: the configuration says %s but does not set it explicitly (set it in a config file to apply it)",
		d.Stream, d.Setting, d.Had, d.Want)
}

// ReconcileStreams is EnsureStreams that also reports the limits of an
// existing events stream that differ from those asked for in l (a zero
// limit asks for nothing): updated where l applies them explicitly, kept
// as they were otherwise; and the replicas of every stream, bucket and
// object store raised to those l asks for (or the hub calls for). While
// the server cannot answer (a cluster forming, a leader being elected) it
// waits, saying so, for at most StartWait.
func (c *Conn) ReconcileStreams(ctx context.Context, l StreamLimits) ([]LimitDiff, error) {
	if err := CheckReplicas(l.Replicas); err != nil {
		return nil, err
	}
	auto := l.Replicas == 0
	l.Replicas = c.replicasFor(l)
	var diffs []LimitDiff
	err := awaitStart(ctx, c.log, "create or look up troupe's streams", func(ctx context.Context) error {
		var err error
		diffs, err = reconcile(ctx, c.js, c.prefix, l, auto)
		return err
	})
	return diffs, err
}

// applyEventsLimits compares the events stream's configuration have with
// the limits asked for, and updates the stream with those applied
// explicitly. Only MaxAge and MaxBytes change; UpdateStream keeps the
// stream's messages.
func applyEventsLimits(ctx context.Context, js jetstream.JetStream, have jetstream.StreamConfig, asked StreamLimits) ([]LimitDiff, error) {
	var diffs []LimitDiff
	want := have
	if asked.EventsMaxAge != 0 && asked.EventsMaxAge != have.MaxAge {
		diffs = append(diffs, LimitDiff{Stream: have.Name, Setting: "nats.events_max_age", Had: duration(have.MaxAge),
			Want: duration(asked.EventsMaxAge), Applied: asked.ApplyEventsMaxAge})
		if asked.ApplyEventsMaxAge {
			want.MaxAge = asked.EventsMaxAge
		}
	}
	if asked.EventsMaxBytes != 0 && asked.EventsMaxBytes != have.MaxBytes {
		diffs = append(diffs, LimitDiff{Stream: have.Name, Setting: "nats.events_max_bytes", Had: bytesLimit(have.MaxBytes),
			Want: bytesLimit(asked.EventsMaxBytes), Applied: asked.ApplyEventsMaxBytes})
		if asked.ApplyEventsMaxBytes {
			want.MaxBytes = asked.EventsMaxBytes
		}
	}
	if want.MaxAge == have.MaxAge && want.MaxBytes == have.MaxBytes {
		return diffs, nil
	}
	if _, err := js.UpdateStream(ctx, want); err != nil {
		var settings []string
		for _, d := range diffs {
			if d.Applied {
				settings = append(settings, d.Setting)
			}
		}
		return nil, fmt.Errorf("apply %s to stream %s: %w", strings.Join(settings, " and "), have.Name, err)
	}
	return diffs, nil
}

// bytesLimit writes a MaxBytes as the configuration would.
func bytesLimit(n int64) string {
	if n <= 0 {
		return strconv.FormatInt(n, 10) + " (unlimited)"
	}
	return strconv.FormatInt(n, 10)
}

// duration writes d as the configuration would: 168h, 90m, 1h30m, 45s.
func duration(d time.Duration) string {
	if d == 0 {
		return "0 (unlimited)"
	}
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
