package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// sandbox check prints the kernel's support and each kind's sandbox; a
// kernel without Landlock (the test hook) gets the warning, and with
// sandbox.required set, the refusal (exit 2).
func TestSandboxCheck(t *testing.T) {
	ws := t.TempDir()
	var out bytes.Buffer
	code, err := cmdSandbox([]string{"check", "--workspace", ws}, func(string) string { return "" }, &out)
	if err != nil || code != exitOK || !strings.Contains(out.String(), "landlock: ") ||
		!strings.Contains(out.String(), "sandbox worker: writes beneath ["+ws) {
		t.Fatalf("exit %d, %v:\n%s", code, err, out.String())
	}
	t.Setenv("TROUPE_SANDBOX_ASSUME_MISSING", "landlock")
	out.Reset()
	code, err = cmdSandbox([]string{"check", "--workspace", ws}, func(string) string { return "" }, &out)
	if err != nil || code != exitOK || !strings.Contains(out.String(), "not enforced on this kernel: Landlock") {
		t.Errorf("no landlock: exit %d, %v:\n%s", code, err, out.String())
	}
	file := ws + "/strict.yaml"
	if err := os.WriteFile(file, []byte("sandbox: {required: true}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	code, err = cmdSandbox([]string{"check", "--workspace", ws, "--config", file}, func(string) string { return "" }, &out)
	if code != exitUsage || err == nil || !strings.Contains(err.Error(), "sandbox.required") {
		t.Errorf("required: exit %d, %v", code, err)
	}
}
