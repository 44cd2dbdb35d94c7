// Package nodecmd is the node program: flags, config and signals around a
// cluster.Node. cmd/node and `orchestrator node` both run it.
package nodecmd

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/app/config"
	"github.com/troupe-ai/troupe/app/setup"
	"github.com/troupe-ai/troupe/bus"
	"github.com/troupe-ai/troupe/cluster"
	"github.com/troupe-ai/troupe/internal/httpguard"
	"github.com/troupe-ai/troupe/messages"
	"github.com/troupe-ai/troupe/telemetry"
)

// Version is set at build time with -ldflags "-X github.com/troupe-ai/troupe/app/nodecmd.Version=...".
var Version = "dev"

// Usage is the node program's help.
const Usage = `Usage: node --nats URL [--creds FILE] --workspace DIR [--kinds explore,worker] [--slots N] [--name NAME] [--config FILE] [--log-level LEVEL]
                  [--http ADDR [--http-public] [--http-token-file FILE]]
       node version

Runs agent tasks that orchestrators placed on the NATS work queue
(placement: remote or auto). Each task runs as a local agent with the same
tools, kinds, limits and model routing as in the orchestrator. The node
works in its own checkout of the repository (--workspace) and uses its own
model key (OPENAI_API_KEY / OPENAI_BASE_URL on this machine): keys never
travel on the wire. Its agents' MCP servers are those of this node's
config (mcp.servers), never the orchestrator's; an agent in a worktree
gets its own instance there (${TROUPE_TREE} in a server's arguments is
that tree). SIGTERM drains: no new tasks, running ones finish (or are
handed back after node.drain_timeout), then exit 0. With
OTEL_EXPORTER_OTLP_ENDPOINT set, its agents' spans go to that OTLP/HTTP
collector, in their parents' traces (service troupe-node).

Flags:
  --nats URL          NATS server or cluster (also TROUPE_NATS_URL, nats.url)
  --creds FILE        this node's own .creds file (nodes/NAME.creds: serve, auth init or auth node
                      writes it; the node takes NAME as its ID; nats.creds)
  --workspace DIR     this node's checkout of the repository (default .)
  --kinds K,...       agent kinds to run (default node.kinds: explore)
  --slots N           tasks at once (default node.slots: 4)
  --name NAME         name shown to watchers (default the host name)
  --config FILE       a config file layered over the others
  --log-level LEVEL   debug, info, warn or error logs on stderr (default info)
  --http ADDR         serve this node's Prometheus metrics at http://ADDR/metrics (loopback)
  --http-public       let --http listen beyond loopback (needs --http-token-file)
  --http-token-file FILE  requests to --http need this token (Authorization: Bearer TOKEN;
                      orchestrator auth init DIR writes DIR/http.token, 0600)

Examples:
  node --nats nats://10.0.0.5:4222 --workspace ~/src/app --kinds explore,worker --slots 8
  TROUPE_NATS_URL=nats://hub:4222 node --workspace . --name builder-2
`

// Run is the node program: it returns the process exit code.
func Run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		switch args[0] {
		case "help": // node help [version]
			fmt.Fprint(stdout, Usage)
			return 0
		case "version", "--version":
			if slices.ContainsFunc(args[1:], func(a string) bool { return a == "-h" || a == "--help" || a == "-help" }) {
				fmt.Fprint(stdout, Usage)
			} else {
				fmt.Fprintln(stdout, versionLine())
			}
			return 0
		}
	}
	var o options
	level := "info"
	fs := newFlags(&o, &level)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, Usage)
			return 0
		}
		fmt.Fprintf(stderr, "node: %v\n\n%s", err, Usage)
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "node: unexpected argument %q\n\n%s", fs.Arg(0), Usage)
		return 2
	}
	guard, err := metricsGuard(o)
	if err != nil {
		fmt.Fprintf(stderr, "node: %v\n", err)
		return 2
	}
	lvl, err := zerolog.ParseLevel(level)
	if err != nil {
		fmt.Fprintf(stderr, "node: --log-level: %v\n", err)
		return 2
	}
	log := zerolog.New(zerolog.ConsoleWriter{Out: stderr, TimeFormat: time.TimeOnly, NoColor: true}).Level(lvl).With().Timestamp().Logger()
	if err := serve(ctx, o, guard, getenv, log, stderr); err != nil {
		fmt.Fprintf(stderr, "node: %v\n", err)
		var ue usageError
		if errors.As(err, &ue) {
			return 2
		}
		return 1
	}
	return 0
}

