package ignore

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// Matcher answers whether a path under its root is ignored by the rules
// ripgrep applies by default (see the package documentation). It is safe
// for concurrent use; it loads each directory's rule files lazily, once.
type Matcher struct {
	root string // absolute, cleaned

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
	abs := filepath.Join(m.root, filepath.FromSlash(dir))
	dr := &dirRules{
		ignore:    readRules(filepath.Join(abs, ".ignore")),
		gitignore: readRules(filepath.Join(abs, ".gitignore")),
	}
	if fi, err := os.Stat(filepath.Join(abs, ".git")); err == nil {
		dr.hasGit = true
		if fi.IsDir() {
			dr.exclude = readRules(filepath.Join(abs, ".git", "info", "exclude"))
		}
	}
	return dr
}

// maxRuleFile bounds how much of one rule file is read.
const maxRuleFile = 4 << 20

func readRules(path string) []rule {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxRuleFile))
	if err != nil && len(b) == 0 {
		return nil // a directory named .gitignore, say
	}
	return parseRules(string(b))
}
