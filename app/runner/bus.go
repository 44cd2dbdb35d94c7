package runner

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/app/config"
	"github.com/troupe-ai/troupe/bus"
	"github.com/troupe-ai/troupe/internal/statedir"
)

// Bus is a run's NATS: an embedded server (unless an external one was
// named), the connection, and the event publisher.
type Bus struct {
	emb  *bus.Embedded
	conn *bus.Conn
	pub  *bus.Publisher
	url  string
	// creds are the role credentials of the embedded server (nil with an
	// external server or a shared token).
	creds *ServerCreds
	// credsFile is the .creds file the run connected to an external server
	// with ("" for the embedded one or none).
	credsFile string
}

// StartBus starts the embedded server with its store and credentials in
// the workspace's state directory (<state>/nats, out of the agents'
// reach; nats.store_dir chooses another; a temporary store when
// ephemeral), or connects to cfg.URL; a URL or credentials that do not
// work are a usage error naming the setting.
func StartBus(ctx context.Context, cfg config.NATS, limits bus.StreamLimits, setting, workspace string, log zerolog.Logger) (*Bus, error) {
	b := &Bus{}
	urls := cfg.URL
	if urls == "" {
		host, port, err := SplitListen(cfg.Listen)
		if err != nil {
			return nil, Usage("nats.listen: %v", err)
		}
		state, err := StateDir(workspace)
		if err != nil {
			return nil, err
		}
		store, tmp := cfg.StoreDir, filepath.Join(state, "tmp")
		if store == "" && !cfg.Ephemeral {
			store = filepath.Join(state, "nats")
		}
		if err := statedir.Make(tmp); err != nil {
			return nil, err
		}
		eo := bus.EmbeddedOptions{Host: host, Port: port, StoreDir: store, Ephemeral: cfg.Ephemeral, Token: cfg.Token, TempBase: tmp, Sync: cfg.Sync}
		if cfg.Token == "" { // the embedded server takes only this process's credentials
			credsDir := ""
			if !cfg.Ephemeral {
				credsDir = filepath.Join(store, "creds")
			}
			if b.creds, err = NewServerCreds(credsDir, cfg.Prefix, tmp); err != nil {
				return nil, fmt.Errorf("credentials of the embedded NATS server: %w", err)
			}
			eo.Auth, cfg.Creds = b.creds.Auth, b.creds.Path(bus.RoleRequester)
		}
		b.emb, err = bus.StartEmbedded(ctx, eo, log)
		if err != nil {
			b.creds.Close()
			return nil, fmt.Errorf("start the embedded NATS server: %w", err)
		}
		urls, setting = b.emb.URL(), "embedded server"
	}
	conn, err := Connect(ctx, cfg, urls, setting, "troupe orchestrator", log)
	if err != nil {
		b.Close(context.Background())
		return nil, Usage("%v", err)
	}
	b.conn, b.url = conn, urls
	if b.emb == nil {
		b.credsFile = cfg.Creds
	}
	diffs, err := conn.ReconcileStreams(ctx, limits)
	if err != nil {
		b.Close(context.Background())
		return nil, fmt.Errorf("%s: %w", setting, err)
	}
	logLimitDiffs(log, diffs)
	if b.pub, err = conn.NewPublisher(bus.PublisherOptions{Queue: cfg.PublishQueue, Log: log}); err != nil {
		b.Close(context.Background())
		return nil, err
	}
	return b, nil
}

// Conn is the connection to the run's NATS.
func (b *Bus) Conn() *bus.Conn { return b.conn }

// Publisher publishes the run's events.
func (b *Bus) Publisher() *bus.Publisher { return b.pub }

// Creds are the role credentials of the embedded server (nil with an
// external server or a shared token).
func (b *Bus) Creds() *ServerCreds { return b.creds }

// URL is the server's address (the embedded one's, or the URLs named).
func (b *Bus) URL() string { return b.url }

