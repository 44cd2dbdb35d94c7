package authcli

import (
	"fmt"
	"io"
	"path/filepath"

	"github.com/troupe-ai/troupe/bus"
	"github.com/troupe-ai/troupe/internal/httpguard"
)

// Init writes into dir the operator and account keys, a nats-server
// configuration, the creds files of each role for prefix and the HTTP
// token, and says how a server, runs, nodes and watchers use them.
func Init(dir, prefix string, stdout, stderr io.Writer) error {
	a, paths, err := bus.InitAuthDir(dir, prefix)
	if err != nil {
		return err
	}
	conf, _ := filepath.Abs(filepath.Join(dir, bus.ServerConfigFile))
	fmt.Fprintln(stdout, dir)
	fmt.Fprintf(stderr, "wrote the operator and account keys, %s and the creds files in %s for nats.prefix %s (keep it private: its account.nk mints credentials)\n",
		bus.ServerConfigFile, dir, a.Prefix())
	fmt.Fprintf(stderr, "server:   nats-server -js -c %s   (or include it in your configuration)\n", conf)
	fmt.Fprintf(stderr, "runs:     orchestrator run --nats URL --creds %s \"task\"\n", paths[bus.RoleRequester])
	fmt.Fprintf(stderr, "nodes:    node --nats URL --creds %s --workspace DIR   (one file per node: orchestrator auth node NAME --dir %s)\n",
		nodeCredsPath(a, paths), dir)
	fmt.Fprintf(stderr, "watch:    orchestrator watch --nats URL --creds %s\n", paths[bus.RoleWatcher])
	fmt.Fprintf(stderr, "account:  %s (the monitoring endpoint's and KEDA's name for troupe's account)\n", a.AccountKey())
	token := filepath.Join(dir, httpguard.TokenFileName)
	if _, err := httpguard.WriteTokenFile(token); err != nil {
		return fmt.Errorf("write the HTTP token: %w", err)
	}
	fmt.Fprintf(stderr, "http:     --http-token-file %s (0600) for serve --http, watch --web, node --http and mcp --http beyond loopback\n", token)
	return nil
}

// nodeCredsPath is the creds file to show for a first node: the first
// node identity's, or the shared node.creds an earlier troupe left.
func nodeCredsPath(a *bus.Auth, paths map[bus.Role]string) string {
	if p, shared := paths[bus.RoleNode]; shared {
		return p
	}
	return a.NodePath(bus.FirstNode)
}
