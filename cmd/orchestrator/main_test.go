package main

import (
	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/internal/testfiles"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/troupe-ai/troupe/tools/sandbox"
)

// TestMain serves as the sandbox's launcher when a confined command is
// started through it (network deny or loopback re-executes this binary).
func TestMain(m *testing.M) {
	sandbox.MaybeRunLauncher()
	cleanup := testfiles.PrivateState() // state directories in a temporary XDG_STATE_HOME
	code := m.Run()
	cleanup()
	os.Exit(code)
}

// stateDirOf is the state directory runs in ws keep their state in (the
// tests' temporary XDG_STATE_HOME, see TestMain).
func stateDirOf(t testing.TB, ws string) string {
	t.Helper()
	dir, err := actors.StateDir(ws)
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// homeWith is a home whose user config (~/.config/troupe/config.yaml)
// holds text: settings a workspace's own config may not make.
func homeWith(t testing.TB, text string) string {
	t.Helper()
	home := t.TempDir()
	p := filepath.Join(home, ".config", "troupe", "config.yaml")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return home
}

// env is a getenv over the pairs kv (key, value, key, value...).
func env(kv ...string) func(string) string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
}

// syncBuf is a strings.Builder safe for concurrent writes and reads.
type syncBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuf) Write(p []byte) (int, error) { s.mu.Lock(); defer s.mu.Unlock(); return s.b.Write(p) }
func (s *syncBuf) String() string              { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }
