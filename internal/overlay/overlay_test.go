//go:build linux

package overlay

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestMain(m *testing.M) {
	MaybeRunHolder()
	os.Exit(m.Run())
}

// need is the process's holder; without one the test is skipped, or
// fails under CI=true (CI runs on the machine class that has them).
func need(t *testing.T) *Holder {
	t.Helper()
	h, err := Shared(filepath.Join(os.TempDir(), "troupe-overlay-test"))
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	return h
}

// layers makes a lower directory holding files and returns it with a
// function that mounts a fresh overlay of it and returns the mount
// point and its upper directory.
func layers(t *testing.T, h *Holder, files map[string]string) (string, func() (string, string)) {
	t.Helper()
	base := t.TempDir()
	lower := filepath.Join(base, "lower")
	for name, data := range files {
		p := filepath.Join(lower, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	n := 0
	return lower, func() (string, string) {
		n++
		d := "w" + strings.Repeat("x", n)
		up, work, mnt := d+"/up", d+"/work", d+"/mnt"
		for _, p := range []string{up, work, mnt} {
			if err := os.MkdirAll(filepath.Join(base, p), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		f, err := h.Mount(base, "lower", up, work, mnt)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = h.Unmount(f); f.Close(); unlockWork(t, filepath.Join(base, d)) })
		return filepath.Join(base, mnt), filepath.Join(base, up)
	}
}

// sh runs script inside the holder's namespaces at dir.
func sh(t *testing.T, h *Holder, dir, script string) string {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", script)
	if err := h.Wrap(cmd, dir); err != nil {
		t.Fatal(err)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", script, err, out)
	}
	return string(out)
}

// unlockWork lets the test's cleanup remove the work directory in dir.
func unlockWork(t *testing.T, dir string) {
	d, err := os.Open(dir)
	if err != nil {
		t.Error(err)
		return
	}
	defer d.Close()
	if err := UnlockWork(int(d.Fd()), "work"); err != nil {
		t.Error(err)
	}
}

func read(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestViewAndCommandSeeOneTree(t *testing.T) {
	h := need(t)
	_, mount := layers(t, h, map[string]string{"a.txt": "a\n"})
	mnt, up := mount()
	if err := os.WriteFile(filepath.Join(h.View(mnt), "from-tool"), []byte("tool\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := sh(t, h, mnt, "cat from-tool; echo cmd > from-cmd; pwd"); got != "tool\n"+mnt+"\n" {
		t.Fatalf("the command saw %q", got)
	}
	if got := read(t, filepath.Join(h.View(mnt), "from-cmd")); got != "cmd\n" {
		t.Fatalf("the view reads %q", got)
	}
	for _, name := range []string{"from-tool", "from-cmd"} {
		if _, err := os.Stat(filepath.Join(up, name)); err != nil {
			t.Fatalf("%s is not in the upper directory: %v", name, err)
		}
	}
	if ents, _ := os.ReadDir(mnt); len(ents) != 0 {
		t.Fatalf("the mount point outside the holder's namespace holds %v", ents)
	}
}

// TestAttacksLeaveLowerAndOthers: whatever a command does to a file it
// shares with the lower directory (append in place, hard link and write,
// mv over, chmod, a symlink out), the lower and another mount of it keep
// their files.
func TestAttacksLeaveLowerAndOthers(t *testing.T) {
	h := need(t)
	outside := filepath.Join(t.TempDir(), "outside")
	if err := os.WriteFile(outside, []byte("outside\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{"append": "1\n", "link": "2\n", "mv": "3\n", "chmod": "4\n", "dir/deep": "5\n"}
	lower, mount := layers(t, h, files)
	a, _ := mount()
	b, _ := mount()
	sh(t, h, a, `echo evil >> append
ln link hard && echo evil >> hard
echo evil > new && mv -f new mv
chmod 777 chmod
rm -rf dir
ln -s `+outside+` out && echo evil >> out || true`)
	if got := read(t, filepath.Join(h.View(a), "append")); got != "1\nevil\n" {
		t.Fatalf("the worker's own view reads %q", got)
	}
	for _, root := range []string{lower, h.View(b)} {
		for name, want := range files {
			if got := read(t, filepath.Join(root, name)); got != want {
				t.Errorf("%s/%s = %q, want %q", root, name, got, want)
			}
		}
		if fi, err := os.Stat(filepath.Join(root, "chmod")); err != nil || fi.Mode().Perm() != 0o644 {
			t.Errorf("%s/chmod: %v %v", root, fi, err)
		}
	}
	// The symlink is the worker's; troupe never writes through it, but a
	// command in the worker may, exactly as in a checkout: the outside
	// file is the sandbox's business. The overlay itself adds no path out.
	_ = outside
}

func TestTwoWorkersEditingOneFile(t *testing.T) {
	h := need(t)
	lower, mount := layers(t, h, map[string]string{"f": "base\n"})
	a, _ := mount()
	b, _ := mount()
	if err := os.WriteFile(filepath.Join(h.View(a), "f"), []byte("a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sh(t, h, b, "echo b > f")
	for p, want := range map[string]string{filepath.Join(h.View(a), "f"): "a\n", filepath.Join(h.View(b), "f"): "b\n", filepath.Join(lower, "f"): "base\n"} {
		if got := read(t, p); got != want {
			t.Errorf("%s = %q, want %q", p, got, want)
		}
	}
}

func TestBadMountPathsRefused(t *testing.T) {
	h := need(t)
	for _, p := range [][2]string{{"rel", "l"}, {"/r", "/abs"}, {"/r", "../up"}, {"/r", ""}} {
		if _, err := h.Mount(p[0], p[1], "u", "w", "t"); err == nil {
			t.Errorf("Mount(%q, %q) mounted", p[0], p[1])
		}
	}
}

// TestHolderRefusesBadRequestsAndEndsWithItsInput: an unknown request is
// answered with an error and the holder serves on; closed, it is gone
// (its process waited for) and requests fail.
func TestHolderRefusesBadRequestsAndEndsWithItsInput(t *testing.T) {
	need(t)
	h, err := Start()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.ask(request{Op: "bogus", Target: "/"}, nil); err == nil || !strings.Contains(err.Error(), "unknown request") {
		t.Fatalf("bogus request: %v", err)
	}
	_, mount := layers(t, h, map[string]string{"f": "x"})
	mnt, _ := mount()
	if got := read(t, filepath.Join(h.View(mnt), "f")); got != "x" {
		t.Fatalf("after a bad request the holder's mount reads %q", got)
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	if h.cmd.ProcessState == nil {
		t.Fatal("the holder was not waited for")
	}
	if _, err := h.Mount("/a", "b", "c", "d", "e"); err == nil {
		t.Fatal("a closed holder took a request")
	}
}

// TestSwappedComponentsNeverMountOutside: a component of the upper, work
// or lower directory's path or of the mount point's, swapped for a
// symbolic link to a directory outside (as an agent that can write
// troupe's data directory could, between troupe's check and the mount),
// makes the mount fail: nothing is mounted on, written into or read as
// a layer from outside, and a mount point swapped after the mount does
// not move the view.
func TestSwappedComponentsNeverMountOutside(t *testing.T) {
	h := need(t)
	for _, swap := range []string{"w/up", "w/work", "w/mnt", "w", "lower"} {
		t.Run(strings.ReplaceAll(swap, "/", "_"), func(t *testing.T) {
			base, outside := t.TempDir(), t.TempDir()
			for _, d := range []string{"lower", "w/up", "w/work", "w/mnt"} {
				if err := os.MkdirAll(filepath.Join(base, d), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.MkdirAll(filepath.Join(outside, d), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.WriteFile(filepath.Join(outside, "lower", "secret"), []byte("s"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.RemoveAll(filepath.Join(base, swap)); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(filepath.Join(outside, swap), filepath.Join(base, swap)); err != nil {
				t.Fatal(err)
			}
			f, err := h.Mount(base, "lower", "w/up", "w/work", "w/mnt")
			if err == nil {
				_ = h.Unmount(f)
				f.Close()
				t.Fatalf("mounted with %s swapped for a symlink out", swap)
			}
			if !strings.Contains(err.Error(), "symbolic link") && !strings.Contains(err.Error(), "too many levels") {
				t.Errorf("error %v does not say a symlink was refused", err)
			}
			for _, d := range []string{"w/up", "w/work", "w/mnt"} {
				if ents, _ := os.ReadDir(filepath.Join(h.View(outside), d)); len(ents) != 0 {
					t.Errorf("outside %s holds %v", d, ents)
				}
			}
		})
	}
	t.Run("after the mount", func(t *testing.T) {
		base := t.TempDir()
		for _, d := range []string{"lower", "w/up", "w/work", "w/mnt"} {
			if err := os.MkdirAll(filepath.Join(base, d), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(base, "lower", "f"), []byte("lower"), 0o644); err != nil {
			t.Fatal(err)
		}
		f, err := h.Mount(base, "lower", "w/up", "w/work", "w/mnt")
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		// The mount point's path renamed away and a symlink put in its
		// place: the descriptor still leads to the mount, and Unmount
		// by it unmounts that mount, not whatever the path names.
		if err := os.Rename(filepath.Join(h.View(base), "w"), filepath.Join(h.View(base), "moved")); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(t.TempDir(), filepath.Join(base, "w")); err != nil {
			t.Fatal(err)
		}
		if got := read(t, "/proc/self/fd/"+strconv.Itoa(int(f.Fd()))+"/f"); got != "lower" {
			t.Fatalf("through the descriptor: %q", got)
		}
		if err := h.Unmount(f); err != nil {
			t.Fatal(err)
		}
		if ents, _ := os.ReadDir(filepath.Join(h.View(base), "moved", "mnt")); len(ents) != 0 {
			t.Fatalf("still mounted after Unmount: %v", ents)
		}
		unlockWork(t, filepath.Join(base, "moved"))
	})
}

// TestEnteredCommandCannotTouchOtherMounts: a command entered in one
// overlay, run by root or by anyone, has no capability in the holder's
// namespaces but root's CAP_SETFCAP: it can neither unmount another worker's overlay nor mount
// over it, and that worker's view stays its own.
func TestEnteredCommandCannotTouchOtherMounts(t *testing.T) {
	h := need(t)
	_, mount := layers(t, h, map[string]string{"f": "lower\n"})
	a, _ := mount()
	b, _ := mount()
	sh(t, h, b, "echo b > f")
	out := sh(t, h, a, "grep CapEff /proc/self/status; umount -l "+b+" && echo UNMOUNTED; mkdir -p evil && mount --bind evil "+b+" && echo MOUNTED; true")
	// Root's keeps CAP_SETFCAP alone (the sandbox's forker maps uid 0
	// into the command's own user namespace with it); anyone else's, none.
	if strings.Contains(out, "UNMOUNTED") || strings.Contains(out, "MOUNTED") ||
		!strings.Contains(out, "CapEff:\t0000000000000000") && !strings.Contains(out, "CapEff:\t0000000080000000") {
		t.Fatalf("the entered command:\n%s", out)
	}
	if got := read(t, filepath.Join(h.View(b), "f")); got != "b\n" {
		t.Fatalf("the other worker's view reads %q", got)
	}
}
