package bus

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
)

// StreamLimits size the streams; zero values take the defaults.
type StreamLimits struct {
	EventsMaxAge   time.Duration // default 7 days (nats.events_max_age)
	EventsMaxBytes int64         // default 1 GiB (nats.events_max_bytes)
	ResultsMaxAge  time.Duration // default 24h
	NodeTTL        time.Duration // a node entry expires this long after its last heartbeat (default 15s)
	// Replicas of every stream, bucket and object store (nats.replicas: 1
	// or 3); 0 lets the hub choose (Conn.HubReplicas): 3 in a cluster of
	// three or more servers, else 1.
	Replicas int
	// HubSize is how many servers the hub has, when the caller knows
	// (serve does, from its routes): with Replicas 0 the hub's choice is
	// made from it rather than from the servers the connection knows of.
	HubSize      int
	DuplicateWin time.Duration // publish deduplication window (default 2m)

	// ApplyEventsMaxAge and ApplyEventsMaxBytes say the operator set that
	// limit explicitly: an existing TROUPE_EVENTS stream whose limit
	// differs is updated to it in place (its messages stay, but for those
	// beyond a smaller limit). Without them an existing stream keeps its
	// limits; ReconcileStreams reports the difference either way.
	ApplyEventsMaxAge, ApplyEventsMaxBytes bool
	// ApplyReplicas says the operator set nats.replicas explicitly: every
	// existing stream is brought to it, up or down. Without it an
	// existing stream keeps the replicas its creator chose (replicas.go).
	ApplyReplicas bool
}

func (l StreamLimits) withDefaults() StreamLimits {
	if l.EventsMaxAge == 0 {
		l.EventsMaxAge = 7 * 24 * time.Hour
	}
	if l.EventsMaxBytes == 0 {
		l.EventsMaxBytes = 1 << 30
	}
	if l.ResultsMaxAge == 0 {
		l.ResultsMaxAge = 24 * time.Hour
	}
	if l.NodeTTL == 0 {
		l.NodeTTL = 15 * time.Second
	}
	if l.Replicas == 0 {
		l.Replicas = 1
	}
	if l.DuplicateWin == 0 {
		l.DuplicateWin = 2 * time.Minute
	}
	return l
}

// EnsureStreams creates the events stream, the task queue, the results
// stream and the node registry where they are missing. It never resets
// them: a second orchestrator or node against the same server finds them
// as they are (and their data with them); only the limits l applies
// explicitly change (see StreamLimits), and the replicas.
func (c *Conn) EnsureStreams(ctx context.Context, l StreamLimits) error {
	_, err := c.ReconcileStreams(ctx, l)
	return err
}

