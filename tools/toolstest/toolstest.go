// Package toolstest holds the helpers the tests of the tool packages
// share: golden files, a session over a temporary workspace, a call of a
// tool with JSON arguments.
package toolstest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/troupe-ai/troupe/internal/testfiles"
	"github.com/troupe-ai/troupe/tools"
)

// Golden compares got with testdata/<name>.golden, rewriting it with -update.
func Golden(t *testing.T, name, got string) { testfiles.Golden(t, name, got) }

// NewSession returns a session over a fresh temporary workspace, closed
// when the test ends.
func NewSession(t testing.TB) *tools.Session {
	t.Helper()
	ws, err := tools.NewWorkspace(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s := tools.NewSession("test", ws, tools.Config{DataDir: t.TempDir(), StateDir: t.TempDir()})
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("close session: %v", err)
		}
		ws.Close()
	})
	return s
}

// WriteFile creates a file under the session's workspace and returns its
// absolute path.
func WriteFile(t testing.TB, s *tools.Session, rel, content string) string {
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

// ReadFile returns a workspace file's content, failing the test if it is
// absent.
func ReadFile(t testing.TB, s *tools.Session, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(s.Workspace.Root(), rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// RunTool calls a tool with JSON arguments and fails on a harness error.
func RunTool(t testing.TB, tool tools.Tool, s *tools.Session, args string) tools.Result {
	t.Helper()
	res, err := tool.Run(t.Context(), s, json.RawMessage(args))
	if err != nil {
		t.Fatalf("%s %s: harness error %v", tool.Spec().Name, args, err)
	}
	return res
}

// Shown is a result as a golden file holds it: the text, marked when it
// is an error result, with the temporary workspace root written <root>.
func Shown(s *tools.Session, res tools.Result) string {
	text := strings.ReplaceAll(res.Text, s.Workspace.Root(), "<root>")
	if res.IsError {
		return "[error]\n" + text + "\n"
	}
	return text + "\n"
}
