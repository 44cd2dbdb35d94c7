package tools

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/troupe-ai/troupe/internal/testfiles"
)

// golden compares got with testdata/<name>.golden (-update rewrites it).
func golden(t *testing.T, name, got string) { testfiles.Golden(t, name, got) }

// newTestSession returns a session over a fresh temporary workspace.
func newTestSession(t *testing.T) *Session {
	t.Helper()
	ws, err := NewWorkspace(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s := NewSession("test", ws, Config{DataDir: t.TempDir(), StateDir: t.TempDir()})
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("close session: %v", err)
		}
		ws.Close()
	})
	return s
}

// writeFile creates a file under the session's workspace.
func writeFile(t *testing.T, s *Session, rel, content string) string {
	t.Helper()
	p := filepath.Join(s.Workspace.Root(), rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
