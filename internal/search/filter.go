package search

import (
	"fmt"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

// Glob is a compiled file glob: * and ? within a name, ** across
// directories, [...] classes, {a,b} alternatives. A glob without a slash
// matches a base name anywhere; one with a slash matches a path relative
// to the workspace root or to the searched directory.
type Glob struct {
	pattern string
	path    bool   // holds a slash: match the relative path
	fold    bool   // match regardless of case (the pattern is lower case)
	suffix  string // fast path for "*.ext": the base name ends with it
	exact   string // fast path for a pattern without metacharacters
}

// CompileGlob compiles pattern. With smartCase, a pattern without
// upper-case letters matches regardless of case (as fd does).
func CompileGlob(pattern string, smartCase bool) (*Glob, error) {
	p := strings.TrimSpace(pattern)
	p = strings.TrimPrefix(p, "./")
	if strings.HasPrefix(p, "/") {
		p = strings.TrimLeft(p, "/")
	}
	p = strings.TrimSuffix(p, "/")
	if p == "" {
		return nil, fmt.Errorf("empty glob %q", pattern)
	}
	if !doublestar.ValidatePattern(p) {
		return nil, fmt.Errorf("invalid glob %q: check that every [ and { is closed", pattern)
	}
	g := &Glob{pattern: p, path: strings.Contains(p, "/")}
	g.fold = smartCase && strings.ToLower(p) == p
	const meta = "*?[{\\"
	switch {
	case !strings.ContainsAny(p, meta):
		g.exact = p
	case !g.path && p[0] == '*' && len(p) > 1 && !strings.ContainsAny(p[1:], meta):
		g.suffix = p[1:]
	}
	return g, nil
}

// Match reports whether the glob matches an entry, given its base name and
// its slash-separated paths relative to the workspace root and to the
// searched directory.
func (g *Glob) Match(name, rel, relSearch string) bool {
	if !g.path {
		return g.matchOne(name)
	}
	return g.matchOne(rel) || (relSearch != rel && g.matchOne(relSearch))
}

func (g *Glob) matchOne(s string) bool {
	if g.fold {
		s = strings.ToLower(s)
	}
	switch {
	case g.exact != "":
		return s == g.exact
	case g.suffix != "":
		return strings.HasSuffix(s, g.suffix)
	}
	return doublestar.MatchUnvalidated(g.pattern, s)
}

// FileFilter selects the files a grep reads: by an include glob (a
// leading ! makes it an exclude) and by a file type.
type FileFilter struct {
	include *Glob
	exclude bool
	types   []*Glob
}

// NewFileFilter compiles an include glob and a type name; either may be
// empty. Globs are case-sensitive, as ripgrep's are.
func NewFileFilter(include, typ string) (*FileFilter, error) {
	f := &FileFilter{}
	if include = strings.TrimSpace(include); include != "" {
		if strings.HasPrefix(include, "!") {
			f.exclude = true
			include = include[1:]
		}
		g, err := CompileGlob(include, false)
		if err != nil {
			return nil, err
		}
		f.include = g
	}
	if typ = strings.TrimSpace(typ); typ != "" {
		globs := typeGlobs(typ)
		if globs == nil {
			return nil, fmt.Errorf("unknown file type %q; known types: %s", typ, strings.Join(TypeNames(), ", "))
		}
		for _, p := range globs {
			g, err := CompileGlob(p, false)
			if err != nil {
				return nil, err
			}
			f.types = append(f.types, g)
		}
	}
	return f, nil
}

// Allow reports whether a file passes the filter.
func (f *FileFilter) Allow(name, rel, relSearch string) bool {
	if f == nil {
		return true
	}
	if len(f.types) > 0 {
		ok := false
		for _, g := range f.types {
			if g.Match(name, rel, relSearch) {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	if f.include != nil && f.include.Match(name, rel, relSearch) == f.exclude {
		return false
	}
	return true
}
