package tools

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strings"

	"github.com/troupe-ai/troupe/internal/search"
)

//go:embed grep.md
var grepDoc string

const (
	grepDefaultLimit = 100
	grepMaxLimit     = 2000
	// grepMaxContext caps context_lines, before and after.
	grepMaxContext = 50
	// grepMaxLineChars is where content mode cuts a long line.
	grepMaxLineChars = 500
)

// GrepParams are grep's arguments.
type GrepParams struct {
	Pattern       string `json:"pattern" jsonschema:"regular expression (RE2 syntax) to search for; with literal=true, plain text"`
	Path          string `json:"path,omitempty" jsonschema:"file or directory to search, relative to the workspace root (default the root)"`
	Include       string `json:"include,omitempty" jsonschema:"only files whose name matches this glob, e.g. *.go or *.{ts,tsx}; a leading ! excludes"`
	Type          string `json:"type,omitempty" jsonschema:"only files of this type (ripgrep names): go, rust, py, js, ts, java, c, cpp, cs, rb, php, kotlin, swift, scala, sh, md, json, yaml, toml, html, css, sql, proto, asm"`
	Mode          string `json:"mode,omitempty" jsonschema:"files (default): matching paths; content: matching lines; count: matching lines per file"`
	Limit         int    `json:"limit,omitempty" jsonschema:"maximum results to show (default 100, at most 2000)"`
	Offset        int    `json:"offset,omitempty" jsonschema:"number of results to skip, for the next page (default 0)"`
	ContextLines  int    `json:"context_lines,omitempty" jsonschema:"content mode: lines of context before and after each match"`
	Before        int    `json:"before,omitempty" jsonschema:"content mode: lines of context before each match (overrides context_lines)"`
	After         int    `json:"after,omitempty" jsonschema:"content mode: lines of context after each match (overrides context_lines)"`
	CaseSensitive *bool  `json:"case_sensitive,omitempty" jsonschema:"force case sensitivity on or off; default smart case (all-lowercase pattern ignores case)"`
	Literal       bool   `json:"literal,omitempty" jsonschema:"treat the pattern as plain text, not a regular expression"`
	Multiline     bool   `json:"multiline,omitempty" jsonschema:"let a match span lines"`
	Invert        bool   `json:"invert,omitempty" jsonschema:"select the lines that do not match"`
}

// TouchedPaths names the searched path, so the cache drops the result when
// a file under it changes.
func (p GrepParams) TouchedPaths() []string { return dirScope(p.Path) }

// Grep returns the grep tool.
func Grep() Tool {
	return New(Spec{
		Guidance: []GuidanceLine{Line(SectionWhichTool, 20, "Find where something is written with grep; it lists matching files by default.")},
		Name:     NameGrep, Truncation: Head(50 * 1024), Description: grepDoc, ReadOnly: true, Cacheable: true,
		Parallel: ParallelSafe, Tier: TierAlways}, runGrep,
		Enum("mode", "files", "content", "count"), Minimum("limit", 1), Minimum("offset", 0),
		Minimum("context_lines", 0), Minimum("before", 0), Minimum("after", 0))
}

// grepRun is one grep call, its arguments checked and compiled.
type grepRun struct {
	s             *Session
	p             GrepParams
	pat           *search.Pattern
	scope         *searchScope
	limit         int
	before, after int
}

