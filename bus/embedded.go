package bus

import (
	"context"
	"errors"

	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/rs/zerolog"
)

// EmbeddedOptions configure an in-process nats-server with JetStream.
type EmbeddedOptions struct {
	// Host is the listen address; default 127.0.0.1. Anything beyond
	// loopback must be asked for.
	Host string
	// Port is the client port; 0 picks a free one.
	Port int
	// StoreDir holds JetStream's data; with Ephemeral (or when empty) a
	// temporary directory is used and removed at Shutdown.
	StoreDir  string
	Ephemeral bool
	// TempBase is where the temporary store is made (default the
	// system's temporary directory); troupe's programs give one in their
	// state directory, which agents' commands may not read.
	TempBase string
	// ServerName names the server (required to differ within a cluster).
	ServerName string
	// Token, when set, is required of every client.
	Token string
	// Auth, when set, puts the server in operator mode: every client
	// needs credentials of a role (see Auth.Creds), and may only use the
	// subjects of that role. It excludes Token.
	Auth *Auth
	// Cluster: with ClusterName set the server listens for routes on
	// ClusterHost:ClusterPort (default Host, a free port) and joins the
	// servers in Routes (nats-route://host:port URLs).
	ClusterName string
	ClusterHost string
	ClusterPort int
	Routes      []string
	// Sync is how the store reaches the disk (nats.sync): SyncAlways
	// flushes every write before it is acknowledged; an interval flushes
	// that often, and a power failure loses what was acknowledged since
	// the last flush (on every server at once, for a replicated stream);
	// "" takes SyncDefault.
	Sync string
	// MonitorHost:MonitorPort, with MonitorHost set, serves NATS's HTTP
	// monitoring endpoint (/healthz, /varz, /jsz; port 0 picks a free
	// one). Unset: none.
	MonitorHost string
	MonitorPort int
	// ReadyTimeout bounds the wait for the server to accept clients
	// (default 10s).
	ReadyTimeout time.Duration
}

// Embedded is a running in-process server.
type Embedded struct {
	srv     *server.Server
	tempDir string
	opts    *server.Options
}

// StartEmbedded starts the server and waits until it accepts clients.
func StartEmbedded(ctx context.Context, o EmbeddedOptions, log zerolog.Logger) (*Embedded, error) {
	if o.Host == "" {
		o.Host = "127.0.0.1"
	}
	if o.ReadyTimeout == 0 {
		o.ReadyTimeout = 10 * time.Second
	}
	e := &Embedded{}
	store := o.StoreDir
	if o.Ephemeral || store == "" {
		dir, err := os.MkdirTemp(o.TempBase, "troupe-nats-")
		if err != nil {
			return nil, fmt.Errorf("embedded nats: store: %w", err)
		}
		store, e.tempDir = dir, dir
	} else if err := os.MkdirAll(store, 0o700); err != nil {
		return nil, fmt.Errorf("embedded nats: store %s: %w", store, err)
	}
	opts, err := o.serverOptions(store)
	if err != nil {
		e.cleanup()
		return nil, fmt.Errorf("embedded nats: %w", err)
	}
	srv, err := server.NewServer(opts)
	if err != nil {
		e.cleanup()
		return nil, fmt.Errorf("embedded nats: %w", err)
	}
	// The server's log goes to log at debug level; its fatal error, at any
	// level, becomes StartEmbedded's.
	sl := serverLogger{log: zerolog.Nop(), fatal: make(chan string, 1)}
	if log.GetLevel() <= zerolog.DebugLevel {
		sl.log = log.With().Str("component", "nats-server").Logger()
	}
	srv.SetLoggerV2(sl, false, false, false)
	go srv.Start()
	for deadline := time.Now().Add(o.ReadyTimeout); !srv.ReadyForConnections(100 * time.Millisecond); {
		select {
		case msg := <-sl.fatal:
			srv.Shutdown()
			e.cleanup()
			return nil, fmt.Errorf("embedded nats: %s", msg)
		default:
		}
		if time.Now().After(deadline) {
			srv.Shutdown()
			e.cleanup()
			return nil, fmt.Errorf("embedded nats: not ready within %v (listening on %s:%d)", o.ReadyTimeout, o.Host, o.Port)
		}
	}
	if ctx.Err() != nil {
		srv.Shutdown()
		e.cleanup()
		return nil, ctx.Err()
	}
	e.srv, e.opts = srv, opts
	return e, nil
}

