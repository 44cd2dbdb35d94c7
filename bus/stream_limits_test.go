package bus

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
)

// eventsConfig reads the events stream's configuration back from the
// server.
func eventsConfig(t *testing.T, js jetstream.JetStream) (jetstream.StreamConfig, uint64) {
	t.Helper()
	s, err := js.Stream(t.Context(), EventsStream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return info.Config, info.State.Msgs
}

// The events stream is created with the limits asked for, and with the
// defaults where none are.
func TestEnsureStreamsCreatesWithLimits(t *testing.T) {
	for _, tc := range []struct {
		name     string
		l        StreamLimits
		maxAge   time.Duration
		maxBytes int64
	}{
		{"defaults", StreamLimits{}, 7 * 24 * time.Hour, 1 << 30},
		{"configured", StreamLimits{EventsMaxAge: 3 * time.Hour, EventsMaxBytes: 5 << 20}, 3 * time.Hour, 5 << 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e, err := StartEmbedded(t.Context(), EmbeddedOptions{StoreDir: t.TempDir()}, zerolog.Nop())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { e.Shutdown(context.Background()) }) // t.Context() is done by cleanup time: wait for the server
			c, err := Connect(t.Context(), ConnectOptions{URLs: e.URL()}, zerolog.Nop())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(c.Close)
			diffs, err := c.ReconcileStreams(t.Context(), tc.l)
			if err != nil || len(diffs) != 0 {
				t.Fatalf("a new stream: diffs %v, err %v", diffs, err)
			}
			cfg, _ := eventsConfig(t, c.JetStream())
			if cfg.MaxAge != tc.maxAge || cfg.MaxBytes != tc.maxBytes {
				t.Errorf("stream has max age %v, max bytes %d; want %v, %d", cfg.MaxAge, cfg.MaxBytes, tc.maxAge, tc.maxBytes)
			}
		})
	}
}

// An existing events stream keeps its limits and its messages unless the
// limits are applied explicitly; then only they change, and the messages
// stay. Every difference is reported, naming the setting and both values.
func TestReconcileStreamsExistingStream(t *testing.T) {
	_, c := embedded(t) // the events stream exists with the defaults
	js := c.JetStream()
	for i := range 3 {
		if _, err := js.Publish(t.Context(), EventSubject(c.Prefix(), "r", "a", "x.y"), fmt.Appendf(nil, `{"n":%d}`, i)); err != nil {
			t.Fatal(err)
		}
	}
	const week, gib = 7 * 24 * time.Hour, 1 << 30
	steps := []struct {
		name  string
		l     StreamLimits
		diffs []string
		age   time.Duration
		bytes int64
	}{
		{"same limits", StreamLimits{EventsMaxAge: week, EventsMaxBytes: gib}, nil, week, gib},
		{"differing, not explicit", StreamLimits{EventsMaxAge: time.Hour, EventsMaxBytes: 2 << 20}, []string{
			"stream TROUPE_EVENTS keeps nats.events_max_age 168h: the configuration says 1h but does not set it explicitly (set it in a config file to apply it)",
			"stream TROUPE_EVENTS keeps nats.events_max_bytes 1073741824: the configuration says 2097152 but does not set it explicitly (set it in a config file to apply it)",
		}, week, gib},
		{"age explicit", StreamLimits{EventsMaxAge: 90 * time.Minute, EventsMaxBytes: 2 << 20, ApplyEventsMaxAge: true}, []string{
			"stream TROUPE_EVENTS: nats.events_max_age 1h30m applied (it was 168h); its messages are kept within the new limit",
			"stream TROUPE_EVENTS keeps nats.events_max_bytes 1073741824: the configuration says 2097152 but does not set it explicitly (set it in a config file to apply it)",
		}, 90 * time.Minute, gib},
		{"both explicit", StreamLimits{EventsMaxAge: 2 * time.Hour, EventsMaxBytes: 2 << 20, ApplyEventsMaxAge: true, ApplyEventsMaxBytes: true}, []string{
			"stream TROUPE_EVENTS: nats.events_max_age 2h applied (it was 1h30m); its messages are kept within the new limit",
			"stream TROUPE_EVENTS: nats.events_max_bytes 2097152 applied (it was 1073741824); its messages are kept within the new limit",
		}, 2 * time.Hour, 2 << 20},
		{"no opinion (zero limits, as nodes ask)", StreamLimits{}, nil, 2 * time.Hour, 2 << 20},
		{"applied again: nothing to do", StreamLimits{EventsMaxAge: 2 * time.Hour, EventsMaxBytes: 2 << 20, ApplyEventsMaxAge: true, ApplyEventsMaxBytes: true},
			nil, 2 * time.Hour, 2 << 20},
	}
	for _, st := range steps {
		diffs, err := c.ReconcileStreams(t.Context(), st.l)
		if err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		var got []string
		for _, d := range diffs {
			got = append(got, d.String())
		}
		if fmt.Sprint(got) != fmt.Sprint(st.diffs) {
			t.Errorf("%s: diffs\n%q\nwant\n%q", st.name, got, st.diffs)
		}
		cfg, msgs := eventsConfig(t, js)
		if cfg.MaxAge != st.age || cfg.MaxBytes != st.bytes || msgs != 3 {
			t.Errorf("%s: stream has max age %v, max bytes %d, %d messages; want %v, %d, %d",
				st.name, cfg.MaxAge, cfg.MaxBytes, msgs, st.age, st.bytes, 3)
		}
		if cfg.Subjects[0] != c.Prefix()+".evt.>" || cfg.Retention != jetstream.LimitsPolicy {
			t.Errorf("%s: the rest of the configuration changed: %+v", st.name, cfg)
		}
	}
}
