package tools

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/troupe-ai/troupe/internal/text"
)

//go:embed edit_file.md
var editFileDoc string

// EditFileParams are edit_file's arguments.
type EditFileParams struct {
	Path       string `json:"path" jsonschema:"file path, relative to the workspace root"`
	OldString  string `json:"old_string" jsonschema:"the text to replace, copied exactly from the file, with enough surrounding lines to be unique; empty to create a new file"`
	NewString  string `json:"new_string" jsonschema:"the text to put in its place (empty to delete old_string)"`
	ReplaceAll bool   `json:"replace_all,omitempty" jsonschema:"replace every occurrence instead of requiring exactly one (default false)"`
}

// TouchedPaths names the file edited.
func (p EditFileParams) TouchedPaths() []string { return []string{p.Path} }

// EditFile returns the edit_file tool.
func EditFile() Tool {
	return New(Spec{
		Guidance: []GuidanceLine{Line(SectionEditing, 10, "edit_file replaces old_string with new_string; old_string must match exactly once (include a few surrounding lines), or set replace_all. It answers with a one-line confirmation, not the file.")},
		Name:     NameEditFile, Truncation: HeadLines(50), Description: editFileDoc, ReadOnly: false, Cacheable: false,
		Parallel: PerPath, Tier: TierAlways, Diff: true}, runEditFile)
}

// editMatch is one place where old_string was found: the byte range it
// covers in the file and the text that replaces it.
type editMatch struct {
	start, end int
	repl       string
}

func runEditFile(ctx context.Context, s *Session, p EditFileParams) (Result, error) {
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	abs, err := s.Workspace.Resolve(p.Path)
	if err != nil {
		return Errorf("%v", err), nil
	}
	if err := s.Workspace.CheckWritable(abs); err != nil {
		return Errorf("edit_file refused: %v", err), nil
	}
	display := s.Workspace.Display(abs)
	if p.OldString == p.NewString {
		return Errorf("old_string and new_string are identical, so the edit would change nothing; give the new text in new_string"), nil
	}
	fi, err := s.Workspace.Stat(abs)
	if errors.Is(err, fs.ErrNotExist) {
		if p.OldString != "" {
			return fileNotFound(s, abs, display), nil
		}
		return createByEdit(ctx, s, abs, display, p.NewString)
	}
	if err != nil {
		return Errorf("cannot edit %s: %v", display, err), nil
	}
	// The edit applies to what the model saw: these very bytes.
	raw, res, ok := fileToChange(s, abs, display, fi, NameEditFile)
	if !ok {
		return res, nil
	}
	content := string(raw)
	if p.OldString == "" {
		if content != "" {
			return Errorf("old_string is empty but %s already exists and is not empty; give the text to replace, or use write_file to replace the whole file", display), nil
		}
		return writeEdit(ctx, s, abs, display, fi.Mode().Perm(), content, p.NewString,
			[]editMatch{{start: 0, end: 0, repl: p.NewString}})
	}
	oldS, newS := matchLineEndings(content, p.OldString), matchLineEndings(content, p.NewString)
	matches := exactMatches(content, oldS, newS)
	if len(matches) == 0 {
		matches = looseMatches(content, oldS, newS)
	}
	switch {
	case len(matches) == 0:
		return editNotFound(content, oldS, display), nil
	case len(matches) > 1 && !p.ReplaceAll:
		return Errorf("old_string matches %d times in %s (lines %s); add surrounding lines to make it unique, or set replace_all=true",
			len(matches), display, matchLines(content, matches)), nil
	}
	var b strings.Builder
	b.Grow(len(content) + len(matches)*(len(newS)-len(oldS)))
	prev := 0
	for _, m := range matches {
		b.WriteString(content[prev:m.start])
		b.WriteString(m.repl)
		prev = m.end
	}
	b.WriteString(content[prev:])
	return writeEdit(ctx, s, abs, display, fi.Mode().Perm(), content, b.String(), matches)
}

// createByEdit makes a new file holding text (old_string "" on a missing
// file).
func createByEdit(ctx context.Context, s *Session, abs, display, text string) (Result, error) {
	if res, ok := GateWrite(ctx, FileChange{To: display, New: []byte(text)}); !ok {
		return res, nil
	}
	if res, ok := makeParents(abs, s.Workspace); !ok {
		return res, nil
	}
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	if err := s.Workspace.WriteAtomic(abs, []byte(text), newFileMode); err != nil {
		return Errorf("cannot create %s: %v", display, err), nil
	}
	s.Reads.Record(abs, []byte(text))
	n := countLines(text)
	return Text(fmt.Sprintf("Created %s (%d lines)", display, n)).
		WithMeta("path", display).WithMeta("lines", n).WithMeta("created", true), nil
}

