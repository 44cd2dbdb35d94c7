package tools

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// Spiller saves the full text of truncated outputs so the model can page
// through them with read_file or grep; the notice carries the path. Files
// are private to the user (0600 in a 0700 directory); those older than
// MaxAge (default 7 days) are removed by Sweep.
type Spiller struct {
	ws     *Workspace
	dir    string
	maxAge time.Duration
}

// DefaultSpillMaxAge is how long spill files live when not configured.
const DefaultSpillMaxAge = 7 * 24 * time.Hour

// NewSpiller stores spill files under dataDir/spill (default
// <workspace>/.troupe/spill).
func NewSpiller(ws *Workspace, dataDir string, maxAge time.Duration) *Spiller {
	if dataDir == "" && ws != nil {
		dataDir = filepath.Join(ws.Root(), ".troupe")
	}
	if maxAge <= 0 {
		maxAge = DefaultSpillMaxAge
	}
	return &Spiller{ws: ws, dir: filepath.Join(dataDir, "spill"), maxAge: maxAge}
}

// Dir is where spill files go.
func (s *Spiller) Dir() string { return s.dir }

// Save writes text to a new spill file for tool and returns the path to
// show the model (workspace-relative when inside the workspace).
func (s *Spiller) Save(tool, text string) (string, error) {
	// Private to the user, even when an older version made it 0755.
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return "", fmt.Errorf("create spill dir: %w", err)
	}
	if err := os.Chmod(s.dir, 0o700); err != nil {
		return "", fmt.Errorf("spill dir: %w", err)
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := fmt.Sprintf("%s-%s-%s.txt", tool, time.Now().UTC().Format("20060102T150405"), hex.EncodeToString(b[:]))
	p := filepath.Join(s.dir, name)
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		return "", fmt.Errorf("write spill file: %w", err)
	}
	if s.ws != nil {
		return s.ws.Display(p), nil
	}
	return p, nil
}

// Sweep removes spill files older than the maximum age and returns how
// many it removed.
func (s *Spiller) Sweep(now time.Time) (int, error) {
	entries, err := os.ReadDir(s.dir)
	if os.IsNotExist(err) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("sweep spill dir: %w", err)
	}
	n := 0
	for _, e := range entries {
		info, err := e.Info()
		if err != nil || e.IsDir() || now.Sub(info.ModTime()) <= s.maxAge {
			continue
		}
		if os.Remove(filepath.Join(s.dir, e.Name())) == nil {
			n++
		}
	}
	return n, nil
}
