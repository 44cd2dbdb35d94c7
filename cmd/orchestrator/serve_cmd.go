package main

import (
	"context"
	"fmt"
	"github.com/troupe-ai/troupe/app/serve"
	"io"
	"strings"
	"time"

	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/app/config"
	"github.com/troupe-ai/troupe/app/runner"
	"github.com/troupe-ai/troupe/bus"
	"github.com/troupe-ai/troupe/internal/httpguard"
)

// cmdServe runs the embedded NATS server (with JetStream and troupe's
// streams) as a long-lived process for nodes and watchers, until
// interrupted.
func cmdServe(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) (int, error) {
	fs := flagsOf("serve")
	pos, err := fs.parse(args)
	if err != nil {
		return exitUsage, err
	}
	if len(pos) > 0 {
		return exitUsage, usageErr("serve takes no arguments")
	}
	o, err := serveOptions(fs)
	if err != nil {
		return exitUsage, err
	}
	guard, err := webGuard(fs, "http")
	if err != nil {
		return exitUsage, err
	}
	// The configuration as run loads it, but for the workspace's: serve has
	// none. os.UserHomeDir is $HOME here; getenv keeps tests off the real one.
	cfg, err := config.Load(config.Sources{File: fs.values["config"], Home: getenv("HOME"), Getenv: getenv})
	if err != nil {
		return exitUsage, usageErr("%v", err)
	}
	if err := serve.CheckConfig(cfg); err != nil {
		return exitUsage, err
	}
	o.Token, o.Sync = cfg.NATS.Token, cfg.NATS.Sync
	log := zerolog.New(stderr).Level(zerolog.WarnLevel)
	sc, code, err := serveAuth(&o, fs.bools["no-auth"], fs.values["auth"], cfg.NATS.Prefix, stderr)
	if err != nil {
		return code, err
	}
	defer sc.Close()
	emb, err := bus.StartEmbedded(ctx, o, log)
	if err != nil {
		return exitUsage, usageErr("serve: %v", err)
	}
	defer emb.Shutdown(context.Background())
	leave, err := serve.Hub(ctx, emb, o, cfg, sc.Path(bus.RoleRequester), stderr, log)
	if err != nil {
		return exitFailed, err
	}
	defer leave()
	stopWeb, err := serveWeb(ctx, guard, bus.ConnectOptions{URLs: emb.URL(), Token: o.Token, CredsFile: sc.Path(bus.RoleWatcher),
		Name: "troupe serve web", Prefix: cfg.NATS.Prefix}, log, stderr)
	if err != nil {
		return exitFailed, err
	}
	defer stopWeb()
	serve.Banner(stdout, stderr, emb, o, sc)
	<-ctx.Done()
	fmt.Fprintln(stderr, "shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	emb.Shutdown(sctx)
	return exitOK, nil
}

// serveOptions are the embedded server's options from serve's flags.
func serveOptions(fs *flagSet) (bus.EmbeddedOptions, error) {
	listen := fs.values["listen"]
	if listen == "" {
		listen = "127.0.0.1:4222"
	}
	host, port, err := runner.SplitListen(listen)
	if err != nil {
		return bus.EmbeddedOptions{}, usageErr("--listen: %v", err)
	}
	o := bus.EmbeddedOptions{Host: host, Port: port, StoreDir: fs.values["store"], Ephemeral: fs.bools["ephemeral"] || fs.values["store"] == "",
		ServerName: fs.values["name"], ClusterName: fs.values["cluster"]}
	if a := fs.values["monitor"]; a != "" {
		if o.MonitorHost, o.MonitorPort, err = runner.SplitListen(a); err != nil {
			return bus.EmbeddedOptions{}, usageErr("--monitor: %v", err)
		}
		if o.MonitorHost == "" { // ":8222": every interface
			o.MonitorHost = "0.0.0.0"
		}
		if !fs.bools["monitor-public"] && !httpguard.IsLoopbackHost(o.MonitorHost) {
			return bus.EmbeddedOptions{}, usageErr("--monitor %s listens beyond loopback: NATS's monitoring endpoint shows every connection, subscription and stream; add --monitor-public to mean it", a)
		}
	}
	if o.ClusterName == "" {
		return o, nil
	}
	if o.ClusterHost, o.ClusterPort, err = runner.SplitListen(fs.values["cluster-listen"]); err != nil {
		return bus.EmbeddedOptions{}, usageErr("--cluster-listen: %v", err)
	}
	if r := fs.values["routes"]; r != "" {
		o.Routes = strings.Split(r, ",")
	}
	if o.ServerName == "" {
		return bus.EmbeddedOptions{}, usageErr("--cluster needs --name (each server of a cluster needs its own)")
	}
	return o, nil
}
