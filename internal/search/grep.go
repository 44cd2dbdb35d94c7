package search

import (
	"context"
	"errors"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"
)

// GrepOptions configure one grep.
type GrepOptions struct {
	Mode   Mode
	Invert bool // select the lines that do not match
	// Filter selects the files read below a directory; a file given as the
	// target is always read. Nil reads every file.
	Filter *FileFilter
	// KeepLines bounds the line numbers recorded per file in ModeLines.
	KeepLines int
}

// Hit is one file with at least one selected line.
type Hit struct {
	Path    string // absolute
	ModTime time.Time
	// Count is the number of selected lines (in multiline mode, of
	// matches); 1 in ModeFiles.
	Count int
	// Lines holds, in ModeLines, the numbers of the first KeepLines
	// selected lines, and NLines how many there are in all.
	Lines  []int
	NLines int
}

// Grep searches the target for p and returns the files that match, newest
// first (ties by path). Binary files (a NUL byte before a match was
// found), symbolic links met in the walk, and unreadable files are
// skipped. A cancelled ctx stops it promptly with ctx's error.
func Grep(ctx context.Context, t Target, p *Pattern, o GrepOptions) ([]Hit, error) {
	stopped, release := watch(ctx)
	defer release()
	n := t.workers()
	scanners := make([]*scanner, n)
	found := make([][]Hit, n)
	err := walk(stopped, t, false, func(w int, e Entry) error {
		explicit := e.explicit()
		if !e.Type.IsRegular() && !(explicit && e.Type&fs.ModeNamedPipe != 0) {
			return nil // links and devices met in the walk; a pipe named as the target is tried (and refused when opened)
		}
		if !explicit && !o.Filter.Allow(e.Name, relTo(t.Root, e.Path), relTo(t.Path, e.Path)) {
			return nil
		}
		if scanners[w] == nil {
			scanners[w] = newScanner(p, o.Mode, o.Invert, o.KeepLines, stopped)
		}
		h, ok, err := scanners[w].file(e)
		if ok {
			found[w] = append(found[w], h)
		}
		return err
	})
	if stopped.Load() && ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if err != nil {
		return nil, err
	}
	hits := slices.Concat(found...)
	slices.SortFunc(hits, func(a, b Hit) int { return byNewest(a.ModTime, b.ModTime, a.Path, b.Path) })
	return hits, nil
}

// file searches one file; ok says whether it has a selected line. Only a
// cancellation is an error: files that vanish or cannot be read are
// skipped, as ripgrep skips them (with a message we do not need).
func (s *scanner) file(e Entry) (Hit, bool, error) {
	f, err := openEntry(e, e.Type.IsRegular())
	if err != nil {
		return Hit{}, false, nil
	}
	defer f.Close()
	err = s.scan(f)
	if errors.Is(err, errStopped) {
		return Hit{}, false, err
	}
	// A file found binary after some lines matched keeps them in content
	// mode, whose lines ripgrep would have printed already, but not in
	// count mode, whose total it never prints.
	partial := errors.Is(err, errBinary) && s.mode == ModeLines && !s.p.multiline
	if (err != nil && !partial) || s.count == 0 {
		return Hit{}, false, nil
	}
	h := Hit{Path: e.Path, Count: s.count, NLines: s.nline}
	if s.mode == ModeLines {
		h.Lines = slices.Clone(s.lines)
	}
	h.ModTime, _ = f.modTime()
	return h, true, nil
}

// watch returns a flag set once ctx is done (cheaper to poll per file than
// ctx.Err) and a function releasing the watch.
func watch(ctx context.Context) (*atomic.Bool, func()) {
	stopped := new(atomic.Bool)
	if ctx.Err() != nil {
		stopped.Store(true)
	}
	stop := context.AfterFunc(ctx, func() { stopped.Store(true) })
	return stopped, func() { stop() }
}

// byNewest orders by modification time, newest first, then by path.
func byNewest(ta, tb time.Time, pa, pb string) int {
	if c := tb.Compare(ta); c != 0 {
		return c
	}
	return strings.Compare(pa, pb)
}

// relTo returns p relative to base, slash-separated, without allocating
// when p is below base. p == base gives its base name.
func relTo(base, p string) string {
	if len(p) > len(base) && strings.HasPrefix(p, base) {
		rest := p[len(base):]
		if rest[0] == filepath.Separator {
			rest = rest[1:]
		} else if !strings.HasSuffix(base, string(filepath.Separator)) {
			return filepath.ToSlash(p)
		}
		return filepath.ToSlash(rest)
	}
	if p == base {
		return filepath.Base(p)
	}
	return filepath.ToSlash(p)
}
