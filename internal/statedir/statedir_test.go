package statedir

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRoot(t *testing.T) {
	env := map[string]string{}
	getenv := func(k string) string { return env[k] }
	if r, err := Root(getenv, "/home/u"); err != nil || r != "/home/u/.local/state/troupe" {
		t.Errorf("default root %q %v", r, err)
	}
	env["XDG_STATE_HOME"] = "/xdg/state"
	if r, _ := Root(getenv, "/home/u"); r != "/xdg/state/troupe" {
		t.Errorf("XDG root %q", r)
	}
	env["XDG_STATE_HOME"] = "relative/state" // ignored, as the specification says
	if r, _ := Root(getenv, "/home/u"); r != "/home/u/.local/state/troupe" {
		t.Errorf("relative XDG_STATE_HOME was used: %q", r)
	}
	if _, err := Root(getenv, ""); !errors.Is(err, ErrNoHome) {
		t.Errorf("no home: %v", err)
	}
	// troupe's git homes: beside the root (agents' git reads them; the
	// root is denied to agents whole), never in the shared system temp.
	if r, err := GitRoot(getenv, "/home/u"); err != nil || r != "/home/u/.local/state/troupe-git" {
		t.Errorf("git root %q %v", r, err)
	}
	env["XDG_STATE_HOME"] = "/xdg/state"
	if r, _ := GitRoot(getenv, "/home/u"); r != "/xdg/state/troupe-git" {
		t.Errorf("XDG git root %q", r)
	}
}

// A workspace's ID is stable, names the folder, and tells two folders of
// the same name apart; a symlink to the folder gives the same ID.
func TestID(t *testing.T) {
	base := t.TempDir()
	a, b := filepath.Join(base, "x", "proj"), filepath.Join(base, "y", "proj")
	for _, d := range []string{a, b} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	link := filepath.Join(base, "link")
	if err := os.Symlink(a, link); err != nil {
		t.Fatal(err)
	}
	ia, ib := ID(a), ID(b)
	if !strings.HasPrefix(ia, "proj-") || ia == ib || ID(a) != ia || ID(link) != ia {
		t.Errorf("IDs %q %q, through the link %q", ia, ib, ID(link))
	}
	if id := ID("/"); !strings.HasPrefix(id, "root-") {
		t.Errorf("ID of / %q", id)
	}
}

// Make creates the directory 0700 and narrows one that exists wider.
func TestMakePrivate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state", "troupe", "ws-1")
	if err := Make(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := Make(dir); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{dir, filepath.Dir(dir)} {
		if fi, err := os.Stat(d); err != nil || fi.Mode().Perm() != 0o700 {
			t.Errorf("%s: %v %v", d, fi.Mode().Perm(), err)
		}
	}
}

// The data folder is made with a .gitignore holding "*"; a .troupe, or a
// folder beneath it, that is a symbolic link is refused, never followed.
func TestOpenDataRefusesLinks(t *testing.T) {
	ws := t.TempDir()
	if err := PrepareData(ws, filepath.Join(ws, DataDirName)); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(ws, DataDirName, ".gitignore"))
	if err != nil || !strings.Contains(string(b), "\n*\n") {
		t.Fatalf(".gitignore %q %v", b, err)
	}
	outside := t.TempDir()
	ws2 := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(ws2, DataDirName)); err != nil {
		t.Fatal(err)
	}
	if err := PrepareData(ws2, filepath.Join(ws2, DataDirName)); !errors.Is(err, ErrLink) {
		t.Errorf("a linked .troupe: %v", err)
	}
	if _, err := os.Stat(filepath.Join(outside, ".gitignore")); !errors.Is(err, os.ErrNotExist) {
		t.Error("a .gitignore was written through the link")
	}
	data, err := OpenData(ws, filepath.Join(ws, DataDirName))
	if err != nil {
		t.Fatal(err)
	}
	defer data.Close()
	if err := os.Symlink(outside, filepath.Join(ws, DataDirName, "spill")); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenDir(data, "spill", 0o700); !errors.Is(err, ErrLink) {
		t.Errorf("a linked spill folder: %v", err)
	}
	// An existing .gitignore, even a link, is left alone.
	ws3 := t.TempDir()
	if err := os.MkdirAll(filepath.Join(ws3, DataDirName), 0o755); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(outside, "target")
	if err := os.Symlink(target, filepath.Join(ws3, DataDirName, ".gitignore")); err != nil {
		t.Fatal(err)
	}
	if err := PrepareData(ws3, filepath.Join(ws3, DataDirName)); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(target); !errors.Is(err, os.ErrNotExist) {
		t.Error("the .gitignore link was written through")
	}
}