// reconcile creates what is missing and applies l's explicit limits;
// l.Replicas is resolved (not 0) and auto says the hub chose it.
func reconcile(ctx context.Context, js jetstream.JetStream, prefix string, l StreamLimits, auto bool) ([]LimitDiff, error) {
	asked := l
	l = l.withDefaults()
	names := NamesFor(prefix)
	streams := []jetstream.StreamConfig{
		{Name: names.Events, Subjects: []string{prefix + ".evt.>"}, Retention: jetstream.LimitsPolicy,
			Storage: jetstream.FileStorage, MaxAge: l.EventsMaxAge, MaxBytes: l.EventsMaxBytes,
			Discard: jetstream.DiscardOld, Duplicates: l.DuplicateWin, Description: "troupe lifecycle events of every run"},
		{Name: names.Tasks, Subjects: []string{prefix + ".task.>"}, Retention: jetstream.WorkQueuePolicy,
			Storage: jetstream.FileStorage, Duplicates: l.DuplicateWin,
			Description: "troupe agent tasks for remote nodes (work queue)"},
		{Name: names.Results, Subjects: []string{prefix + ".result.>"}, Retention: jetstream.LimitsPolicy,
			Storage: jetstream.FileStorage, MaxAge: l.ResultsMaxAge, Duplicates: l.DuplicateWin,
			MaxMsgsPerSubject: 1, Discard: jetstream.DiscardNew, DiscardNewPerSubject: true,
			Description: "troupe remote agents' results, one per delivery; the first stays"},
	}
	diffs := reconcileReplicas(ctx, js, names, l.Replicas, asked.ApplyReplicas)
	mk := &maker{ctx: ctx, js: js, replicas: l.Replicas, auto: auto}
	for _, cfg := range streams {
		if s, err := js.Stream(ctx, cfg.Name); err == nil {
			if had := s.CachedInfo().Config.Subjects; !slices.Equal(had, cfg.Subjects) {
				return diffs, fmt.Errorf("%w: stream %s exists with subjects %v, not %v: another nats.prefix uses it (pick a prefix that differs in more than case)",
					ErrStreamMismatch, cfg.Name, had, cfg.Subjects)
			}
			if cfg.Name == names.Events { // exists: only explicit limits change
				d, err := applyEventsLimits(ctx, js, s.CachedInfo().Config, asked)
				if err != nil {
					return diffs, err
				}
				diffs = append(diffs, d...)
			}
			continue
		} else if !errors.Is(err, jetstream.ErrStreamNotFound) {
			return diffs, fmt.Errorf("look up stream %s: %w", cfg.Name, err)
		}
		if err := mk.make(cfg.Name, func(r int) error {
			cfg.Replicas = r
			_, err := js.CreateStream(ctx, cfg)
			if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
				return nil
			}
			return err
		}); err != nil {
			return diffs, fmt.Errorf("create stream %s: %w", cfg.Name, err)
		}
	}
	if err := ensureArtifacts(ctx, js, names.Artifacts, mk); err != nil {
		return diffs, err
	}
	if err := ensureObjectStores(ctx, js, names, mk); err != nil {
		return diffs, err
	}
	for _, kv := range []jetstream.KeyValueConfig{
		{Bucket: names.Nodes, TTL: l.NodeTTL, Description: "troupe nodes: one entry per live node"},
		{Bucket: names.Runs, TTL: RunsTTL, Description: "troupe run leases: one entry per live run"},
	} {
		if err := ensureKV(ctx, js, kv, mk); err != nil {
			return diffs, err
		}
	}
	return append(diffs, mk.fewer...), disallowDirect(ctx, js, names)
}

// maker creates streams, buckets and object stores with replicas; when
// the hub chose them (auto) and fewer servers are up than they need, it
// creates them with one replica instead, and says so (fewer): a later
// reconcile with every server up raises them in place.
type maker struct {
	ctx      context.Context
	js       jetstream.JetStream
	replicas int
	auto     bool
	fewer    []LimitDiff
}

func (m *maker) make(name string, create func(replicas int) error) error {
	err := create(m.replicas)
	if err == nil || !m.auto || m.replicas == 1 || !errTooFewServers(err) {
		return err
	}
	if err := create(1); err != nil {
		return err
	}
	if err := markFewer(m.ctx, m.js, name); err != nil {
		return fmt.Errorf("mark %s as made with 1 replica: %w", name, err)
	}
	m.fewer = append(m.fewer, LimitDiff{Stream: name, Setting: "nats.replicas", Had: "1", Want: strconv.Itoa(m.replicas),
		Failed: fmt.Sprintf("created with 1 replica: %v; it is raised in place once every server is up and serve or a run starts again", err)})
	return nil
}

// RunsTTL is how long a run's lease entry outlives its last heartbeat in
// the bucket; a run's own lease (at most this) says when it lapses.
const RunsTTL = 5 * time.Minute

// ensureKV creates the bucket of cfg where it is missing.
func ensureKV(ctx context.Context, js jetstream.JetStream, cfg jetstream.KeyValueConfig, mk *maker) error {
	if _, err := js.KeyValue(ctx, cfg.Bucket); err == nil {
		return nil
	} else if !errors.Is(err, jetstream.ErrBucketNotFound) {
		return fmt.Errorf("look up bucket %s: %w", cfg.Bucket, err)
	}
	if err := mk.make("KV_"+cfg.Bucket, func(r int) error {
		cfg.Replicas = r
		if _, err := js.CreateKeyValue(ctx, cfg); err != nil && !errors.Is(err, jetstream.ErrBucketExists) {
			return err
		}
		return nil
	}); err != nil {
		return fmt.Errorf("create bucket %s: %w", cfg.Bucket, err)
	}
	return nil
}

