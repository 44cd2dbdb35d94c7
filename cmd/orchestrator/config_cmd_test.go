package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/troupe-ai/troupe/internal/config"
)

// config print shows each setting's value and origin: the default, a
// workspace file, the environment, a flag; secrets never.
func TestConfigPrintOrigins(t *testing.T) {
	ws := t.TempDir()
	if err := os.MkdirAll(filepath.Join(ws, ".troupe"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, ".troupe", "config.yaml"), []byte("model:\n  cheap: tiny\nplacement: {explore: remote}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"OPENAI_API_KEY": "sk-very-secret-1234", "TROUPE_CHEAP_MODEL": ""}
	getenv := func(k string) string { return env[k] }
	var out bytes.Buffer
	code, err := cmdConfig([]string{"print", "--workspace", ws, "--model", "big-one", "--json"}, getenv, &out)
	if err != nil || code != exitOK {
		t.Fatalf("exit %d %v", code, err)
	}
	var settings []config.Setting
	if err := json.Unmarshal(out.Bytes(), &settings); err != nil {
		t.Fatal(err)
	}
	got := map[string]config.Setting{}
	for _, s := range settings {
		got[s.Key] = s
	}
	for key, want := range map[string][2]string{
		"model.cheap":       {"tiny", filepath.Join(ws, ".troupe", "config.yaml")},
		"placement.explore": {"remote", filepath.Join(ws, ".troupe", "config.yaml")},
		"model.default":     {"big-one", "flag --model"},
		"model.api_key":     {"[redacted]", "env OPENAI_API_KEY"},
		"budget.tokens":     {"10000000", "default"},
		"node.ack_wait":     {"30s", "default"},
	} {
		if s := got[key]; s.Value != want[0] || s.Origin != want[1] {
			t.Errorf("%s: %+v, want value %q from %q", key, s, want[0], want[1])
		}
	}
	if strings.Contains(out.String(), "sk-very-secret") {
		t.Error("the API key was printed")
	}
}
