package main

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// tools call redacts the configured secrets as a run does: a file holding
// the API key, read or cat'ed, shows [redacted], on stdout and in the
// spill file of a cut result alike; so does a --script.
func TestToolsCallRedactsSecrets(t *testing.T) {
	const key = "sk-cli-secret-0123456789"
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, ".env"), []byte("OPENAI_API_KEY="+key+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var big strings.Builder
	for i := range 5000 {
		fmt.Fprintf(&big, "line %d key=%s\n", i, key)
	}
	if err := os.WriteFile(filepath.Join(ws, "big.log"), []byte(big.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(t.TempDir(), "calls.jsonl")
	if err := os.WriteFile(script, []byte(`{"name":"read_file","args":{"path":".env"}}`+"\n"+`{"name":"grep","args":{"pattern":"sk-","mode":"content"}}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	getenv := env("OPENAI_API_KEY", key)
	for _, args := range [][]string{
		{"call", "read_file", `{"path":".env"}`},
		{"call", "shell", `{"command":"cat .env"}`, "--json"},
		{"call", "shell", `{"command":"cat big.log"}`, "--json"},
		{"call", "--script", script},
	} {
		var out, errb bytes.Buffer
		code, err := cmdTools(t.Context(), append(args, "--workspace", ws), getenv, &out, &errb)
		if err != nil || code != exitOK {
			t.Fatalf("%v: exit %d %v\n%s", args, code, err, errb.String())
		}
		if strings.Contains(out.String(), key) || !strings.Contains(out.String(), "[redacted]") {
			t.Errorf("%v: the key is not redacted:\n%.600s", args, out.String())
		}
	}
	spilled := 0
	err := filepath.WalkDir(filepath.Join(ws, ".troupe"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if strings.Contains(string(b), key) {
			t.Errorf("%s holds the key", p)
		}
		if strings.Contains(string(b), "key=[redacted]") {
			spilled++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if spilled == 0 {
		t.Error("no spill file of the cut output: the test did not check one")
	}
}
