package ignore

import (
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
)

// Matcher answers whether a path under its root is ignored by the rules
// ripgrep applies by default (see the package documentation). It is safe
// for concurrent use; it loads each directory's rule files lazily, once.
type Matcher struct {
	root string   // absolute, cleaned
	dir  *os.Root // when set, rule files are opened beneath it

	mu      sync.RWMutex
	dirs    map[string]*dirRules // rel dir ("" for the root) → its rules
	ignored map[string]bool      // rel dir → Ignored(dir, true), memoized
}

// dirRules holds the rule files found in one directory.
type dirRules struct {
	ignore    []rule // .ignore
	gitignore []rule // .gitignore
	exclude   []rule // .git/info/exclude, when the directory holds .git
	hasGit    bool   // the directory is a repository root
}

// NewMatcher returns a matcher for the tree at root. root should be an
// absolute path; a relative one is made absolute against the working
// directory.
func NewMatcher(root string) *Matcher {
	if abs, err := filepath.Abs(root); err == nil {
		root = abs
	}
	return &Matcher{
		root:    filepath.Clean(root),
		dirs:    map[string]*dirRules{},
		ignored: map[string]bool{},
	}
}

// NewMatcherIn is NewMatcher reading the rule files through dir, the
// root held open (root is its path, for matching): they are opened beneath
// its descriptor, so a folder swapped for a symlink cannot make the
// matcher read rules from outside. The caller keeps dir open while the
// matcher is used.
func NewMatcherIn(root string, dir *os.Root) *Matcher {
	m := NewMatcher(root)
	m.dir = dir
	return m
}

// Root is the directory the matcher's rules are read from.
func (m *Matcher) Root() string { return m.root }

// Ignored reports whether absPath is ignored: it or one of its parent
// directories (below the root) matches an ignore rule, or it lies in a .git
// directory. Paths outside the root and the root itself are never ignored.
// isDir says whether absPath is a directory (directory-only rules need it).
func (m *Matcher) Ignored(absPath string, isDir bool) bool {
	rel, ok := m.rel(absPath)
	if !ok || rel == "" {
		return false
	}
	for i := 0; i < len(rel); i++ {
		if rel[i] == '/' && m.dirIgnored(rel[:i]) {
			return true
		}
	}
	return m.matchRel(rel, isDir)
}

// Match reports whether absPath itself is matched by the rules, without
// looking at its parent directories. A walker that never descends into
// ignored directories needs only this, and it is what ripgrep applies to
// the entries below a path it was given explicitly.
func (m *Matcher) Match(absPath string, isDir bool) bool {
	rel, ok := m.rel(absPath)
	if !ok || rel == "" {
		return false
	}
	return m.matchRel(rel, isDir)
}

// rel returns absPath relative to the root, slash-separated, and whether
// it is inside the root.
func (m *Matcher) rel(absPath string) (string, bool) {
	if absPath == m.root {
		return "", true
	}
	if len(absPath) <= len(m.root) || !strings.HasPrefix(absPath, m.root) {
		return "", false
	}
	rest := absPath[len(m.root):]
	if m.root != string(filepath.Separator) {
		if rest[0] != filepath.Separator {
			return "", false
		}
		rest = rest[1:]
	}
	if filepath.Separator != '/' {
		rest = filepath.ToSlash(rest)
	}
	return strings.TrimSuffix(rest, "/"), true
}

// dirIgnored is matchRel(dir, true), memoized: every file below a
// directory asks about it.
func (m *Matcher) dirIgnored(dir string) bool {
	m.mu.RLock()
	v, ok := m.ignored[dir]
	m.mu.RUnlock()
	if ok {
		return v
	}
	v = m.matchRel(dir, true)
	m.mu.Lock()
	m.ignored[strings.Clone(dir)] = v
	m.mu.Unlock()
	return v
}

