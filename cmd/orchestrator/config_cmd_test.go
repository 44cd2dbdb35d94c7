package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/troupe-ai/troupe/internal/config"
)

// config print shows each setting's value and origin: the default, a
// workspace file and line, the environment, a flag; secrets never.
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
		"model.cheap":       {"tiny", filepath.Join(ws, ".troupe", "config.yaml") + " line 2"},
		"placement.explore": {"remote", filepath.Join(ws, ".troupe", "config.yaml") + " line 3"},
		"model.default":     {"big-one", "flag --model"},
		"model.api_key":     {"[redacted]", "env OPENAI_API_KEY"},
		"budget.tokens":     {"10000000", "default"},
		"node.ack_wait":     {"0s", "default"},
	} {
		if s := got[key]; s.Value != want[0] || s.Origin != want[1] {
			t.Errorf("%s: %+v, want value %q from %q", key, s, want[0], want[1])
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
	if !regexp.MustCompile(`(?m)^agent\.fanout_policy: sometimes +# ` + regexp.QuoteMeta(file) + ` line 3$`).MatchString(out.String()) {
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
