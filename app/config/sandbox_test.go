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
