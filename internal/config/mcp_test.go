package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestMCPAndTiersValidate(t *testing.T) {
	t.Parallel()
	tests := []struct{ yaml, want string }{
		{"mcp:\n  servers:\n    gh:\n      command: [npx, -y, srv]\n      env: {GITHUB_TOKEN: \"${GITHUB_TOKEN}\"}\n      kinds: [root]\n", ""},
		{"mcp:\n  servers:\n    docs:\n      url: http://127.0.0.1:9/mcp\n      headers: {Authorization: Bearer x}\n", ""},
		{"mcp:\n  servers:\n    a__b:\n      command: [x]\n", "mcp.servers.a__b: the name becomes part of tool names"},
		{"mcp:\n  servers:\n    a:\n      command: [x]\n      url: http://h\n", "mcp.servers.a: set command (a server run on this machine) or url (an HTTP server), not both"},
		{"mcp:\n  servers:\n    a: {}\n", "mcp.servers.a: set command, e.g."},
		{"mcp:\n  servers:\n    a:\n      command: [\"\"]\n", "mcp.servers.a.command: the program (the first word) is empty"},
		{"mcp:\n  servers:\n    a:\n      url: ftp://h\n", "mcp.servers.a.url: want an http:// or https:// URL"},
		{"mcp:\n  servers:\n    a:\n      url: http://h\n      env: {A: b}\n", "mcp.servers.a.env: only for servers run with command"},
		{"mcp:\n  servers:\n    a:\n      command: [x]\n      headers: {A: b}\n", "mcp.servers.a.headers: only for servers reached by url"},
		{"mcp:\n  servers:\n    a:\n      command: [x]\n      env: {\"A-B\": b}\n", `mcp.servers.a.env: "A-B" is not a variable name`},
		{"mcp:\n  servers:\n    a:\n      command: [x]\n      kinds: [root, root]\n", `mcp.servers.a.kinds: "root" is empty or given twice`},
		{"mcp:\n  servers:\n    a:\n      command: [x]\n      timeout: -1s\n", "mcp.servers.a.timeout: must not be negative"},
		{"mcp:\n  start_timeout: -1s\n", "mcp.start_timeout: must not be negative"},
		{"tools:\n  definition_budget: -5\n", "tools.definition_budget: want a number of tokens"},
		{"tools:\n  tiers: {ask_user: sometimes}\n", "tools.tiers.ask_user: must be always, on-relevance or on-demand"},
		{"tools:\n  tiers: {\"mcp__[\": always}\n", "tools.tiers.mcp__[: not a tool name or pattern"},
		{"tools:\n  tiers: {\"mcp__gh__*\": always, ask_user: on-demand}\n  definition_budget: -1\n", ""},
	}
	for _, tt := range tests {
		file := filepath.Join(t.TempDir(), "c.yaml")
		if err := os.WriteFile(file, []byte(tt.yaml), 0o644); err != nil {
			t.Fatal(err)
		}
		c, err := Load(Sources{File: file})
		if err != nil {
			t.Fatalf("%q: load: %v", tt.yaml, err)
		}
		err = c.Validate()
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%q: %v", tt.yaml, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%q: %v, want %q", tt.yaml, err, tt.want)
		}
	}
}

func TestMCPUnknownKeyInWords(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(file, []byte("mcp:\n  servers:\n    a:\n      comand: [x]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Load(Sources{File: file})
	if err == nil || !strings.Contains(err.Error(), "mcp.servers.a.comand is not a setting") ||
		!strings.Contains(err.Error(), "command, env, headers, kinds, timeout, url") {
		t.Errorf("error: %v", err)
	}
}

// config print shows where MCP settings came from and hides the values
// of servers' env and headers unless they only name a variable.
func TestMCPSecretsRedacted(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "c.yaml")
	doc := "mcp:\n  servers:\n    gh:\n      command: [npx, srv]\n      env: {TOKEN: ghp_literal, REF: \"${GITHUB_TOKEN}\"}\n" +
		"    docs:\n      url: http://127.0.0.1:9/mcp\n      headers: {Authorization: Bearer sk-secret}\n"
	if err := os.WriteFile(file, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	_, settings, err := Effective(Sources{File: file}, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Setting{}
	for _, s := range settings {
		got[s.Key] = s
	}
	for key, want := range map[string]string{"mcp.servers.gh.env.TOKEN": "[redacted]", "mcp.servers.gh.env.REF": "${GITHUB_TOKEN}",
		"mcp.servers.docs.headers.Authorization": "[redacted]", "mcp.servers.gh.command": "[npx, srv]", "tools.definition_budget": "1000"} {
		if s := got[key]; s.Value != want {
			t.Errorf("%s = %q, want %q", key, s.Value, want)
		}
	}
	if got["mcp.servers.gh.command"].Origin != file {
		t.Errorf("origin %q", got["mcp.servers.gh.command"].Origin)
	}
}
