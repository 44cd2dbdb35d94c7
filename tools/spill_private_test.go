package tools

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Spill files are private: 0600 in a 0700 directory, even one an older
// version created 0755.
func TestSpillFilesPrivate(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	if err := os.MkdirAll(filepath.Join(data, "spill"), 0o755); err != nil {
		t.Fatal(err)
	}
	sp := NewSpiller(nil, data, t.TempDir(), 0)
	p, err := sp.Save("shell", "output")
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(p)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("spill file mode %v %v", fi.Mode().Perm(), err)
	}
	di, err := os.Stat(sp.Dir())
	if err != nil || di.Mode().Perm() != 0o700 {
		t.Errorf("spill dir mode %v %v", di.Mode().Perm(), err)
	}
	if sp.maxAge != DefaultSpillMaxAge || DefaultSpillMaxAge.Hours() != 7*24 {
		t.Errorf("default retention %v", sp.maxAge)
	}
}

// Attack 5 of issue 28: .troupe/spill is a link to a folder outside the
// workspace (~/.ssh, say). Spilling refuses it instead of writing there or
// narrowing its mode, and no sweep, even long after, deletes a file in
// it; a .troupe that is itself a link is refused the same way.
func TestSpillFollowsNoLink(t *testing.T) {
	t.Parallel()
	for _, linked := range []string{".troupe/spill", ".troupe"} {
		t.Run(linked, func(t *testing.T) {
			root, outside, state := t.TempDir(), t.TempDir(), t.TempDir()
			key := filepath.Join(outside, "id_rsa")
			if err := os.WriteFile(key, []byte("PRIVATE"), 0o600); err != nil {
				t.Fatal(err)
			}
			old := time.Now().Add(-30 * 24 * time.Hour)
			if err := os.Chtimes(key, old, old); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(outside, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(filepath.Join(root, ".troupe"), 0o755); err != nil {
				t.Fatal(err)
			}
			if linked == ".troupe" {
				if err := os.Remove(filepath.Join(root, ".troupe")); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.Symlink(outside, filepath.Join(root, linked)); err != nil {
				t.Fatal(err)
			}
			ws, err := NewWorkspace(root)
			if err != nil {
				t.Fatal(err)
			}
			defer ws.Close()
			sp := NewSpiller(ws, filepath.Join(root, ".troupe"), state, time.Hour)
			if p, err := sp.Save("shell", "output"); err == nil {
				t.Fatalf("spilled through the link to %s", p)
			}
			if n, err := sp.Sweep(time.Now().Add(365 * 24 * time.Hour)); n != 0 {
				t.Errorf("the sweep removed %d files (%v)", n, err)
			}
			if b, err := os.ReadFile(key); err != nil || string(b) != "PRIVATE" {
				t.Errorf("the file outside: %q %v", b, err)
			}
			entries, _ := os.ReadDir(outside)
			fi, _ := os.Stat(outside)
			if len(entries) != 1 || fi.Mode().Perm() != 0o755 {
				t.Errorf("the folder outside changed: %d entries, mode %v", len(entries), fi.Mode().Perm())
			}
		})
	}
}

// The sweep removes only the spill files troupe made (in its index, kept
// outside the workspace), never a file an agent put in the spill folder,
// however old or however named, nor a link standing where a spill file
// was.
func TestSpillSweepOnlyItsOwn(t *testing.T) {
	t.Parallel()
	root, state, outside := t.TempDir(), t.TempDir(), t.TempDir()
	ws, err := NewWorkspace(root)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	sp := NewSpiller(ws, filepath.Join(root, ".troupe"), state, time.Hour)
	mine, err := sp.Save("grep", "mine")
	if err != nil {
		t.Fatal(err)
	}
	swapped, err := sp.Save("shell", "swapped")
	if err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(outside, "target")
	if err := os.WriteFile(target, []byte("keep"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(root, swapped)); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, filepath.Join(root, swapped)); err != nil {
		t.Fatal(err)
	}
	planted := filepath.Join(root, ".troupe", "spill", "shell-20200101T000000-0123456789ab.txt")
	if err := os.WriteFile(planted, []byte("agent's"), 0o600); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-30 * 24 * time.Hour)
	if err := os.Chtimes(planted, old, old); err != nil {
		t.Fatal(err)
	}
	n, err := sp.Sweep(time.Now().Add(2 * time.Hour))
	if err != nil || n != 1 {
		t.Fatalf("swept %d (%v), want 1", n, err)
	}
	if _, err := os.Stat(filepath.Join(root, mine)); !os.IsNotExist(err) {
		t.Errorf("troupe's own spill file survived: %v", err)
	}
	for _, p := range []string{planted, target} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
	if _, err := os.Lstat(filepath.Join(root, swapped)); err != nil {
		t.Errorf("the link was removed: %v", err)
	}
}
