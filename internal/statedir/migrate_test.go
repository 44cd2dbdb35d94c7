package statedir

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func write(t *testing.T, path, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// An older version's checkpoints, kept patches and task records move to
// the state directory (0600 files), once, with a line saying so; its NATS
// folder stays and the user is told once.
func TestMigrateMovesOlderState(t *testing.T) {
	ws, state := t.TempDir(), filepath.Join(t.TempDir(), "state")
	data := filepath.Join(ws, DataDirName)
	write(t, filepath.Join(data, "runs", "r1", "root", "checkpoint.json"), "{}")
	write(t, filepath.Join(data, "runs", "r1", "root", "journal.log"), "j")
	write(t, filepath.Join(data, "runs", "r1", "changes", "w1.patch"), "p")
	write(t, filepath.Join(data, "remote", "r1.tasks.jsonl"), "{}\n")
	write(t, filepath.Join(data, "nats", "creds", "account.nk"), "SA...")
	write(t, filepath.Join(data, "config.yaml"), "agent: {}\n")
	lines, err := Migrate(ws, data, state)
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) != 3 || !strings.Contains(lines[0], "moved 3 file(s)") || !strings.Contains(lines[1], "moved 1 file(s)") ||
		!strings.Contains(lines[2], "no longer used") {
		t.Fatalf("lines %q", lines)
	}
	for _, rel := range []string{"runs/r1/root/checkpoint.json", "runs/r1/root/journal.log", "runs/r1/changes/w1.patch", "remote/r1.tasks.jsonl"} {
		fi, err := os.Stat(filepath.Join(state, rel))
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s in the state directory: %v", rel, err)
		}
	}
	for _, gone := range []string{"runs", "remote"} {
		if _, err := os.Lstat(filepath.Join(data, gone)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s left in the workspace: %v", gone, err)
		}
	}
	for _, kept := range []string{"nats/creds/account.nk", "config.yaml"} {
		if _, err := os.Stat(filepath.Join(data, kept)); err != nil {
			t.Errorf("%s: %v", kept, err)
		}
	}
	if again, err := Migrate(ws, data, state); err != nil || len(again) != 0 {
		t.Errorf("a second migration said %q %v", again, err)
	}
}

// The older tree is agent-writable: a link in it is neither followed nor
// removed, and nothing outside the workspace is moved or deleted.
func TestMigrateFollowsNoLink(t *testing.T) {
	ws, state, outside := t.TempDir(), filepath.Join(t.TempDir(), "state"), t.TempDir()
	data := filepath.Join(ws, DataDirName)
	write(t, filepath.Join(outside, "id_rsa"), "secret")
	write(t, filepath.Join(outside, "dir", "authorized_keys"), "keys")
	if err := os.MkdirAll(filepath.Join(data, "runs", "r1"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "id_rsa"), filepath.Join(data, "runs", "r1", "checkpoint.json")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "dir"), filepath.Join(data, "remote")); err != nil {
		t.Fatal(err)
	}
	if _, err := Migrate(ws, data, state); err != nil && !errors.Is(err, ErrLink) {
		t.Fatal(err)
	}
	for _, f := range []string{"id_rsa", "dir/authorized_keys"} {
		if b, err := os.ReadFile(filepath.Join(outside, f)); err != nil || len(b) == 0 {
			t.Errorf("%s outside the workspace: %q %v", f, b, err)
		}
	}
	if _, err := os.Stat(filepath.Join(state, "runs", "r1", "checkpoint.json")); !errors.Is(err, os.ErrNotExist) {
		t.Error("a linked file was copied into the state directory")
	}
	// A .troupe that is itself a link is not read at all.
	ws2 := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(ws2, DataDirName)); err != nil {
		t.Fatal(err)
	}
	if _, err := Migrate(ws2, filepath.Join(ws2, DataDirName), state); !errors.Is(err, ErrLink) {
		t.Errorf("a linked .troupe: %v", err)
	}
	if _, err := os.Stat(filepath.Join(outside, "dir", "authorized_keys")); err != nil {
		t.Error(err)
	}
}
