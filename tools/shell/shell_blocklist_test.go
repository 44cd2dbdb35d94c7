package shell

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/troupe-ai/troupe/tools/shell/guard"
)

// A refused command is an error result naming the rule and the command,
// and nothing runs.
func TestShellBlocklistRefusesWithoutRunning(t *testing.T) {
	t.Parallel()
	s := newTestSession(t)
	// Harmless if the blocklist failed: no such program.
	r := shellCall(t.Context(), t, s, map[string]any{"command": "touch marker; mkfs.troupe-none /dev/null"})
	if !r.IsError || r.Metadata["blocked_by"] != guard.RuleMkfs {
		t.Fatalf("not refused: %s", r.Text)
	}
	golden(t, "shell/blocked", r.Text)

	Configure(s, Config{Blocklist: []string{`\bforbidden\b`}})
	r = shellCall(t.Context(), t, s, map[string]any{"command": "touch marker; echo 'forbid''den'"})
	if !r.IsError || !strings.Contains(r.Text, `rule \bforbidden\b`) {
		t.Fatalf("custom rule did not refuse: %s", r.Text)
	}
	if _, err := os.Stat(filepath.Join(s.Workspace.Root(), "marker")); err == nil {
		t.Error("a refused command ran")
	}
	// Configured rules add to the built-in ones.
	if r := shellCall(t.Context(), t, s, map[string]any{"command": "touch marker; sh -c 'mkfs.troupe-none /dev/sdz'"}); r.Metadata["blocked_by"] != guard.RuleMkfs {
		t.Errorf("built-in rules dropped by a configured list: %s", r.Text)
	}
	Configure(s, Config{Blocklist: []string{`(unclosed`}})
	if r := shellCall(t.Context(), t, s, map[string]any{"command": "echo hi"}); !r.IsError || !strings.Contains(r.Text, "not a valid regular expression") {
		t.Errorf("invalid rule: %s", r.Text)
	}
}
