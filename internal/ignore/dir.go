package ignore

import (
	"strings"
)

// Presence says which rule files a directory holds, as a walker learns
// from listing it.
type Presence struct {
	Gitignore bool // a .gitignore file
	Ignore    bool // a .ignore file
	Git       bool // a .git entry: the directory is a repository root
}

// Prime tells the matcher which rule files absDir holds, so that it reads
// just those instead of probing for each. A walker calls it after listing
// a directory and before matching the directory's entries. Directories
// already loaded are left as they are.
func (m *Matcher) Prime(absDir string, p Presence) {
	rel, ok := m.rel(absDir)
	if !ok {
		return
	}
	m.mu.RLock()
	_, loaded := m.dirs[rel]
	m.mu.RUnlock()
	if loaded {
		return
	}
	dr := m.loadPresent(rel, p)
	m.mu.Lock()
	if _, ok := m.dirs[rel]; !ok {
		m.dirs[strings.Clone(rel)] = dr
	}
	m.mu.Unlock()
}

// Dir is the rules in force in one directory, gathered once so that the
// directory's entries are matched without locks or lookups. Get one with
// Matcher.Dir; it is safe for concurrent use.
type Dir struct {
	levels []level // deepest first; levels without rules or .git left out
	inGit  bool    // the directory is a .git directory or lies in one
}

// level is one directory's rule files, seen from a directory below it.
type level struct {
	rules  *dirRules
	prefix string // the path from the level's directory down to the matched directory ("" when the same)
}

// Dir returns the rules that apply to the entries of absDir. A directory
// outside the root has none.
func (m *Matcher) Dir(absDir string) *Dir {
	rel, ok := m.rel(absDir)
	if !ok {
		return &Dir{}
	}
	d := &Dir{inGit: rel == ".git" || strings.HasPrefix(rel, ".git/") ||
		strings.HasSuffix(rel, "/.git") || strings.Contains(rel, "/.git/")}
	end := len(rel)
	for {
		dir := rel[:end]
		prefix := ""
		switch {
		case end == len(rel):
		case end == 0:
			prefix = rel
		default:
			prefix = rel[end+1:]
		}
		if dr := m.rules(dir); dr.hasGit || len(dr.ignore)+len(dr.gitignore)+len(dr.exclude) > 0 {
			d.levels = append(d.levels, level{rules: dr, prefix: prefix})
		}
		if end == 0 {
			return d
		}
		end = max(strings.LastIndexByte(rel[:end], '/'), 0)
	}
}

// Match reports whether the entry name of the directory is matched by the
// rules, as Matcher.Match would report for its full path.
func (d *Dir) Match(name string, isDir bool) bool {
	if d.inGit || name == ".git" {
		return true
	}
	var dIgnore, dGit, dExclude decision
	sawGit := false
	for _, l := range d.levels {
		if dIgnore == undecided {
			dIgnore = decideSplit(l.rules.ignore, l.prefix, name, isDir)
		}
		if !sawGit && dGit == undecided {
			dGit = decideSplit(l.rules.gitignore, l.prefix, name, isDir)
		}
		if !sawGit && dExclude == undecided {
			dExclude = decideSplit(l.rules.exclude, l.prefix, name, isDir)
		}
		sawGit = sawGit || l.rules.hasGit
	}
	for _, dec := range [...]decision{dIgnore, dGit, dExclude} {
		if dec != undecided {
			return dec == excluded
		}
	}
	return false
}

// decideSplit is decide for the path prefix/name, built only when an
// anchored glob needs it whole.
func decideSplit(rules []rule, prefix, name string, isDir bool) decision {
	var joined string
	for i := len(rules) - 1; i >= 0; i-- {
		r := &rules[i]
		var hit bool
		switch {
		case r.dirOnly && !isDir:
			continue
		case !r.anchored || prefix == "":
			hit = r.matches(name, name, isDir)
		case r.kind == kindLiteral:
			hit = len(r.lit) == len(prefix)+1+len(name) && strings.HasPrefix(r.lit, prefix) &&
				r.lit[len(prefix)] == '/' && strings.HasSuffix(r.lit, name)
		default:
			if joined == "" {
				joined = prefix + "/" + name
			}
			hit = r.matches(joined, name, isDir)
		}
		if hit {
			if r.negate {
				return included
			}
			return excluded
		}
	}
	return undecided
}

// loadPresent reads the rule files a directory is known to hold.
func (m *Matcher) loadPresent(dir string, p Presence) *dirRules {
	dr := &dirRules{hasGit: p.Git}
	if p.Ignore {
		dr.ignore = m.readRules(dir, ".ignore")
	}
	if p.Gitignore {
		dr.gitignore = m.readRules(dir, ".gitignore")
	}
	if p.Git {
		dr.exclude = m.readRules(dir, ".git/info/exclude")
	}
	return dr
}
