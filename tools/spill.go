package tools

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"time"

	"github.com/troupe-ai/troupe/internal/statedir"
)

// Spiller saves the full text of truncated outputs so the model can page
// through them with read_file or grep; the notice carries the path.
//
// The spill folder (<data>/spill, <workspace>/.troupe/spill by default)
// is in the workspace, which agents write, so troupe never follows a
// link there: the folder is opened one component at a time and a link on
// the way is refused; its files are private to the user (0600 in a 0700
// folder, narrowed through the open folder, never through a name). Which
// files troupe made is recorded outside the workspace, in the state
// directory's spill index (one empty marker per file): Sweep removes,
// once older than MaxAge (default 7 days), only files listed there that
// are still regular files owned by this user, by their name in the open
// folder, so nothing an agent planted or linked is ever deleted.
type Spiller struct {
	ws      *Workspace
	dataDir string
	dir     string
	index   string // <state>/spill: one marker per spill file ("" without a state directory: no sweep)
	maxAge  time.Duration
}

// DefaultSpillMaxAge is how long spill files live when not configured.
const DefaultSpillMaxAge = 7 * 24 * time.Hour

// spillName is the form of the names Save gives; Sweep touches no other.
var spillName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_.-]+-\d{8}T\d{6}-[0-9a-f]{12}\.txt$`) })

// NewSpiller stores spill files under dataDir/spill (default
// <workspace>/.troupe/spill) and their index under stateDir/spill (none
// when stateDir is "": then Sweep removes nothing).
func NewSpiller(ws *Workspace, dataDir, stateDir string, maxAge time.Duration) *Spiller {
	if dataDir == "" && ws != nil {
		dataDir = filepath.Join(ws.Root(), statedir.DataDirName)
	}
	if maxAge <= 0 {
		maxAge = DefaultSpillMaxAge
	}
	s := &Spiller{ws: ws, dataDir: dataDir, dir: filepath.Join(dataDir, "spill"), maxAge: maxAge}
	if stateDir != "" {
		s.index = filepath.Join(stateDir, "spill")
	}
	return s
}

// Dir is where spill files go.
func (s *Spiller) Dir() string { return s.dir }

// open opens the spill folder, made 0700 when missing, without following
// a link; it narrows the folder to 0700 through its handle.
func (s *Spiller) open() (*os.Root, error) {
	root := ""
	if s.ws != nil {
		root = s.ws.Root()
	}
	data, err := statedir.OpenData(root, s.dataDir)
	if err != nil {
		return nil, err
	}
	defer data.Close()
	d, err := statedir.OpenDir(data, "spill", 0o700)
	if err != nil {
		return nil, err
	}
	f, err := d.Open(".")
	if err == nil {
		err = f.Chmod(0o700) // the folder itself, by its handle: never through a link
		f.Close()
	}
	if err != nil {
		d.Close()
		return nil, err
	}
	return d, nil
}

// Save writes text to a new spill file for tool and returns the path to
// show the model (workspace-relative when inside the workspace).
func (s *Spiller) Save(tool, text string) (string, error) {
	d, err := s.open()
	if err != nil {
		return "", fmt.Errorf("create spill dir: %w", err)
	}
	defer d.Close()
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := fmt.Sprintf("%s-%s-%s.txt", tool, time.Now().UTC().Format("20060102T150405"), hex.EncodeToString(b[:]))
	if s.index != "" {
		// The marker first: a file troupe made is always in the index.
		if err := statedir.Make(s.index); err != nil {
			return "", fmt.Errorf("spill index: %w", err)
		}
		if err := os.WriteFile(filepath.Join(s.index, name), nil, 0o600); err != nil {
			return "", fmt.Errorf("spill index: %w", err)
		}
	}
	f, err := d.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", fmt.Errorf("write spill file: %w", err)
	}
	if _, err := f.WriteString(text); err != nil {
		f.Close()
		return "", fmt.Errorf("write spill file: %w", err)
	}
	if err := f.Close(); err != nil {
		return "", fmt.Errorf("write spill file: %w", err)
	}
	p := filepath.Join(s.dir, name)
	if s.ws != nil {
		return s.ws.Display(p), nil
	}
	return p, nil
}

// Sweep removes the spill files troupe made that are older than the
// maximum age (by the index's markers) and returns how many it removed;
// see Spiller.
func (s *Spiller) Sweep(now time.Time) (int, error) {
	if s.index == "" {
		return 0, nil
	}
	markers, err := os.ReadDir(s.index)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("sweep spill dir: %w", err)
	}
	var old []string
	for _, m := range markers {
		info, err := m.Info()
		if err == nil && m.Type().IsRegular() && spillName().MatchString(m.Name()) && now.Sub(info.ModTime()) > s.maxAge {
			old = append(old, m.Name())
		}
	}
	if len(old) == 0 {
		return 0, nil
	}
	d, err := s.open()
	if err != nil {
		return 0, fmt.Errorf("sweep spill dir: %w", err)
	}
	defer d.Close()
	n := 0
	for _, name := range old {
		fi, err := d.Lstat(name)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil || !fi.Mode().IsRegular() || !ownedBySelf(fi):
			continue // not the file troupe made: left alone, and so is its marker
		default:
			if d.Remove(name) != nil {
				continue
			}
			n++
		}
		_ = os.Remove(filepath.Join(s.index, name))
	}
	return n, nil
}