func runGrep(ctx context.Context, s *Session, p GrepParams) (Result, error) {
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	if IsArtifact(p.Path) {
		local, err := s.localArtifact(ctx, p.Path)
		if err != nil {
			return Errorf("%v", err), nil
		}
		p.Path = local
	}
	g, res := newGrepRun(s, p)
	if g == nil {
		return res, nil
	}
	filter, err := search.NewFileFilter(p.Include, p.Type)
	if err != nil {
		return Errorf("%v", err), nil
	}
	opts := search.GrepOptions{Invert: p.Invert, Filter: filter}
	switch p.Mode {
	case "count":
		opts.Mode = search.ModeCount
	case "content":
		opts.Mode = search.ModeLines
		opts.KeepLines = p.Offset + g.limit + g.after
	}
	hits, err := search.Grep(ctx, g.scope.target, g.pat, opts)
	if err != nil {
		return g.scope.failed(ctx, err)
	}
	if len(hits) == 0 {
		return Text("No matches for "+p.Pattern).WithMeta("files", 0), nil
	}
	var out Result
	switch opts.Mode {
	case search.ModeLines:
		out, err = g.content(ctx, hits)
		if err != nil {
			return Result{}, err
		}
	default:
		out = g.perFile(hits, opts.Mode == search.ModeCount)
	}
	return out.WithMeta("files", len(hits)), nil
}

// newGrepRun checks the arguments; a nil run comes with the error result.
// maxGrepPattern bounds a pattern: a huge one costs seconds and gigabytes
// to compile and never helps.
const maxGrepPattern = 64 << 10

func newGrepRun(s *Session, p GrepParams) (*grepRun, Result) {
	if p.Pattern == "" {
		return nil, Errorf("pattern is empty: give a regular expression (or, with literal=true, plain text) to search for")
	}
	if len(p.Pattern) > maxGrepPattern {
		return nil, Errorf("pattern is %d bytes, over the limit of %d: search for a shorter, distinctive part", len(p.Pattern), maxGrepPattern)
	}
	sc, res := openScope(s, p.Path, "a file or directory")
	if sc == nil {
		return nil, res
	}
	g := &grepRun{s: s, p: p, scope: sc}
	if fi := sc.info; !fi.IsDir() && !fi.Mode().IsRegular() {
		return nil, Errorf("%s is %s, not a regular file; grep searches regular files only", sc.display(), fileKind(fi.Mode()))
	}
	pat, err := search.CompilePattern(p.Pattern, search.PatternOptions{
		Literal: p.Literal, Multiline: p.Multiline, CaseSensitive: p.CaseSensitive})
	if err != nil {
		return nil, patternErrorResult(p.Pattern, err)
	}
	g.pat = pat
	g.limit = grepDefaultLimit
	if p.Limit > 0 {
		g.limit = min(p.Limit, grepMaxLimit)
	}
	g.before, g.after = p.ContextLines, p.ContextLines
	if p.Before > 0 {
		g.before = p.Before
	}
	if p.After > 0 {
		g.after = p.After
	}
	g.before, g.after = min(g.before, grepMaxContext), min(g.after, grepMaxContext)
	return g, Result{}
}

// patternErrorResult explains a pattern that does not compile, pointing at
// the offending part.
func patternErrorResult(pattern string, err error) Result {
	var pe *search.PatternError
	if !errors.As(err, &pe) {
		return Errorf("invalid pattern %q: %v", pattern, err)
	}
	msg := fmt.Sprintf("invalid regular expression %q (RE2 syntax): %s", pattern, pe.Code)
	if pe.Expr != "" {
		msg += fmt.Sprintf(" in `%s`", pe.Expr)
		if i := strings.Index(pattern, pe.Expr); i >= 0 {
			msg += fmt.Sprintf(" at byte %d:\n  %s\n  %s^", i, pattern, strings.Repeat(" ", i))
		}
	}
	return Errorf("%s\nEscape metacharacters with a backslash, or set literal=true to search for the text as written.", msg)
}

// perFile renders files and count mode: one line per file.
func (g *grepRun) perFile(hits []search.Hit, counts bool) Result {
	return listPage(len(hits), g.p.Offset, g.limit, "files match "+g.p.Pattern, func(b *strings.Builder, i int) {
		b.WriteString(listPath(g.s.Workspace.Rel(hits[i].Path)))
		if counts {
			fmt.Fprintf(b, ": %d", hits[i].Count)
		}
	})
}
