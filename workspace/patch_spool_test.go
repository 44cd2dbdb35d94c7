package workspace

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
)

// A spooled patch left by a process that was killed on its way (a node
// killed while shipping) is removed by the next process that spools in
// that directory; a live process's spooled patch, and a file troupe did
// not name, stay.
func TestSpoolRemovesWhatDeadProcessesLeft(t *testing.T) {
	dir := t.TempDir()
	spool := filepath.Join(dir, spoolDir)
	must(t, os.MkdirAll(spool, 0o700))
	gone := exec.Command("true")
	must(t, gone.Run())
	dead := filepath.Join(spool, strconv.Itoa(gone.Process.Pid)+"-patch-1")
	live := filepath.Join(spool, strconv.Itoa(os.Getppid())+"-patch-2")
	other := filepath.Join(spool, "notes")
	for _, f := range []string{dead, live, other} {
		must(t, os.WriteFile(f, []byte("x"), 0o600))
	}
	p, err := SpoolPatch(dir, func(w io.Writer) error { _, err := io.WriteString(w, "patch"); return err })
	must(t, err)
	defer p.Remove()
	if _, err := os.Lstat(dead); err == nil {
		t.Error("the dead process's spooled patch is still there")
	}
	for _, f := range []string{live, other} {
		if _, err := os.Lstat(f); err != nil {
			t.Errorf("%s was removed: %v", filepath.Base(f), err)
		}
	}
	if b, err := p.Bytes(); err != nil || string(b) != "patch" || filepath.Dir(p.Path) != spool {
		t.Errorf("spooled %q in %s (%v)", b, p.Path, err)
	}
}
