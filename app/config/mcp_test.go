package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Errors name the file and line that set the value, the setting and what
// it accepts.
func TestMCPAndTiersValidate(t *testing.T) {
	t.Parallel()
	tests := []struct{ yaml, want string }{
		{"mcp:\n  servers:\n    gh:\n      command: [npx, -y, srv]\n      env: {GITHUB_TOKEN: \"${GITHUB_TOKEN}\"}\n      kinds: [root]\n", ""},
		{"mcp:\n  servers:\n    docs:\n      url: http://127.0.0.1:9/mcp\n      headers: {Authorization: Bearer x}\n", ""},
		{"mcp:\n  servers:\n    a__b:\n      command: [x]\n", "line 3: mcp.servers.a__b: the name becomes part of tool names"},
		{"mcp:\n  servers:\n    a:\n      command: [x]\n      url: http://h\n", "mcp.servers.a: set command (a server run on this machine) or url (an HTTP server), not both"},
		{"mcp:\n  servers:\n    a: {}\n", "mcp.servers.a: set command, e.g."},
		{"mcp:\n  servers:\n    a:\n      command: [\"\"]\n", "line 4: mcp.servers.a.command: must start with the program to run"},
		{"mcp:\n  servers:\n    a:\n      url: ftp://h\n", "line 4: mcp.servers.a.url: must be an http:// or https:// URL, got \"ftp://h\""},
		{"mcp:\n  servers:\n    a:\n      url: http://h\n      env: {A: b}\n", "mcp.servers.a.env: only for servers run with command"},
		{"mcp:\n  servers:\n    a:\n      command: [x]\n      headers: {A: b}\n", "mcp.servers.a.headers: only for servers reached by url"},
		{"mcp:\n  servers:\n    a:\n      command: [x]\n      env: {\"A-B\": b}\n", `line 5: mcp.servers.a.env: keys must be variable names (letters, digits and _, not starting with a digit); "A-B" is not`},
		{"mcp:\n  servers:\n    a:\n      command: [x]\n      kinds: [root, root]\n", `line 5: mcp.servers.a.kinds[1]: must name an agent kind once each; "root" is empty or given twice`},
		{"mcp:\n  servers:\n    a:\n      command: [x]\n      timeout: -1s\n", "line 5: mcp.servers.a.timeout: must be a duration such as 60s"},
		{"mcp:\n  start_timeout: -1s\n", "line 2: mcp.start_timeout: must be a duration such as 30s, got -1s"},
		{"mcp:\n  servers:\n    a:\n      url: http://h\n      shared: true\n", "line 5: mcp.servers.a.shared: only for servers run with command"},
		{"mcp:\n  servers:\n    a:\n      command: [x]\n      shared: true\n  max_worktree_servers: 2\n", ""},
		{"mcp:\n  max_worktree_servers: 0\n", "line 2: mcp.max_worktree_servers: must be at least 1"},
		{"mcp:\n  servers:\n    fs:\n      command: [npx, srv, \"${TROUPE_TREE}\", \"--root=${TROUPE_TREE}\"]\n      env: {DATA: \"${TROUPE_TREE}/d\"}\n", ""},
		{"mcp:\n  servers:\n    fs:\n      command: [\"${TROUPE_TREE}/bin/srv\"]\n", "line 4: mcp.servers.fs.command[0]: ${TROUPE_TREE} cannot name the program"},
		{"mcp:\n  servers:\n    fs:\n      command: [srv, --root, \"${TROUPE_WORKTREE}\"]\n", "line 4: mcp.servers.fs.command[2]: unknown placeholder ${TROUPE_WORKTREE}; the one troupe fills in is ${TROUPE_TREE}"},
		{"mcp:\n  servers:\n    fs:\n      command: [srv]\n      env: {TROUPE_TREE: /}\n", "mcp.servers.fs.env.TROUPE_TREE: troupe sets it"},
		{"mcp:\n  servers:\n    d:\n      url: http://h\n      headers: {X-Root: \"${TROUPE_TREE}\"}\n", "mcp.servers.d.headers.X-Root: ${TROUPE_TREE} is for servers run with command"},
		{"tools:\n  definition_budget: -5\n", "line 2: tools.definition_budget: must be a number of tokens, 0 for the default or -1 to never defer, got -5"},
		{"tools:\n  tiers: {ask_user: sometimes}\n", "tools.tiers.ask_user: must be always, on-relevance or on-demand"},
		{"tools:\n  tiers: {\"mcp__[\": always}\n", "line 2: tools.tiers.mcp__[: the key must be a tool name or a pattern"},
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
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), file+" line ")):
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
		!strings.Contains(err.Error(), "command, env, headers, kinds, shared, timeout, url") {
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
	c, err := Load(Sources{File: file})
	if err != nil {
		t.Fatal(err)
	}
	settings, err := c.Settings()
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
	if got["mcp.servers.gh.command"].Origin != file+" line 4" {
		t.Errorf("origin %q", got["mcp.servers.gh.command"].Origin)
	}
}