// serverOptions are the nats-server options of o, its JetStream store in
// store: the listeners (client, monitoring, cluster routes), the sync
// policy and the role credentials.
func (o EmbeddedOptions) serverOptions(store string) (*server.Options, error) {
	port := o.Port
	if port == 0 {
		port = server.RANDOM_PORT
	}
	opts := &server.Options{ServerName: o.ServerName, Host: o.Host, Port: port, JetStream: true, StoreDir: store,
		NoLog: true, NoSigs: true, Authorization: o.Token, MaxPayload: 8 << 20, MaxControlLine: MaxControlLine}
	if o.MonitorHost != "" {
		opts.HTTPHost, opts.HTTPPort = o.MonitorHost, o.MonitorPort
		if o.MonitorPort == 0 {
			opts.HTTPPort = server.RANDOM_PORT
		}
	}
	if err := setSync(opts, o.Sync); err != nil {
		return nil, err
	}
	if o.Auth != nil {
		if o.Token != "" {
			return nil, errors.New("a token and role credentials exclude each other")
		}
		if err := o.Auth.configure(opts); err != nil {
			return nil, err
		}
	}
	if o.ClusterName != "" {
		ch := o.ClusterHost
		if ch == "" {
			ch = o.Host
		}
		cp := o.ClusterPort
		if cp == 0 {
			cp = server.RANDOM_PORT
		}
		opts.Cluster = server.ClusterOpts{Name: o.ClusterName, Host: ch, Port: cp}
		for _, r := range o.Routes {
			u, err := url.Parse(r)
			if err != nil {
				return nil, fmt.Errorf("route %q: %w", r, err)
			}
			opts.Routes = append(opts.Routes, u)
		}
	}
	return opts, nil
}

// URL is the client URL to give nodes and watchers.
func (e *Embedded) URL() string { return e.srv.ClientURL() }

// ClusterURL is the route URL other servers join (empty without a cluster).
func (e *Embedded) ClusterURL() string {
	if e.opts.Cluster.Name == "" {
		return ""
	}
	return "nats-route://" + net.JoinHostPort(e.opts.Cluster.Host, strconv.Itoa(e.opts.Cluster.Port))
}

// MonitorURL is the monitoring endpoint's base URL ("" without one).
func (e *Embedded) MonitorURL() string {
	if e.opts.HTTPHost == "" {
		return ""
	}
	if a := e.srv.MonitorAddr(); a != nil {
		return "http://" + a.String()
	}
	return ""
}

// Server is the running server, for tests and stats.
func (e *Embedded) Server() *server.Server { return e.srv }

// Shutdown stops the server once its clients are gone (or ctx ends), and
// removes a temporary store.
func (e *Embedded) Shutdown(ctx context.Context) {
	done := make(chan struct{})
	go func() {
		e.srv.Shutdown()
		e.srv.WaitForShutdown()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
	}
	e.cleanup()
}

func (e *Embedded) cleanup() {
	if e.tempDir != "" {
		_ = os.RemoveAll(e.tempDir)
	}
}

// serverLogger routes nats-server's log lines to zerolog, and its first
// fatal error to fatal.
type serverLogger struct {
	log   zerolog.Logger
	fatal chan string
}

func (l serverLogger) Noticef(format string, v ...any) { l.log.Info().Msgf(format, v...) }
func (l serverLogger) Warnf(format string, v ...any)   { l.log.Warn().Msgf(format, v...) }
func (l serverLogger) Fatalf(format string, v ...any) {
	l.log.Error().Msgf(format, v...)
	select {
	case l.fatal <- fmt.Sprintf(format, v...):
	default:
	}
}
func (l serverLogger) Errorf(format string, v ...any) { l.log.Error().Msgf(format, v...) }
func (l serverLogger) Debugf(format string, v ...any) { l.log.Debug().Msgf(format, v...) }
func (l serverLogger) Tracef(format string, v ...any) { l.log.Trace().Msgf(format, v...) }

// ClusterSize is how many servers o's cluster has, as its routes say:
// this one and each other server its routes name (a route to this
// server's own cluster address does not count twice); 1 without a
// cluster.
func (o EmbeddedOptions) ClusterSize() int {
	if o.ClusterName == "" {
		return 1
	}
	host := o.ClusterHost
	if host == "" {
		host = o.Host
	}
	if host == "" {
		host = "127.0.0.1"
	}
	own := net.JoinHostPort(host, strconv.Itoa(o.ClusterPort))
	others := map[string]bool{}
	for _, r := range o.Routes {
		u, err := url.Parse(r)
		if err != nil || u.Host == "" || o.ClusterPort != 0 && u.Host == own {
			continue
		}
		others[u.Host] = true
	}
	return len(others) + 1
}
