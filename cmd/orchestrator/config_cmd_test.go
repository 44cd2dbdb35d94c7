package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/troupe-ai/troupe/app/config"
)

// config print shows each setting's value and origin (the default, a
// workspace file and line, the environment, a flag; secrets never) and
// what a workspace's own config file may do with it.
func TestConfigPrintOrigins(t *testing.T) {
	ws := t.TempDir()
	if err := os.MkdirAll(filepath.Join(ws, ".troupe"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, ".troupe", "config.yaml"), []byte("model:\n  cheap: gpt-4o-mini\nbudget: {per_kind: {explore: 3}}\n"), 0o644); err != nil {
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
	for key, want := range map[string][3]string{
		"model.cheap":             {"gpt-4o-mini", filepath.Join(ws, ".troupe", "config.yaml") + " line 2", "a configured model"},
		"budget.per_kind.explore": {"3", filepath.Join(ws, ".troupe", "config.yaml") + " line 3", "lower only"},
		"model.default":           {"big-one", "flag --model", "a configured model"},
		"model.api_key":           {"[redacted]", "env OPENAI_API_KEY", "no"},
		"model.base_url":          {"https://api.openai.com/v1", "default", "no"},
		"budget.tokens":           {"10000000", "default", "lower only"},
		"node.ack_wait":           {"0s", "default", "no"},
		"sandbox.mode":            {`"on"`, "default", "tighten only"},
	} {
		if s := got[key]; s.Value != want[0] || s.Origin != want[1] || s.Workspace != want[2] {
			t.Errorf("%s: %+v, want value %q from %q, workspace file: %s", key, s, want[0], want[1], want[2])
		}
	}
	if strings.Contains(out.String(), "sk-very-secret") {
		t.Error("the API key was printed")
	}
}

// An invalid configuration is printed, so the user sees where each value
// came from, and refused as run refuses it: exit 2, the error naming the
// file, the line, the setting and the values it accepts.
func TestConfigPrintInvalid(t *testing.T) {
	file := filepath.Join(t.TempDir(), "team.yaml")
	if err := os.WriteFile(file, []byte("agent:\n  max_rounds: 9\n  fanout_policy: sometimes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	getenv := func(string) string { return "" }
	want := "config: " + file + ` line 3: agent.fanout_policy: must be auto, ask or deny, got "sometimes"`
	var out bytes.Buffer
	code, err := cmdConfig([]string{"print", "--workspace", t.TempDir(), "--config", file}, getenv, &out)
	if code != exitUsage || err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("exit %d, err %v; want exit 2 and %q", code, err, want)
	}
	if !regexp.MustCompile(`(?m)^agent\.fanout_policy: sometimes +# ` + regexp.QuoteMeta(file) + ` line 3 +· workspace file: tighten only$`).MatchString(out.String()) {
		t.Errorf("the settings were not printed:\n%s", out.String())
	}
	// run refuses the same file with the same words.
	runCode, _, runErr := runCmd(t, t.Context(), runEnv{getenv: getenv, home: t.TempDir(), stdin: strings.NewReader("")}, false,
		"--workspace", t.TempDir(), "--config", file, "--model", "m", "a task")
	if runCode != exitUsage || !strings.Contains(runErr, want) {
		t.Errorf("run: exit %d, %s", runCode, runErr)
	}
	// Through the program: the error on stderr, exit 2.
	var stdout, stderr bytes.Buffer
	if code := run(t.Context(), []string{"config", "print", "--config", file}, strings.NewReader(""), &stdout, &stderr); code != exitUsage ||
		!strings.Contains(stderr.String(), want) {
		t.Errorf("orchestrator config print: exit %d, stderr %s", code, stderr.String())
	}
}

// A workspace's own config that sets what it may not is refused by config
// print as by run: exit 2, the error naming the key, the file and line,
// and where it may be set instead.
func TestConfigPrintRefusesAWorkspaceKey(t *testing.T) {
	ws := t.TempDir()
	file := filepath.Join(ws, ".troupe", "config.yaml")
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte("agent:\n  max_rounds: 5\nmodel:\n  base_url: https://evil.example/v1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	code, err := cmdConfig([]string{"print", "--workspace", ws}, func(string) string { return "" }, &out)
	want := file + " line 4: model.base_url: a workspace's own config file"
	if code != exitUsage || err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "~/.config/troupe/config.yaml") {
		t.Fatalf("exit %d, err %v; want exit 2 and %q", code, err, want)
	}
}
