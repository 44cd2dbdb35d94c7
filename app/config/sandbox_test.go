package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSandboxDefaults(t *testing.T) {
	c, err := Load(Sources{})
	if err != nil {
		t.Fatal(err)
	}
	s := c.Sandbox
	if s.Mode != SandboxOn || s.Required || s.NetworkFor("worker") != "allow" || s.NetworkFor("explore") != "deny" {
		t.Errorf("defaults: %+v", s)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		set func(*Sandbox)
		key string
	}{
		{func(s *Sandbox) { s.Mode = "maybe" }, "sandbox.mode"},
		{func(s *Sandbox) { s.Network = map[string]string{"worker": "open"} }, "sandbox.network.worker"},
		{func(s *Sandbox) { s.Writable = []string{"relative/dir"} }, "sandbox.writable[0]"},
	} {
		bad := c
		tc.set(&bad.Sandbox)
		if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), tc.key) {
			t.Errorf("%s: %v", tc.key, err)
		}
	}
}

// The workspace's own config may tighten the sandbox, never loosen it:
// its commands can write that file.
func TestSandboxWorkspaceMayOnlyTighten(t *testing.T) {
	write := func(ws, text string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Join(ws, ".troupe"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(ws, ".troupe", "config.yaml"), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for text, key := range map[string]string{
		"sandbox: {mode: off}\n":                                 "sandbox.mode",
		"sandbox: {writable: [/]}\n":                             "sandbox.writable",
		"sandbox: {network: {explore: allow}}\n":                 "sandbox.network.explore",
		"sandbox: {network: {default: allow, explore: allow}}\n": "sandbox.network.explore",
	} {
		ws := t.TempDir()
		write(ws, text)
		_, err := Load(Sources{Workspace: ws})
		if err == nil || !strings.Contains(err.Error(), key) || !strings.Contains(err.Error(), "not loosen") {
			t.Errorf("%q: %v", text, err)
		}
		// The same from the file named by --config is the user's choice.
		if _, err := Load(Sources{File: filepath.Join(ws, ".troupe", "config.yaml")}); err != nil {
			t.Errorf("%q by --config: %v", text, err)
		}
	}
	ws := t.TempDir()
	write(ws, "sandbox: {required: true, network: {worker: deny}, deny_read: [~/secrets]}\n")
	c, err := Load(Sources{Workspace: ws})
	if err != nil || !c.Sandbox.Required || c.Sandbox.NetworkFor("worker") != "deny" {
		t.Errorf("tightening: %+v %v", c.Sandbox, err)
	}
}

// sandbox.network: MODE is short for {default: MODE}, in the user's config
// and the workspace's (where it may still only tighten); a kind with a key
// of its own keeps it, as with the mapping.
func TestSandboxNetworkScalar(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "config.yaml")
	for text, want := range map[string]map[string]string{
		"sandbox: {network: deny}\n":     {"worker": "deny", "root": "deny", "explore": "deny"},
		"sandbox: {network: loopback}\n": {"worker": "loopback", "explore": "deny"},
		"sandbox:\n  network: allow\n":   {"worker": "allow", "planner": "deny"},
	} {
		if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		c, err := Load(Sources{File: file})
		if err == nil {
			err = c.Validate()
		}
		if err != nil {
			t.Fatalf("%q: %v", text, err)
		}
		for kind, mode := range want {
			if got := c.Sandbox.NetworkFor(kind); got != mode {
				t.Errorf("%q: %s gets %s, want %s", text, kind, got, mode)
			}
		}
		if c.Sandbox.Network["default"] == "" {
			t.Errorf("%q: no default: %v", text, c.Sandbox.Network)
		}
	}
	if err := os.WriteFile(file, []byte("sandbox: {network: open}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if c, err := Load(Sources{File: file}); err != nil || c.Validate() == nil || !strings.Contains(c.Validate().Error(), "sandbox.network.default") {
		t.Errorf("network: open: %v", err)
	}
	if err := os.WriteFile(file, []byte("sandbox: {network: [deny]}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(Sources{File: file}); err == nil {
		t.Error("network: [deny] was accepted")
	}
	// In the workspace's own file: deny tightens and is taken; allow is
	// the default already; nothing loosens an explore agent's deny.
	ws := t.TempDir()
	if err := os.MkdirAll(filepath.Join(ws, ".troupe"), 0o755); err != nil {
		t.Fatal(err)
	}
	for text, worker := range map[string]string{"sandbox: {network: deny}\n": "deny", "sandbox: {network: allow}\n": "allow"} {
		if err := os.WriteFile(filepath.Join(ws, ".troupe", "config.yaml"), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		c, err := Load(Sources{Workspace: ws})
		if err != nil || c.Sandbox.NetworkFor("worker") != worker || c.Sandbox.NetworkFor("explore") != "deny" {
			t.Errorf("workspace %q: worker %s explore %s, %v", text, c.Sandbox.NetworkFor("worker"), c.Sandbox.NetworkFor("explore"), err)
		}
	}
	home := t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, ".config", "troupe"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".config", "troupe", "config.yaml"), []byte("sandbox: {network: deny}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, ".troupe", "config.yaml"), []byte("sandbox: {network: allow}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(Sources{Home: home, Workspace: ws}); err == nil || !strings.Contains(err.Error(), "sandbox.network.default") {
		t.Errorf("a workspace's network: allow over the user's deny: %v", err)
	}
}
