package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/troupe-ai/troupe/tools/mcp/mcptest"
)

// mcpConfig writes a config file with the test MCP server as "t" and a
// server that cannot start as "bad".
func mcpConfig(t *testing.T) string {
	t.Helper()
	bin := mcptest.Build(t)
	cfg := filepath.Join(t.TempDir(), "mcp.yaml")
	doc := "mcp:\n  servers:\n    t:\n      command: [" + strconv.Quote(bin) + "]\n      timeout: 5s\n" +
		"    bad:\n      command: [/nonexistent/mcp-server]\n"
	if err := os.WriteFile(cfg, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	return cfg
}

func TestToolsCallMCP(t *testing.T) {
	cfg, ws := mcpConfig(t), t.TempDir()
	code, out, stderr := runCLI(t, "tools", "call", "mcp__t__echo", `{"text":"hi"}`, "--config", cfg, "--workspace", ws)
	if code != 0 || out != "echo: hi\n" || stderr != "" {
		t.Fatalf("echo: exit %d, %q, stderr %q", code, out, stderr)
	}
	code, out, _ = runCLI(t, "tools", "call", "mcp__t__echo", `{"txt":"hi"}`, "--config", cfg, "--workspace", ws)
	if code != 1 || !strings.Contains(out, `invalid arguments for mcp__t__echo: field "text" is required`) {
		t.Errorf("bad arguments: exit %d, %q", code, out)
	}
	code, out, _ = runCLI(t, "tools", "call", "mcp__t__crash", `{}`, "--config", cfg, "--workspace", ws)
	if code != 1 || !strings.Contains(out, "exited during the call (exit status 3") {
		t.Errorf("crash: exit %d, %q", code, out)
	}
	code, out, _ = runCLI(t, "tools", "call", "mcp__t__hostile", `{}`, "--config", cfg, "--workspace", ws)
	if code != 0 || strings.ContainsAny(out, "\x1b\a\x00") || !strings.Contains(out, "[image: image/png") {
		t.Errorf("hostile: exit %d, %q", code, out)
	}
	// The server ends with the command: no orphan process.
	code, out, _ = runCLI(t, "tools", "call", "mcp__t__pid", `{}`, "--config", cfg, "--workspace", ws)
	pid, err := strconv.Atoi(strings.TrimSpace(out))
	if code != 0 || err != nil {
		t.Fatalf("pid: exit %d, %q", code, out)
	}
	checkFor(t, func() bool { return syscall.Kill(pid, 0) != nil })

	code, out, stderr = runCLI(t, "tools", "call", "mcp__bad__x", `{}`, "--config", cfg, "--workspace", ws)
	if code != 1 || !strings.Contains(stderr, "start MCP server bad") || !strings.Contains(out, `unknown tool "mcp__bad__x"`) {
		t.Errorf("a server that cannot start: exit %d, %q, stderr %q", code, out, stderr)
	}
	code, out, _ = runCLI(t, "tools", "call", "search_tools", `{"query":"echo"}`, "--config", cfg, "--workspace", ws)
	if code != 0 || !strings.Contains(out, "- mcp__t__echo: Echoes the text back.") {
		t.Errorf("search_tools: exit %d, %q", code, out)
	}
}

func TestToolsListMCP(t *testing.T) {
	cfg := mcpConfig(t)
	code, out, stderr := runCLI(t, "tools", "list", "--config", cfg, "--workspace", t.TempDir())
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	rows := map[string][]string{}
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) >= 3 {
			rows[f[0]] = f
		}
	}
	if r := rows["mcp__t__echo"]; len(r) < 3 || r[1] != "on-demand" || r[2] != "mutating" {
		t.Errorf("mcp__t__echo row %v", r)
	}
	if r := rows["mcp__t__add"]; len(r) < 3 || r[2] != "read-only" {
		t.Errorf("mcp__t__add row %v", r)
	}
	if r := rows["read_file"]; len(r) < 2 || r[1] != "always" {
		t.Errorf("read_file row %v", r)
	}
	if _, ok := rows["search_tools"]; !ok {
		t.Error("search_tools not listed")
	}
	for _, want := range []string{"MCP server t: left out giant_schema: mcp: unusable input schema", "start MCP server bad"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q: %s", want, stderr)
		}
	}
	if code, _, stderr := runCLI(t, "tools", "list", "extra"); code != 2 || !strings.Contains(stderr, "takes no arguments") {
		t.Errorf("tools list extra: exit %d, %q", code, stderr)
	}
}

// tools call reaches the reference server-everything (Node.js, installed
// by tests/run.sh) from a config file.
func TestToolsCallServerEverything(t *testing.T) {
	cmd := mcptest.Everything(t)
	cfg := filepath.Join(t.TempDir(), "mcp.yaml")
	var quoted []string
	for _, c := range cmd {
		quoted = append(quoted, strconv.Quote(c))
	}
	if err := os.WriteFile(cfg, []byte("mcp:\n  servers:\n    everything:\n      command: ["+strings.Join(quoted, ", ")+"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := runCLI(t, "tools", "call", "mcp__everything__echo", `{"message":"hi"}`, "--config", cfg, "--workspace", t.TempDir())
	if code != 0 || out != "Echo: hi\n" {
		t.Fatalf("exit %d, %q, stderr %q", code, out, stderr)
	}
	code, out, _ = runCLI(t, "tools", "call", "mcp__everything__get-sum", `{"a":"x","b":1}`, "--config", cfg, "--workspace", t.TempDir())
	if code != 1 || !strings.Contains(out, `field "a": expected number, got string "x"`) {
		t.Errorf("bad argument: exit %d, %q", code, out)
	}
}
