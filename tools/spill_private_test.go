package tools

import (
	"os"
	"path/filepath"
	"testing"
)

// Spill files are private: 0600 in a 0700 directory, even one an older
// version created 0755.
func TestSpillFilesPrivate(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	if err := os.MkdirAll(filepath.Join(data, "spill"), 0o755); err != nil {
		t.Fatal(err)
	}
	sp := NewSpiller(nil, data, 0)
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
