package applypatch

import (
	"testing"

	"github.com/troupe-ai/troupe/tools"
	"github.com/troupe-ai/troupe/tools/toolstest"
)

// The helpers the apply_patch tests used in package tools, over toolstest.

func golden(t *testing.T, name, got string) { t.Helper(); toolstest.Golden(t, name, got) }

func newTestSession(t *testing.T) *tools.Session { t.Helper(); return toolstest.NewSession(t) }

func writeFile(t *testing.T, s *tools.Session, rel, content string) string {
	t.Helper()
	return toolstest.WriteFile(t, s, rel, content)
}
