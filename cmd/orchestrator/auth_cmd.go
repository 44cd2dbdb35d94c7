package main

import (
	"context"
	"fmt"
	"github.com/troupe-ai/troupe/app/authcli"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/troupe-ai/troupe/app/config"
	"github.com/troupe-ai/troupe/app/runner"
	"github.com/troupe-ai/troupe/bus"
	"github.com/troupe-ai/troupe/internal/httpguard"
)

// checkNoAuth refuses an unauthenticated server on any address beyond
// loopback: anyone who reaches it could start work on every node.
func checkNoAuth(host string) error {
	if httpguard.IsLoopbackHost(host) {
		return nil
	}
	return usageErr("--no-auth on %s refused: without credentials anyone who reaches that address could run tasks on every node; "+
		"drop --no-auth (serve writes creds files for each role) or listen on 127.0.0.1", host)
}

// cmdAuth is `orchestrator auth`: init (the key material, a nats-server
// configuration and the creds files for an existing server), node (a
// node's own credentials), revoke (one set of credentials, at once) and
// list (who holds what).
func cmdAuth(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) (int, error) {
	if len(args) == 0 {
		return exitUsage, usageErr("usage: orchestrator auth init|node|revoke|list ...")
	}
	topic := "auth " + args[0]
	if _, ok := commandFlags[topic]; !ok {
		return exitUsage, usageErr("unknown auth command %q (init, node, revoke or list)", args[0])
	}
	fs := flagsOf(topic)
	pos, err := fs.parse(args[1:])
	if err != nil {
		return exitUsage, err
	}
	switch args[0] {
	case "init":
		return authInit(pos, fs, getenv, stdout, stderr)
	case "node":
		return authNode(pos, fs, stdout, stderr)
	case "revoke":
		return authRevoke(ctx, pos, fs, getenv, stdout, stderr)
	default:
		return authList(pos, fs, stdout)
	}
}

// authInit is `auth init DIR`: the prefix is the configuration's.
func authInit(pos []string, fs *flagSet, getenv func(string) string, stdout, stderr io.Writer) (int, error) {
	if len(pos) != 1 {
		return exitUsage, usageErr("usage: orchestrator auth init DIR [--config FILE]")
	}
	cfg, err := config.Load(config.Sources{File: fs.values["config"], Home: getenv("HOME"), Getenv: getenv})
	if err != nil {
		return exitUsage, usageErr("%v", err)
	}
	return codeOf(authcli.Init(pos[0], cfg.NATS.Prefix, stdout, stderr))
}

// authNode is `auth node NAME --dir DIR [--kinds K,...]`.
func authNode(pos []string, fs *flagSet, stdout, stderr io.Writer) (int, error) {
	if len(pos) != 1 {
		return exitUsage, usageErr("usage: orchestrator auth node NAME --dir DIR [--kinds K,...]")
	}
	a, err := authcli.Open(fs.values["dir"], "auth node")
	if err != nil {
		return exitUsage, err
	}
	var kinds []string
	if k := fs.values["kinds"]; k != "" {
		kinds = strings.Split(k, ",")
	}
	return codeOf(authcli.Node(a, pos[0], kinds, stdout, stderr))
}

// authRevoke is `auth revoke NAME --dir DIR [--nats URL]`.
func authRevoke(ctx context.Context, pos []string, fs *flagSet, getenv func(string) string, stdout, stderr io.Writer) (int, error) {
	if len(pos) != 1 {
		return exitUsage, usageErr("usage: orchestrator auth revoke NAME --dir DIR [--nats URL] [--config FILE]")
	}
	a, err := authcli.Open(fs.values["dir"], "auth revoke")
	if err != nil {
		return exitUsage, err
	}
	cfg, err := config.Load(config.Sources{File: fs.values["config"], Home: getenv("HOME"), Getenv: getenv})
	if err != nil {
		return exitUsage, usageErr("%v", err)
	}
	url, setting := cfg.NATS.URL, "nats.url"
	if v := fs.values["nats"]; v != "" {
		url, setting = v, "--nats"
	}
	return codeOf(authcli.Revoke(ctx, a, pos[0], cfg.NATS, url, setting, stdout, stderr))
}

// authList is `auth list --dir DIR`: who holds which credentials.
func authList(pos []string, fs *flagSet, stdout io.Writer) (int, error) {
	if len(pos) != 0 {
		return exitUsage, usageErr("usage: orchestrator auth list --dir DIR")
	}
	a, err := authcli.Open(fs.values["dir"], "auth list")
	if err != nil {
		return exitUsage, err
	}
	return codeOf(authcli.List(a, stdout))
}

// serveAuth gives serve's server its role credentials (in the store's
// creds folder, or a temporary one with an ephemeral store, or the folder
// --auth names, which auth init wrote for every server of a cluster), or
// none with --no-auth on loopback; a shared token (nats.token) keeps the
// old one-token mode, with a warning.
func serveAuth(o *bus.EmbeddedOptions, noAuth bool, authDir, prefix string, stderr io.Writer) (*runner.ServerCreds, int, error) {
	switch {
	case authDir != "" && (noAuth || o.Token != ""):
		return nil, exitUsage, usageErr("--auth excludes --no-auth and nats.token")
	case authDir != "":
		if _, err := os.Stat(filepath.Join(authDir, "account.nk")); err != nil {
			return nil, exitUsage, usageErr("--auth %s: no keys there (%v): write them once with `orchestrator auth init %s` and give every server of the cluster the same folder",
				authDir, err, authDir)
		}
		sc, err := runner.ReadServerCreds(authDir, prefix) // written by auth init; maybe a read-only mount
		if err != nil {
			return nil, exitFailed, err
		}
		o.Auth = sc.Auth
		return sc, exitOK, nil
	case noAuth:
		if err := checkNoAuth(o.Host); err != nil {
			return nil, exitUsage, err
		}
		return nil, exitOK, nil
	case o.Token != "":
		fmt.Fprintln(stderr, "warning: nats.token is one secret for every role: whoever can watch can also start and cancel work; drop it to get a creds file per role")
		return nil, exitOK, nil
	}
	dir := ""
	if !o.Ephemeral {
		dir = filepath.Join(o.StoreDir, "creds")
	}
	sc, err := runner.NewServerCreds(dir, prefix, "")
	if err != nil {
		return nil, exitFailed, err
	}
	o.Auth = sc.Auth
	return sc, exitOK, nil
}