// matchRel decides a root-relative path by the rule files of the
// directories above it, deepest first.
func (m *Matcher) matchRel(rel string, isDir bool) bool {
	base := rel
	if i := strings.LastIndexByte(rel, '/'); i >= 0 {
		base = rel[i+1:]
	}
	if base == ".git" || strings.HasPrefix(rel, ".git/") || strings.Contains(rel, "/.git/") {
		return true
	}
	var dIgnore, dGit, dExclude decision
	sawGit := false
	// Walk the parent directories from the deepest up to the root.
	end := len(rel) - len(base) // index just past the parent's trailing '/'
	for {
		dir := ""
		if end > 0 {
			dir = rel[:end-1]
		}
		dr := m.rules(dir)
		sub := rel[end:] // the path relative to dir
		if dIgnore == undecided {
			dIgnore = decide(dr.ignore, sub, base, isDir)
		}
		if !sawGit && dGit == undecided {
			dGit = decide(dr.gitignore, sub, base, isDir)
		}
		if !sawGit && dExclude == undecided {
			dExclude = decide(dr.exclude, sub, base, isDir)
		}
		sawGit = sawGit || dr.hasGit
		if end == 0 || (dIgnore != undecided && (sawGit || (dGit != undecided && dExclude != undecided))) {
			break
		}
		end = strings.LastIndexByte(rel[:end-1], '/') + 1
	}
	for _, d := range [...]decision{dIgnore, dGit, dExclude} {
		if d != undecided {
			return d == excluded
		}
	}
	return false
}

// rules returns the rule files of a root-relative directory, loading them
// on first use.
func (m *Matcher) rules(dir string) *dirRules {
	m.mu.RLock()
	dr, ok := m.dirs[dir]
	m.mu.RUnlock()
	if ok {
		return dr
	}
	dr = m.load(dir)
	m.mu.Lock()
	if prev, ok := m.dirs[dir]; ok {
		dr = prev // another goroutine won the race; keep one copy
	} else {
		m.dirs[strings.Clone(dir)] = dr
	}
	m.mu.Unlock()
	return dr
}

// load reads a directory's rule files. Unreadable files count as empty.
func (m *Matcher) load(dir string) *dirRules {
	dr := &dirRules{
		ignore:    m.readRules(dir, ".ignore"),
		gitignore: m.readRules(dir, ".gitignore"),
	}
	if fi, err := m.stat(dir, ".git"); err == nil {
		dr.hasGit = true
		if fi.IsDir() {
			dr.exclude = m.readRules(dir, ".git/info/exclude")
		}
	}
	return dr
}

// maxRuleFile bounds how much of one rule file is read.
const maxRuleFile = 4 << 20

// path turns a root-relative directory and a name below it into the path
// to open: relative to the root when the matcher has one open, absolute
// otherwise.
func (m *Matcher) path(dir, name string) string {
	rel := filepath.FromSlash(name)
	if dir != "" {
		rel = filepath.Join(filepath.FromSlash(dir), rel)
	}
	if m.dir != nil {
		return rel
	}
	return filepath.Join(m.root, rel)
}

func (m *Matcher) stat(dir, name string) (fs.FileInfo, error) {
	if m.dir != nil {
		return m.dir.Stat(m.path(dir, name))
	}
	return os.Stat(m.path(dir, name))
}

// readRules reads the rule file name of a root-relative directory. Only a
// regular file is read: a named pipe is opened without waiting and then
// refused, so a FIFO called .gitignore cannot stall a search.
func (m *Matcher) readRules(dir, name string) []rule {
	const flags = os.O_RDONLY | syscall.O_NONBLOCK | syscall.O_NOCTTY
	var f *os.File
	var err error
	if m.dir != nil {
		f, err = m.dir.OpenFile(m.path(dir, name), flags, 0)
	} else {
		f, err = os.OpenFile(m.path(dir, name), flags, 0)
	}
	if err != nil {
		return nil
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil // a directory named .gitignore, say, or a pipe
	}
	b, err := io.ReadAll(io.LimitReader(f, maxRuleFile))
	if err != nil && len(b) == 0 {
		return nil
	}
	return parseRules(string(b))
}
