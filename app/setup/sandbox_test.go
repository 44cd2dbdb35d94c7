package setup

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/app/config"
	"github.com/troupe-ai/troupe/tools/sandbox"
)

// The commands' reads exclude troupe's state folder as a whole,
// nats.store_dir, and a creds file's whole folder when it holds seeds or
// other roles' creds (only the file otherwise).
func TestSandboxDeniesTrustedState(t *testing.T) {
	home, hub, lone := t.TempDir(), t.TempDir(), t.TempDir()
	t.Setenv("XDG_STATE_HOME", filepath.Join(home, "state"))
	for _, f := range []string{"account.nk", "operator.nk", "node.creds", "requester.creds", "watcher.creds"} {
		if err := os.WriteFile(filepath.Join(hub, f), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(lone, "mine.creds"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(config.Sources{})
	if err != nil {
		t.Fatal(err)
	}
	cfg.NATS.Creds, cfg.NATS.StoreDir = filepath.Join(hub, "requester.creds"), "~/nats-store"
	deny := Sandbox(cfg, home).DenyRead
	for _, want := range []string{filepath.Join(home, "state", "troupe"), hub, filepath.Join(home, "nats-store")} {
		if !slices.Contains(deny, want) {
			t.Errorf("%s is readable: %v", want, deny)
		}
	}
	cfg.NATS.Creds = filepath.Join(lone, "mine.creds")
	if deny := Sandbox(cfg, home).DenyRead; !slices.Contains(deny, cfg.NATS.Creds) || slices.Contains(deny, lone) {
		t.Errorf("a lone creds file: %v", deny)
	}
}

// Without mount namespaces, the run's warning line says what keeping
// .git and .troupe by Landlock alone costs; with them, it says nothing.
func TestSandboxPreflightSaysWhatLandlockAloneCosts(t *testing.T) {
	s := &sandbox.Settings{Support: sandbox.Support{LandlockABI: 7, Seccomp: true, UserNS: true, NetNS: true, MountNS: true}}
	kinds := []string{actors.KindRoot, actors.KindWorker}
	if warn, err := SandboxPreflight(s, kinds); err != nil || warn != "" {
		t.Errorf("with mount namespaces: %q %v", warn, err)
	}
	s.Support.MountNS = false
	s.Required = true
	warn, err := SandboxPreflight(s, kinds)
	if err != nil || !strings.Contains(warn, "Landlock alone") || !strings.Contains(warn, "top folder") {
		t.Errorf("without mount namespaces: %q %v", warn, err)
	}
}
