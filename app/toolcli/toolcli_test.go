package toolcli

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/troupe-ai/troupe/app/runner"
)

func options(t *testing.T, ws string) Options {
	t.Helper()
	t.Setenv("HOME", t.TempDir()) // no user config
	return Options{Workspace: ws, Getenv: func(string) string { return "" }, Stderr: &strings.Builder{}}
}

// A script with a bad line is refused whole: nothing of it runs.
func TestReadScriptChecksEveryLineFirst(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "calls.jsonl")
	body := "# a comment\n{\"name\":\"write_file\",\"args\":{\"path\":\"a.txt\",\"content\":\"x\"}}\n\n{\"name\":\"read_file\",\"argz\":{}}\n"
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := ReadScript(path)
	if !errors.Is(err, runner.ErrUsage) || !strings.Contains(err.Error(), "calls.jsonl:4:") {
		t.Fatalf("err %v, want a usage error naming line 4", err)
	}
	if err := os.WriteFile(path, []byte(`{"args":{}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadScript(path); err == nil || !strings.Contains(err.Error(), `missing "name"`) {
		t.Fatalf("err %v", err)
	}
}

// Call and Script run the real tools in the workspace: a write, then a
// read in the same script's session; a failed call is reported as failed.
func TestCallAndScript(t *testing.T) {
	ws := t.TempDir()
	o := options(t, ws)
	res, err := Call(t.Context(), o, "write_file", json.RawMessage(`{"path":"a.txt","content":"alpha\n"}`))
	if err != nil || res.IsError {
		t.Fatalf("write_file: %+v %v", res, err)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "a.txt")); err != nil || string(b) != "alpha\n" {
		t.Fatalf("a.txt: %q %v", b, err)
	}
	if _, err := Call(t.Context(), o, "read_file", json.RawMessage(`{`)); !errors.Is(err, runner.ErrUsage) {
		t.Errorf("bad JSON: %v", err)
	}
	var out strings.Builder
	failed, err := Script(t.Context(), o, []ScriptLine{
		{Name: "read_file", Args: json.RawMessage(`{"path":"a.txt"}`)},
		{Name: "read_file", Args: json.RawMessage(`{"path":"missing.txt"}`)},
	}, &out)
	if err != nil || !failed {
		t.Fatalf("failed %v, err %v", failed, err)
	}
	if !strings.Contains(out.String(), "=== 1 read_file\n") || !strings.Contains(out.String(), "alpha") || !strings.Contains(out.String(), "=== 2 read_file\n") {
		t.Errorf("script output:\n%s", out.String())
	}
}
