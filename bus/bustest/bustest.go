// Package bustest starts what the tests of the packages above bus need
// from NATS: a real embedded server with JetStream that enforces troupe's
// roles, the creds file of each role, and connections with them.
package bustest

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/bus"
)

// AuthServer is an embedded NATS server that enforces troupe's roles.
type AuthServer struct {
	URL  string
	Auth *bus.Auth // the key material: issue a node its own identity with Auth.IssueNode
	// Paths are each role's creds file; the node role's is the first
	// node's own identity (bus.FirstNode).
	Paths map[bus.Role]string
}

// StartAuth starts an AuthServer for subjects under prefix, stopped when
// the test ends; the requester has created troupe's streams.
func StartAuth(t testing.TB, prefix string) *AuthServer {
	t.Helper()
	a, paths, err := bus.InitAuthDir(filepath.Join(t.TempDir(), "creds"), prefix)
	if err != nil {
		t.Fatal(err)
	}
	paths[bus.RoleNode] = a.NodePath(bus.FirstNode)
	e, err := bus.StartEmbedded(t.Context(), bus.EmbeddedOptions{StoreDir: t.TempDir(), Auth: a}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Shutdown(context.Background()) })
	s := &AuthServer{URL: e.URL(), Auth: a, Paths: paths}
	if err := s.Conn(t, bus.RoleRequester).EnsureStreams(t.Context(), bus.StreamLimits{}); err != nil {
		t.Fatal(err)
	}
	return s
}

// Conn connects with role's credentials, closed when the test ends.
func (s *AuthServer) Conn(t testing.TB, role bus.Role) *bus.Conn {
	t.Helper()
	return s.ConnWith(t, s.Paths[role], "test "+string(role))
}

// ConnWith connects as name with the creds file creds, closed when the
// test ends.
func (s *AuthServer) ConnWith(t testing.TB, creds, name string) *bus.Conn {
	t.Helper()
	c, err := bus.Connect(t.Context(), bus.ConnectOptions{URLs: s.URL, CredsFile: creds, Name: name}, zerolog.Nop())
	if err != nil {
		t.Fatalf("connect as %s: %v", name, err)
	}
	t.Cleanup(c.Close)
	return c
}
