package main

import (
	"context"
	"io"

	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/app/webserver"
	"github.com/troupe-ai/troupe/bus"
	"github.com/troupe-ai/troupe/internal/httpguard"
)

// webGuard is the guard of the web view's address in flag (--http of
// serve, --web of watch) with --http-public and --http-token-file, or nil
// when the flag is not given; a refusal is a usage error.
func webGuard(fs *flagSet, flag string) (*httpguard.Guard, error) {
	addr := fs.values[flag]
	if addr == "" {
		return nil, nil
	}
	g, err := httpguard.New(httpguard.Options{Flag: "--" + flag, Addr: addr, Public: fs.bools["http-public"],
		TokenFile: fs.values["http-token-file"], Exposes: webserver.Exposes})
	if err != nil {
		return nil, usageErr("%v", err)
	}
	return g, nil
}

// serveWeb serves the web view of serve's own server (reached with co)
// behind guard, and returns what stops it; a nil guard serves nothing.
func serveWeb(ctx context.Context, guard *httpguard.Guard, co bus.ConnectOptions, log zerolog.Logger, stderr io.Writer) (func(), error) {
	if guard == nil {
		return func() {}, nil
	}
	web, err := webserver.Connect(ctx, co, webserver.Options{Guard: guard, Log: log})
	if err != nil {
		return nil, err
	}
	web.Announce(stderr)
	return web.Close, nil
}

// watchWeb serves the web view of watch's connection behind guard (watch
// --web), and returns what stops it; a nil guard serves nothing.
func watchWeb(ctx context.Context, conn *bus.Conn, guard *httpguard.Guard, log zerolog.Logger, stderr io.Writer) (func(), error) {
	if guard == nil {
		return func() {}, nil
	}
	web, err := webserver.Start(ctx, webserver.Options{Conn: conn, Guard: guard, Log: log})
	if err != nil {
		return nil, err
	}
	web.Announce(stderr)
	return web.Close, nil
}