type options struct {
	nats, workspace, kinds, name, config, creds, http, httpTokenFile string
	slots                                                            int
	httpPublic                                                       bool
}

// newFlags is the node program's flag set, filling o and level.
func newFlags(o *options, level *string) *flag.FlagSet {
	fs := flag.NewFlagSet("node", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&o.nats, "nats", "", "")
	fs.StringVar(&o.workspace, "workspace", ".", "")
	fs.StringVar(&o.kinds, "kinds", "", "")
	fs.IntVar(&o.slots, "slots", 0, "")
	fs.StringVar(&o.name, "name", "", "")
	fs.StringVar(&o.config, "config", "", "")
	fs.StringVar(&o.creds, "creds", "", "")
	fs.StringVar(level, "log-level", *level, "")
	fs.StringVar(&o.http, "http", "", "")
	fs.BoolVar(&o.httpPublic, "http-public", false, "")
	fs.StringVar(&o.httpTokenFile, "http-token-file", "", "")
	return fs
}

// usageError is an error of the caller's: exit code 2.
type usageError struct{ error }

// loadConfig is the node's workspace and validated configuration.
func loadConfig(o options, getenv func(string) string) (string, config.Config, error) {
	ws, err := filepath.Abs(o.workspace)
	if err != nil {
		return "", config.Config{}, usageError{err}
	}
	if st, err := os.Stat(ws); err != nil || !st.IsDir() {
		return "", config.Config{}, usageError{fmt.Errorf("--workspace %s is not a directory", o.workspace)}
	}
	home, _ := os.UserHomeDir()
	cfg, err := config.Load(config.Sources{File: o.config, Home: home, Workspace: ws, Getenv: getenv, Kinds: actors.BuiltinKinds()})
	if err != nil {
		return "", config.Config{}, usageError{err}
	}
	if err := cfg.Validate(); err != nil {
		return "", config.Config{}, usageError{fmt.Errorf("config: %w", err)}
	}
	return ws, cfg, nil
}