// Dropped counts the events that could not be published, after waiting
// (at most 10 s) for the acknowledgements still awaited, so that the count
// run.finished carries is settled: an event whose acknowledgement times out
// counts as dropped only then.
func (b *Bus) Dropped() uint64 {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = b.pub.Flush(ctx)
	return b.pub.Dropped()
}

// Close flushes the events, closes the connection and stops the embedded
// server, in that order, so no event is lost at exit.
func (b *Bus) Close(ctx context.Context) {
	if b == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if b.pub != nil {
		_ = b.pub.Close(ctx)
	}
	if b.conn != nil {
		b.conn.Close()
	}
	if b.emb != nil {
		b.emb.Shutdown(ctx)
	}
	b.creds.Close()
}

// Announce tells the user where the events are and how to watch them.
func (b *Bus) Announce(w io.Writer, run string) {
	where := "NATS"
	if b.emb != nil {
		where = "embedded NATS"
	}
	fmt.Fprintf(w, "events: %s at %s · watch: %s\n", where, b.url, b.WatchCommand(run))
}

// WatchCommand is the command line that watches run from another
// terminal (from its first event), with the credentials it needs: the embedded server's watcher
// file; against an external server, the watcher.creds beside the run's
// own .creds file (serve's and auth init's folder) or else the run's file
// itself, which may read the events too. A password in the URL is masked.
func (b *Bus) WatchCommand(run string) string {
	args := []string{"orchestrator", "watch", "--nats", shellWord(maskPasswords(b.url))}
	creds := b.creds.Path(bus.RoleWatcher)
	if b.emb == nil && b.credsFile != "" {
		creds = b.credsFile
		if w := filepath.Join(filepath.Dir(b.credsFile), string(bus.RoleWatcher)+".creds"); w != b.credsFile {
			if _, err := os.Stat(w); err == nil {
				creds = w
			}
		}
	}
	if creds != "" {
		args = append(args, "--creds", shellWord(creds))
	}
	// --from-start: the run's events from its first, so the line works
	// whenever it is copied, and ends with the run.
	return strings.Join(append(args, "--run", shellWord(run), "--from-start"), " ")
}

// Connect connects to the NATS at urls with cfg's credentials, TLS and
// prefix, as name; setting names where urls came from, for the error
// when they do not work.
func Connect(ctx context.Context, cfg config.NATS, urls, setting, name string, log zerolog.Logger) (*bus.Conn, error) {
	return bus.Connect(ctx, bus.ConnectOptions{URLs: urls, Setting: setting, Token: cfg.Token, User: cfg.User,
		Password: cfg.Password, CredsFile: cfg.Creds, TLSCA: cfg.TLSCA, TLSCert: cfg.TLSCert, TLSKey: cfg.TLSKey,
		Name: name, Prefix: cfg.Prefix}, log)
}

// SplitListen parses host:port (port 0 or empty = any free port).
func SplitListen(listen string) (string, int, error) {
	if listen == "" {
		return "127.0.0.1", 0, nil
	}
	host, p, err := net.SplitHostPort(listen)
	if err != nil {
		return "", 0, err
	}
	port := 0
	if p != "" {
		if port, err = strconv.Atoi(p); err != nil || port < 0 || port > 65535 {
			return "", 0, fmt.Errorf("bad port in %q", listen)
		}
	}
	if host == "" {
		host = "127.0.0.1"
	}
	return host, port, nil
}

// logLimitDiffs logs the events stream's limits that differ from the
// configuration's: applied ones at info, kept ones (the configuration's
// defaults) at debug, since a run does not undo what an operator set.
func logLimitDiffs(log zerolog.Logger, diffs []bus.LimitDiff) {
	for _, d := range diffs {
		if d.Failed != "" { // replicas the hub cannot have yet
			log.Warn().Str("stream", d.Stream).Str("setting", d.Setting).Msg(d.String())
			continue
		}
		if d.Applied {
			log.Info().Str("stream", d.Stream).Str("setting", d.Setting).Msg(d.String())
		} else {
			log.Debug().Str("stream", d.Stream).Str("setting", d.Setting).Msg(d.String())
		}
	}
}
