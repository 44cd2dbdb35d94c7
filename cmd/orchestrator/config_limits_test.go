package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/troupe-ai/troupe/app/config"
)

// A workspace's own file may lower the limits a hostile model or provider
// meets, and config print shows them as "lower only" with the file's line;
// one that raises them is refused by config print and run alike: exit 2,
// naming the key, the file and line, and where it may be set.
func TestConfigPrintWorkspaceLimits(t *testing.T) {
	ws := t.TempDir()
	file := filepath.Join(ws, ".troupe", "config.yaml")
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(text string) {
		if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	getenv := func(string) string { return "" }
	write("model:\n  max_response_bytes: {text: 65536}\nagent:\n  max_tool_calls_per_round: 8\n")
	var out bytes.Buffer
	if code, err := cmdConfig([]string{"print", "--workspace", ws, "--json"}, getenv, &out); err != nil || code != exitOK {
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
		"model.max_response_bytes.text":  {"65536", file + " line 2"},
		"agent.max_tool_calls_per_round": {"8", file + " line 4"},
		"model.max_retries":              {"3", "default"},
		"model.rate_limit":               {"{}", "default"},
	} {
		if s := got[key]; s.Value != want[0] || s.Origin != want[1] || s.Workspace != "lower only" {
			t.Errorf("%s: %+v, want %s from %s, lower only", key, s, want[0], want[1])
		}
	}

	write("model:\n  rate_limit: {default: {rpm: 0}}\n  max_retries: 9\n")
	home := t.TempDir()
	userFile := filepath.Join(home, ".config", "troupe", "config.yaml")
	if err := os.MkdirAll(filepath.Dir(userFile), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(userFile, []byte("model:\n  rate_limit: {default: {rpm: 100}}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	want := file + " line 2: model.rate_limit.default.rpm: a workspace's own config file"
	runCode, _, runErr := runCmd(t, t.Context(), runEnv{getenv: getenv, home: home, stdin: strings.NewReader("")}, false,
		"--workspace", ws, "--model", "m", "a task")
	if runCode != exitUsage || !strings.Contains(runErr, want) || !strings.Contains(runErr, "rpm in effect would be none, over 100") ||
		!strings.Contains(runErr, "~/.config/troupe/config.yaml") {
		t.Errorf("run: exit %d, %s\nwant exit 2 and %q", runCode, runErr, want)
	}
}