// writeEdit writes the edited content (old was the file's) and confirms
// with the line range the new text occupies in it.
func writeEdit(ctx context.Context, s *Session, abs, display string, perm fs.FileMode, old, content string, matches []editMatch) (Result, error) {
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	data := []byte(content)
	if res, ok := GateWrite(ctx, FileChange{From: display, To: display, Old: []byte(old), New: data}); !ok {
		return res, nil
	}
	if err := s.Workspace.WriteAtomic(abs, data, perm); err != nil {
		return Errorf("cannot write %s: %v", display, err), nil
	}
	s.Reads.Record(abs, data)
	first, last := newTextLines(content, matches)
	return Text(fmt.Sprintf("Edited %s: replaced %d occurrence(s) (lines %d-%d)", display, len(matches), first, last)).
		WithMeta("path", display).WithMeta("occurrences", len(matches)).
		WithMeta("first_line", first).WithMeta("last_line", last), nil
}

// newTextLines returns the first line of the first replacement and the last
// line of the last one, in the new content. Match offsets refer to the old
// content; each replacement shifts what follows by len(repl)-(end-start).
func newTextLines(content string, matches []editMatch) (first, last int) {
	shift, line, pos := 0, 1, 0
	for i, m := range matches {
		at := m.start + shift
		line += strings.Count(content[pos:at], "\n")
		pos = at
		end := line + strings.Count(m.repl, "\n")
		if strings.HasSuffix(m.repl, "\n") {
			end--
		}
		if i == 0 {
			first = line
		}
		last = max(end, line)
		shift += len(m.repl) - (m.end - m.start)
	}
	return first, last
}

// exactMatches finds the non-overlapping occurrences of old in content.
func exactMatches(content, old, repl string) []editMatch {
	var out []editMatch
	for i := 0; ; {
		j := strings.Index(content[i:], old)
		if j < 0 {
			return out
		}
		out = append(out, editMatch{start: i + j, end: i + j + len(old), repl: repl})
		i += j + len(old)
	}
}

// matchLines lists the 1-based line numbers where the matches start.
func matchLines(content string, matches []editMatch) string {
	parts := make([]string, len(matches))
	line, pos := 1, 0
	for i, m := range matches {
		line += strings.Count(content[pos:m.start], "\n")
		pos = m.start
		parts[i] = fmt.Sprint(line)
	}
	return strings.Join(parts, ", ")
}

// matchLineEndings rewrites the line endings of text to the file's style:
// CRLF when most of the file's lines end so, LF otherwise.
func matchLineEndings(content, text string) string {
	crlf := strings.Count(content, "\r\n")
	lf := strings.Count(content, "\n") - crlf
	if !strings.Contains(text, "\n") {
		return text
	}
	text = strings.ReplaceAll(text, "\r\n", "\n")
	if crlf > lf {
		text = strings.ReplaceAll(text, "\n", "\r\n")
	}
	return text
}

// editNotFound is the no-match error, pointing at the most similar line
// of the file when one is close enough to help.
func editNotFound(content, old, display string) Result {
	msg := fmt.Sprintf("old_string was not found in %s", display)
	if n, line, ok := closestLine(content, old); ok {
		msg += fmt.Sprintf("; the most similar line is L%d: %s", n, strings.ToValidUTF8(text.Clip(line, 200), "\uFFFD"))
	}
	return Errorf("%s. Read the file again and copy old_string exactly, including whitespace.", msg)
}

// closestLine finds the file line most like the first non-blank line of
// old, by shared character pairs (cheap: linear in the file's size).
func closestLine(content, old string) (int, string, bool) {
	var probe string
	for l := range strings.SplitSeq(old, "\n") {
		if t := strings.TrimSpace(l); t != "" {
			probe = t
			break
		}
	}
	if len(probe) < 2 {
		return 0, "", false
	}
	want := bigrams(probe)
	best, bestLine, bestText := 0.0, 0, ""
	n := 0
	for l := range strings.SplitSeq(content, "\n") {
		n++
		t := strings.TrimSpace(l)
		// The Dice score cannot reach 0.5 when one side is more than three
		// times longer than the other: skip those without counting.
		if len(t) < 2 || 3*len(t) < len(probe) || len(t) > 3*len(probe) {
			continue
		}
		if score := bigramDice(want, len(probe)-1, t); score > best {
			best, bestLine, bestText = score, n, t
		}
	}
	return bestLine, bestText, best >= 0.5
}

func bigrams(s string) map[string]int {
	m := make(map[string]int, len(s))
	for i := 0; i+1 < len(s); i++ {
		m[s[i:i+2]]++
	}
	return m
}

// bigramDice is the Dice coefficient of the byte pairs of t against want
// (the pair counts of a string with n pairs).
func bigramDice(want map[string]int, n int, t string) float64 {
	used := map[string]int{}
	common := 0
	for i := 0; i+1 < len(t); i++ {
		p := t[i : i+2]
		if used[p] < want[p] {
			used[p]++
			common++
		}
	}
	return 2 * float64(common) / float64(n+len(t)-1)
}