func serve(ctx context.Context, o options, guard *httpguard.Guard, getenv func(string) string, log zerolog.Logger, stderr io.Writer) error {
	ws, cfg, err := loadConfig(o, getenv)
	if err != nil {
		return err
	}
	// No configured secret in a log line.
	log = log.Output(zerolog.ConsoleWriter{Out: setup.Redactor(cfg).Writer(stderr), TimeFormat: time.TimeOnly, NoColor: true})
	setting := "nats.url"
	switch {
	case o.nats != "":
		cfg.NATS.URL, setting = o.nats, "--nats"
	case getenv("TROUPE_NATS_URL") != "":
		setting = "TROUPE_NATS_URL"
	}
	if o.creds != "" {
		cfg.NATS.Creds = o.creds
	}
	if cfg.NATS.URL == "" {
		return usageError{errors.New("no NATS server: give --nats URL (orchestrator serve prints one), TROUPE_NATS_URL or nats.url")}
	}
	if err := setup.CheckModel(cfg); err != nil {
		return usageError{err}
	}
	conn, err := bus.Connect(ctx, bus.ConnectOptions{URLs: cfg.NATS.URL, Setting: setting, Token: cfg.NATS.Token,
		User: cfg.NATS.User, Password: cfg.NATS.Password, CredsFile: cfg.NATS.Creds, TLSCA: cfg.NATS.TLSCA,
		TLSCert: cfg.NATS.TLSCert, TLSKey: cfg.NATS.TLSKey, Name: "troupe node", Prefix: cfg.NATS.Prefix}, log)
	if err != nil {
		return usageError{err}
	}
	defer conn.Close()
	agent, done, err := agentOptions(ctx, conn, cfg, ws, getenv, log)
	if err != nil {
		return err
	}
	defer done() // after the node's agents have ended
	if err := nodeStreams(ctx, conn, cfg, log); err != nil {
		return err
	}
	nc := cfg.Node
	ks := nc.Kinds
	if o.kinds != "" {
		ks = strings.Split(o.kinds, ",")
	}
	for _, k := range ks {
		if _, ok := agent.Kinds[k]; !ok {
			return usageError{fmt.Errorf("--kinds: unknown kind %q", k)}
		}
	}
	n := nc.Slots
	if o.slots > 0 {
		n = o.slots
	}
	// The node puts its events on NATS itself: its agents' through each
	// run's requester, its own lifecycle events directly. Its metrics are
	// its own counters (none counted from events).
	metrics, err := startMetrics(ctx, guard, log, stderr)
	if err != nil {
		return err
	}
	node, err := cluster.StartNode(ctx, cluster.NodeOptions{Bus: conn,
		Name: o.name, Kinds: ks, Slots: n, Agent: agent, AckWait: nc.AckWait, MaxDeliver: nc.MaxDeliver,
		Heartbeat: nc.Heartbeat, DrainTimeout: nc.DrainTimeout, BudgetTimeout: nc.BudgetTimeout, Version: Version, Log: log})
	if err != nil {
		return err
	}
	metrics.follow(node, o.name, Version)
	fmt.Fprintf(stderr, "node %s ready: kinds %s, %d slots, workspace %s, NATS %s\n", node.ID(), strings.Join(ks, ","), n, ws, cfg.NATS.URL)
	select {
	case <-ctx.Done():
	case <-conn.Closed():
		// The server closed the connection for good: its credentials
		// were revoked (or expired). Nothing of the node's can reach it.
		// Stop at once: no result could reach the run.
		now, stop := context.WithCancel(context.Background())
		stop()
		_ = node.Drain(now)
		return fmt.Errorf("node %s: the NATS server closed the connection and refuses it again (credentials revoked?): %w", node.ID(), conn.Err())
	}
	fmt.Fprintf(stderr, "node %s draining\n", node.ID())
	dctx, cancel := context.WithTimeout(context.Background(), nc.DrainTimeout+10*time.Second)
	defer cancel()
	if err := node.Drain(dctx); err != nil {
		return err
	}
	st := node.Stats()
	fmt.Fprintf(stderr, "node %s stopped: %d tasks done, %d handed back\n", node.ID(), st.Completed, st.HandedBack)
	if st.EventsDropped+st.EventsRefused > 0 {
		fmt.Fprintf(stderr, "node %s: %d events of its tasks never reached their run's requester (gone, or too slow), %d were refused by it\n",
			node.ID(), st.EventsDropped, st.EventsRefused)
	}
	return nil
}

func versionLine() string {
	commit := "unknown"
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				commit = s.Value[:12]
			}
		}
	}
	return "node " + Version + " (commit " + commit + ") " + runtime.Version() + " protocol " + strconv.Itoa(messages.ProtocolVersion)
}

// agentOptions are the options of the node's agents: their model calls
// take their turns with every run and node of the hub (a node never owns
// the quota), their spans traced when telemetry is on. done ends the
// tracing, the MCP servers and the node's part in the rate limits.
func agentOptions(ctx context.Context, conn *bus.Conn, cfg config.Config, ws string, getenv func(string) string,
	log zerolog.Logger) (actors.Options, func(), error) {
	rates, err := cluster.StartRateHub(ctx, conn, cluster.RateHubOptions{Name: "node", Log: log})
	if err != nil {
		return actors.Options{}, nil, err
	}
	agent, err := setup.TeamOptions(cfg, ws, log, rates.Limiter())
	if err != nil {
		rates.Close()
		return actors.Options{}, nil, usageError{err}
	}
	tp, stopTracing, err := setup.Tracing(ctx, cfg.Telemetry.OTLPEndpoint, telemetry.ServiceNode, getenv, log)
	if err != nil {
		setup.CloseToolSources(agent.ToolSources)
		rates.Close()
		return actors.Options{}, nil, usageError{err}
	}
	agent.Tracer = tp.Tracer()
	return agent, func() {
		stopTracing()
		setup.CloseToolSources(agent.ToolSources) // MCP servers end with the node
		rates.Close()
	}, nil
}
