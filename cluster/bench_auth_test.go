package cluster

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/bus"
)

// benchFanoutCreds is benchFanout with the server in operator mode: the
// orchestrator holds the requester's credentials and each node a node's,
// so the server checks every publish and subscription against the role's
// permissions.
func benchFanoutCreds(b *testing.B, n int) {
	dir := filepath.Join(b.TempDir(), "creds")
	a, paths, err := bus.InitAuthDir(dir, bus.DefaultPrefix)
	if err != nil {
		b.Fatal(err)
	}
	e, err := bus.StartEmbedded(b.Context(), bus.EmbeddedOptions{StoreDir: b.TempDir(), Auth: a}, zerolog.Nop())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { e.Shutdown(context.Background()) })
	dial := func(who string) *bus.Conn {
		creds := paths[bus.RoleRequester]
		if who != "requester" {
			creds = benchNodeCreds(b, a, dir, who, paths)
		}
		c, err := bus.Connect(b.Context(), bus.ConnectOptions{URLs: e.URL(), CredsFile: creds, Name: who}, zerolog.Nop())
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(c.Close)
		return c
	}
	// The streams are the requester's to create.
	if err := dial("requester").EnsureStreams(b.Context(), bus.StreamLimits{}); err != nil {
		b.Fatal(err)
	}
	benchFanoutOver(b, true, n, dial)
}

// BenchmarkFanoutRemoteCreds is BenchmarkFanoutRemote with credentials.
func BenchmarkFanoutRemoteCreds(b *testing.B) { benchFanoutCreds(b, 100) }

// BenchmarkSpawnRemoteCreds is BenchmarkSpawnRemote with credentials.
func BenchmarkSpawnRemoteCreds(b *testing.B) { benchFanoutCreds(b, 1) }

// benchNodeCreds issues the node who its own credentials.
func benchNodeCreds(b testing.TB, a *bus.Auth, _ string, who string, _ map[bus.Role]string) string {
	path, err := a.IssueNode(who, nil)
	if err != nil {
		b.Fatal(err)
	}
	return path
}
