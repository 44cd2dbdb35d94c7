package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/troupe-ai/troupe/bus"
	"github.com/troupe-ai/troupe/cluster"
	"github.com/troupe-ai/troupe/internal/httpguard"
	"github.com/troupe-ai/troupe/internal/runner"
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

// cmdAuth is `orchestrator auth init DIR`: the operator and account
// material, a nats-server configuration snippet and the three creds files
// for an existing NATS server or cluster.
func cmdAuth(_ context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	if len(args) != 2 || args[0] != "init" {
		return exitUsage, usageErr("usage: orchestrator auth init DIR")
	}
	dir := args[1]
	if a, paths, err := bus.InitAuthDir(dir, bus.DefaultPrefix); err != nil {
		return exitFailed, err
	} else {
		conf, _ := filepath.Abs(filepath.Join(dir, bus.ServerConfigFile))
		fmt.Fprintln(stdout, dir)
		fmt.Fprintf(stderr, "wrote the operator and account keys, %s and the creds files of each role in %s (keep it private: its account.nk mints credentials)\n",
			bus.ServerConfigFile, dir)
		fmt.Fprintf(stderr, "server:   nats-server -js -c %s   (or include it in your configuration)\n", conf)
		fmt.Fprintf(stderr, "runs:     orchestrator run --nats URL --creds %s \"task\"\n", paths[bus.RoleRequester])
		fmt.Fprintf(stderr, "nodes:    node --nats URL --creds %s --workspace DIR\n", paths[bus.RoleNode])
		fmt.Fprintf(stderr, "watch:    orchestrator watch --nats URL --creds %s\n", paths[bus.RoleWatcher])
		fmt.Fprintf(stderr, "account:  %s (the monitoring endpoint's and KEDA's name for troupe's account)\n", a.AccountKey())
		token := filepath.Join(dir, httpguard.TokenFileName)
		if _, err := httpguard.WriteTokenFile(token); err != nil {
			return exitFailed, fmt.Errorf("write the HTTP token: %w", err)
		}
		fmt.Fprintf(stderr, "http:     --http-token-file %s (0600) for serve --http, watch --web, node --http and mcp --http beyond loopback\n", token)
	}
	return exitOK, nil
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
	sc, err := runner.NewServerCreds(dir, prefix)
	if err != nil {
		return nil, exitFailed, err
	}
	o.Auth = sc.Auth
	return sc, exitOK, nil
}

// refusedCounts are the messages a run refused from the wire.
type refusedCounts struct {
	// Results without the proof of the node that pulled the task.
	Results uint64 `json:"results"`
	// Duplicates are second results of a task (a redelivery's), dropped.
	Duplicates uint64 `json:"duplicates"`
	// Notices and Budget are start notices and budget requests that did
	// not prove the current delivery of a task of the run.
	Notices uint64 `json:"notices"`
	Budget  uint64 `json:"budget"`
}

// refusedOf is what a run refused (nil without remote agents).
func refusedOf(st *cluster.RemoteStats) *refusedCounts {
	if st == nil {
		return nil
	}
	return &refusedCounts{Results: st.Forged, Duplicates: st.Duplicates, Notices: st.Notices, Budget: st.Budget}
}

// printRefused says what the run refused, when it refused anything.
func printRefused(w io.Writer, r *refusedCounts) {
	if r == nil || r.Results+r.Notices+r.Budget == 0 {
		return
	}
	fmt.Fprintf(w, "refused: %d result(s), %d start notice(s) and %d budget request(s) not from the node that holds the task's current delivery (see the warnings for their subjects)\n",
		r.Results, r.Notices, r.Budget)
}