// KeepFirstResults makes an existing results stream made by an earlier
// troupe (where a later message replaced a subject's result) keep the
// first message of each subject and refuse the next, as EnsureStreams
// creates it: a stored result cannot be replaced. It needs the requester
// role (a node may not update streams); a run calls it as it starts.
func (c *Conn) KeepFirstResults(ctx context.Context) error {
	var s jetstream.Stream
	if err := awaitStart(ctx, c.log, "look up stream "+c.Names().Results, func(ctx context.Context) (err error) {
		s, err = c.js.Stream(ctx, c.Names().Results)
		return err
	}); err != nil {
		return fmt.Errorf("look up stream %s: %w", c.Names().Results, err)
	}
	cfg := s.CachedInfo().Config
	if cfg.DiscardNewPerSubject && cfg.Discard == jetstream.DiscardNew && cfg.MaxMsgsPerSubject == 1 {
		return nil
	}
	cfg.Discard, cfg.DiscardNewPerSubject, cfg.MaxMsgsPerSubject = jetstream.DiscardNew, true, 1
	if _, err := c.js.UpdateStream(ctx, cfg); err != nil {
		return fmt.Errorf("update stream %s to keep the first result of each subject: %w", cfg.Name, err)
	}
	return nil
}

// MayCreateStreams says the connection's credentials let it create the
// prefix's streams: a requester's, or none at all (a server without
// credentials, or with one shared token, refuses nobody). A node's may
// not: it waits for them (AwaitStreams).
func (c *Conn) MayCreateStreams() bool {
	return c.id.MayPublish("$JS.API.STREAM.CREATE." + c.Names().Tasks)
}

// streamNames are the JetStream names of the prefix's streams, buckets
// and object stores.
func (n Names) streamNames() []string { return streamsOf(n).all() }

// MissingStreams lists the streams (buckets and object stores as
// JetStream names them) of the prefix that do not exist, or are not set
// up yet (see disallowDirect).
func (c *Conn) MissingStreams(ctx context.Context) ([]string, error) {
	var missing []string
	for _, name := range c.Names().streamNames() {
		if _, err := c.js.Stream(ctx, name); errors.Is(err, jetstream.ErrStreamNotFound) {
			missing = append(missing, name)
		} else if err != nil {
			return nil, fmt.Errorf("look up stream %s: %w", name, err)
		}
	}
	if len(missing) > 0 {
		return missing, nil
	}
	return directOn(ctx, c.js, c.Names())
}

// streamsRetry is how often AwaitStreams looks again; streamsNag how
// often it says it still waits.
const (
	streamsRetry = time.Second
	streamsNag   = 30 * time.Second
)

// AwaitStreams returns once the prefix's streams exist. A connection
// that may create them (MayCreateStreams) creates what is missing; any
// other waits for `orchestrator serve` or a run to, looking again every
// second and saying so on log (at once, then every 30 s), until ctx ends.
func (c *Conn) AwaitStreams(ctx context.Context, log zerolog.Logger) error {
	if c.MayCreateStreams() {
		return c.EnsureStreams(ctx, StreamLimits{})
	}
	var said time.Time
	for {
		missing, err := c.MissingStreams(ctx)
		if err == nil && len(missing) == 0 {
			if !said.IsZero() {
				log.Info().Msg("troupe's streams exist now")
			}
			return nil
		}
		if time.Since(said) >= streamsNag {
			said = time.Now()
			ev := log.Warn().Err(err)
			if len(missing) > 0 {
				ev = ev.Strs("missing", missing)
			}
			ev.Msg("waiting for troupe's streams: orchestrator serve, or the first run, creates them (these credentials may not)")
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for troupe's streams %v: %w", missing, ctx.Err())
		case <-time.After(streamsRetry):
		}
	}
}
