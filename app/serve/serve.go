// Package serve is what `orchestrator serve` runs beside its embedded NATS
// server: the nats settings it uses checked, troupe's streams reconciled
// with the configured limits (at once on a single server, once a cluster
// has formed on a cluster), the hub's provider rate limits owned on a
// single server, and the banner that says how nodes, runs and watchers
// reach it.
package serve

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/app/config"
	"github.com/troupe-ai/troupe/app/runner"
	"github.com/troupe-ai/troupe/app/setup"
	"github.com/troupe-ai/troupe/bus"
	"github.com/troupe-ai/troupe/cluster"
)

// CheckConfig checks the nats settings serve uses (the model's are
// run's to check).
func CheckConfig(cfg config.Config) error {
	if cfg.NATS.EventsMaxAge < 0 || cfg.NATS.EventsMaxBytes < 0 {
		return runner.Usage("config: nats.events_max_age and nats.events_max_bytes must not be negative")
	}
	if err := bus.CheckReplicas(cfg.NATS.Replicas); err != nil {
		return runner.Usage("config: %v", err)
	}
	if _, _, err := bus.ParseSync(cfg.NATS.Sync); err != nil {
		return runner.Usage("config: %v", err)
	}
	return nil
}

// serveAllStreams creates troupe's streams: at once on a single server,
// in the background once a cluster has formed (every server tries, the
// first makes them).
func serveAllStreams(ctx context.Context, emb *bus.Embedded, o bus.EmbeddedOptions, cfg config.Config, creds string, stderr io.Writer,
	log zerolog.Logger) error {
	limits := setup.StreamLimits(cfg)
	limits.HubSize = o.ClusterSize()
	if o.ClusterName == "" {
		return serveStreams(ctx, emb, cfg, limits, creds, stderr, log)
	}
	go serveClusterStreams(ctx, emb, cfg, limits, creds, stderr, log)
	return nil
}

// serveClusterStreams creates troupe's streams once the cluster has
// formed (JetStream answers when a majority of its servers is up): it
// tries until it has, saying why it waits.
func serveClusterStreams(ctx context.Context, emb *bus.Embedded, cfg config.Config, limits bus.StreamLimits, creds string, stderr io.Writer,
	log zerolog.Logger) {
	for {
		err := serveStreams(ctx, emb, cfg, limits, creds, stderr, log)
		if err == nil || ctx.Err() != nil {
			return
		}
		fmt.Fprintf(stderr, "warning: troupe's streams not created yet (the cluster needs a majority of its servers up): %v; trying again\n", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(5 * time.Second):
		}
	}
}

// serveStreams creates troupe's streams on emb with the configured
// limits, saying which limits differ from a stream's that exists.
func serveStreams(ctx context.Context, emb *bus.Embedded, cfg config.Config, limits bus.StreamLimits, creds string, stderr io.Writer,
	log zerolog.Logger) error {
	conn, err := bus.Connect(ctx, bus.ConnectOptions{URLs: emb.URL(), Token: cfg.NATS.Token, CredsFile: creds, Name: "troupe serve", Prefix: cfg.NATS.Prefix}, log)
	if err != nil {
		return err
	}
	diffs, err := conn.ReconcileStreams(ctx, limits)
	conn.Close()
	if err != nil {
		return err
	}
	for _, d := range diffs {
		if d.Applied {
			fmt.Fprintln(stderr, d)
		} else {
			fmt.Fprintf(stderr, "warning: %s\n", d)
		}
	}
	if emb.ClusterURL() != "" {
		fmt.Fprintf(stderr, "troupe's streams are ready (%s)\n", replicasSaid(limits))
	}
	return nil
}

// Hub creates troupe's streams and, on a single server, makes serve the
// owner of the hub's provider rate limits (docs/wire.md; a cluster's runs
// own them instead); the returned func leaves them. creds is the
// requester's creds file (none: "").
func Hub(ctx context.Context, emb *bus.Embedded, o bus.EmbeddedOptions, cfg config.Config, creds string, stderr io.Writer,
	log zerolog.Logger) (func(), error) {
	if err := serveAllStreams(ctx, emb, o, cfg, creds, stderr, log); err != nil {
		return nil, err
	}
	if o.ClusterName != "" {
		return func() {}, nil
	}
	return serveRates(ctx, emb, cfg, creds, log)
}

// serveRates makes serve the first candidate for the hub's provider rate
// limits; the returned func leaves them.
func serveRates(ctx context.Context, emb *bus.Embedded, cfg config.Config, creds string, log zerolog.Logger) (func(), error) {
	conn, err := bus.Connect(ctx, bus.ConnectOptions{URLs: emb.URL(), Token: cfg.NATS.Token, CredsFile: creds, Name: "troupe serve rate limits", Prefix: cfg.NATS.Prefix}, log)
	if err != nil {
		return nil, err
	}
	hub, err := cluster.StartRateHub(ctx, conn, cluster.RateHubOptions{Candidate: true, Name: "serve", Log: log})
	if err != nil {
		conn.Close()
		return nil, err
	}
	return func() { hub.Close(); conn.Close() }, nil
}

// Banner prints the server's URL on stdout, and on stderr where it
// keeps its store and how nodes, runs and watchers reach it.
func Banner(stdout, stderr io.Writer, emb *bus.Embedded, o bus.EmbeddedOptions, sc *runner.ServerCreds) {
	store := o.StoreDir
	if o.Ephemeral {
		store = "a temporary directory (--store DIR to keep it)"
	}
	fmt.Fprintf(stdout, "%s\n", emb.URL())
	fmt.Fprintf(stderr, "NATS server with JetStream ready at %s; store: %s\n", emb.URL(), store)
	if u := emb.MonitorURL(); u != "" {
		fmt.Fprintf(stderr, "monitoring: %s (/healthz, /varz, /jsz)\n", u)
	}
	if u := emb.ClusterURL(); u != "" {
		fmt.Fprintf(stderr, "cluster %s: routes at %s; give runs, nodes and watchers every server's URL, comma-separated\n", o.ClusterName, u)
	}
	if sc != nil {
		fmt.Fprintf(stderr, "credentials: %s (requester.creds, watcher.creds, and each node its own: orchestrator auth node NAME --dir %s; only the server's clients holding one get in)\n",
			sc.Dir, sc.Dir)
	}
	fmt.Fprintf(stderr, "nodes:    node --nats %s%s --workspace DIR\nruns:     orchestrator run --nats %s%s \"task\"\nwatch:    orchestrator watch --nats %s%s\n",
		emb.URL(), sc.CredsFlag(bus.RoleNode), emb.URL(), sc.CredsFlag(bus.RoleRequester), emb.URL(), sc.CredsFlag(bus.RoleWatcher))
}

// replicasSaid says how many replicas the streams of limits have.
func replicasSaid(l bus.StreamLimits) string {
	switch {
	case l.Replicas > 0:
		return fmt.Sprintf("nats.replicas %d", l.Replicas)
	case l.HubSize >= bus.ClusterReplicas:
		return fmt.Sprintf("%d replicas: a cluster of %d servers", bus.ClusterReplicas, l.HubSize)
	}
	return fmt.Sprintf("1 replica: a cluster of %d servers keeps one (set nats.replicas to choose)", l.HubSize)
}
