package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The demo runs a real team offline and says the model is scripted.
func TestDemo(t *testing.T) {
	ws := t.TempDir()
	var out, errb bytes.Buffer
	code, err := cmdDemo(t.Context(), []string{"--workspace", ws}, &out, &errb)
	if err != nil || code != exitOK {
		t.Fatalf("exit %d %v\n%s", code, err, errb.String())
	}
	if !strings.HasPrefix(out.String(), "Done. Discounts are applied in one place") {
		t.Errorf("stdout %q", out.String())
	}
	for _, want := range []string{"MODEL IS SCRIPTED", "spawned explore", "spawned planner", "spawned worker", "plan accepted", "whole run: 7 agents"} {
		if !strings.Contains(errb.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, errb.String())
		}
	}
	b, err := os.ReadFile(filepath.Join(ws, "discount.go"))
	if err != nil || !strings.Contains(string(b), "percent = min(max(percent, 0), 100)") {
		t.Errorf("the worker's edit is missing: %s", b)
	}
}
