package patch

import (
	"fmt"
	"regexp"
	"strings"
	"sync"
)

// The patch format is the one OpenAI's Codex models are trained to write:
//
//	*** Begin Patch
//	*** Add File: path        (then every line starts with '+')
//	*** Delete File: path
//	*** Update File: path
//	*** Move to: newpath      (optional)
//	@@ optional enclosing line
//	 context
//	-removed
//	+added
//	*** End of File           (optional: the hunk ends at the end of the file)
//	*** End Patch
//
// This file turns the text into a patchDoc; apply_patch_match.go locates
// hunks in files and apply_patch.go applies the result.

const (
	beginPatch   = "*** Begin Patch"
	endPatch     = "*** End Patch"
	addHeader    = "*** Add File:"
	deleteHeader = "*** Delete File:"
	updateHeader = "*** Update File:"
	moveHeader   = "*** Move to:"
	endOfFile    = "*** End of File"
)

// OpKind is what a file section of a patch does.
type OpKind int

const (
	OpAdd OpKind = iota + 1
	OpDelete
	OpUpdate
)

// Doc is a parsed patch: its file operations in order.
type Doc struct {
	Ops []FileOp
}

// FileOp is one file section of a patch.
type FileOp struct {
	Kind   OpKind
	Path   string
	MoveTo string   // update only: the new path, "" when not moved
	Lines  []string // add only: the new file's lines, without '+'
	Hunks  []Hunk   // update only
	line   int      // 1-based line of the header within the patch
}

// hunkLine is one line of a hunk: ' ' context, '-' removed, '+' added.
type hunkLine struct {
	op   byte
	text string
}

// Hunk is one change inside an updated file.
type Hunk struct {
	header string // the text after "@@", naming an enclosing line; may be ""
	Lines  []hunkLine
	eof    bool // "*** End of File": the hunk ends at the end of the file
	line   int  // 1-based line of the hunk's start within the patch
}

// patchError is a malformed patch: what was expected at a line and what came.
type patchError struct {
	line     int
	expected string
	got      string // the offending line, quoted, or a description
}

func (e *patchError) Error() string {
	return fmt.Sprintf("line %d of the patch: expected %s, got %s", e.line, e.expected, e.got)
}

// heredocOpen matches a first line such as `apply_patch <<'EOF'`, which
// models copy from shell usage; group 2 is the terminator word.
var heredocOpen = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(?:apply_patch\s*)?<<-?\s*(['"]?)(\w+)(['"]?)$`) })

// unifiedRange matches a unified-diff range that some models put after
// "@@" ("-12,7 +12,8 @@"); it is dropped and what follows it kept.
var unifiedRange = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^-\d+(?:,\d+)? \+\d+(?:,\d+)? @@\s*`) })

// Parse parses patch text. It tolerates surrounding blank lines, a
// heredoc wrapper, CRLF line ends and blank context lines that lost their
// leading space. Errors are *patchError values naming the line.
func Parse(text string) (*Doc, error) {
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSuffix(l, "\r")
	}
	// Line numbers in errors count from the text as given.
	first, last := 0, len(lines)-1
	for first <= last && strings.TrimSpace(lines[first]) == "" {
		first++
	}
	for last >= first && strings.TrimSpace(lines[last]) == "" {
		last--
	}
	if first > last {
		return nil, &patchError{line: 1, expected: fmt.Sprintf("%q", beginPatch), got: "an empty patch"}
	}
	if m := heredocOpen().FindStringSubmatch(strings.TrimSpace(lines[first])); m != nil && m[1] == m[3] && first < last {
		if strings.TrimSpace(lines[last]) == m[2] {
			first++
			last--
			for first <= last && strings.TrimSpace(lines[first]) == "" {
				first++
			}
			for last >= first && strings.TrimSpace(lines[last]) == "" {
				last--
			}
		}
	}
	if first > last || strings.TrimSpace(lines[first]) != beginPatch {
		got := "nothing"
		if first <= last {
			got = fmt.Sprintf("%q", lines[first])
		}
		return nil, &patchError{line: first + 1, expected: fmt.Sprintf("%q as the first line", beginPatch), got: got}
	}
	if first == last || strings.TrimSpace(lines[last]) != endPatch {
		return nil, &patchError{line: last + 1, expected: fmt.Sprintf("%q as the last line", endPatch), got: fmt.Sprintf("%q", lines[last])}
	}
	p := &parser{Lines: lines, pos: first + 1, end: last}
	return p.parse()
}

// parser walks the lines between Begin Patch and End Patch.
type parser struct {
	Lines []string
	pos   int // index of the next line
	end   int // index of the End Patch line
}

func (p *parser) errorf(expected string) error {
	got := "the end of the patch"
	if p.pos < p.end {
		got = fmt.Sprintf("%q", p.Lines[p.pos])
	}
	return &patchError{line: p.pos + 1, expected: expected, got: got}
}

func (p *parser) parse() (*Doc, error) {
	doc := &Doc{}
	for p.pos < p.end {
		l := p.Lines[p.pos]
		if strings.TrimSpace(l) == "" {
			p.pos++
			continue
		}
		var (
			op  FileOp
			err error
		)
		switch l = unindent(l); {
		case strings.HasPrefix(l, addHeader):
			op, err = p.parseAdd()
		case strings.HasPrefix(l, deleteHeader):
			op, err = p.parseHeaderOnly(deleteHeader, OpDelete)
		case strings.HasPrefix(l, updateHeader):
			op, err = p.parseUpdate()
		default:
			return nil, p.errorf(fmt.Sprintf("a file header (%q, %q or %q followed by a path) or %q",
				addHeader, updateHeader, deleteHeader, endPatch))
		}
		if err != nil {
			return nil, err
		}
		doc.Ops = append(doc.Ops, op)
	}
	if len(doc.Ops) == 0 {
		return nil, p.errorf("at least one file operation before " + endPatch)
	}
	return doc, nil
}

// headerPath reads "<header><path>" at the current line and advances.
func (p *parser) headerPath(header string) (string, error) {
	path := strings.TrimSpace(strings.TrimPrefix(unindent(p.Lines[p.pos]), header))
	if path == "" {
		return "", p.errorf(fmt.Sprintf("a path after %q", header))
	}
	p.pos++
	return path, nil
}

func (p *parser) parseHeaderOnly(header string, kind OpKind) (FileOp, error) {
	op := FileOp{Kind: kind, line: p.pos + 1}
	path, err := p.headerPath(header)
	op.Path = path
	return op, err
}

// isFileHeader reports whether l starts a new file section.
// isHunkHeader accepts "@@", "@@ context" and the same padded with
// whitespace ("@@ ", "  @@", "\t@@ func f()"), as Codex does.
func isHunkHeader(l string) bool {
	t := strings.TrimLeft(l, " \t")
	return t == "@@" || strings.HasPrefix(t, "@@ ") || strings.HasPrefix(t, "@@\t") ||
		(strings.HasPrefix(l, "@@") && strings.TrimSpace(l[2:]) == "")
}

// unindent is l without its leading blanks: a file header may be indented
// ("  *** Update File: a.go"), as Codex's parser allows.
func unindent(l string) string { return strings.TrimLeft(l, " \t") }

func isFileHeader(l string) bool {
	return strings.HasPrefix(l, addHeader) || strings.HasPrefix(l, deleteHeader) || strings.HasPrefix(l, updateHeader)
}

func (p *parser) parseAdd() (FileOp, error) {
	op, err := p.parseHeaderOnly(addHeader, OpAdd)
	if err != nil {
		return op, err
	}
	blank := 0 // blank lines seen since the last '+' line
	for p.pos < p.end && !isFileHeader(unindent(p.Lines[p.pos])) {
		l := p.Lines[p.pos]
		switch {
		case strings.HasPrefix(l, "+"):
			for ; blank > 0; blank-- {
				op.Lines = append(op.Lines, "") // a blank line that lost its '+'
			}
			op.Lines = append(op.Lines, l[1:])
		case strings.TrimSpace(l) == "":
			blank++
		default:
			return op, p.errorf(fmt.Sprintf("a line starting with '+' (the content of added file %s) or a file header", op.Path))
		}
		p.pos++
	}
	return op, nil
}

func (p *parser) parseUpdate() (FileOp, error) {
	op, err := p.parseHeaderOnly(updateHeader, OpUpdate)
	if err != nil {
		return op, err
	}
	if p.pos < p.end && strings.HasPrefix(p.Lines[p.pos], moveHeader) {
		if op.MoveTo, err = p.headerPath(moveHeader); err != nil {
			return op, err
		}
	}
	for p.pos < p.end && !isFileHeader(p.Lines[p.pos]) {
		if strings.TrimSpace(p.Lines[p.pos]) == "" {
			p.pos++ // blank lines between hunks
			continue
		}
		h, err := p.parseHunk(len(op.Hunks) == 0)
		if err != nil {
			return op, err
		}
		op.Hunks = append(op.Hunks, h)
	}
	if len(op.Hunks) == 0 && op.MoveTo == "" {
		return op, p.errorf(fmt.Sprintf("a hunk starting with \"@@\" for updated file %s", op.Path))
	}
	return op, nil
}

// parseHunk reads one hunk. The first hunk of a file may omit its "@@"
// line, as Codex allows.
func (p *parser) parseHunk(first bool) (Hunk, error) {
	h := Hunk{line: p.pos + 1}
	l := p.Lines[p.pos]
	switch {
	case isHunkHeader(l):
		l = strings.TrimLeft(l, " \t")
		h.header = strings.TrimSpace(l[2:])
		for {
			loc := unifiedRange().FindStringIndex(h.header)
			if loc == nil {
				break
			}
			h.header = strings.TrimSpace(h.header[loc[1]:])
		}
		p.pos++
	case first && len(l) > 0 && (l[0] == ' ' || l[0] == '+' || l[0] == '-'):
	default:
		return h, p.errorf("a hunk starting with \"@@\" or a file header")
	}
	for p.pos < p.end {
		l := p.Lines[p.pos]
		if isHunkHeader(l) || isFileHeader(l) {
			break
		}
		if strings.TrimSpace(l) == endOfFile {
			h.eof = true
			p.pos++
			break
		}
		switch {
		case strings.TrimSpace(l) == "" && !strings.HasPrefix(l, " "):
			h.Lines = append(h.Lines, hunkLine{op: ' '}) // a blank context line that lost its space
		case l[0] == ' ' || l[0] == '-' || l[0] == '+':
			h.Lines = append(h.Lines, hunkLine{op: l[0], text: l[1:]})
		default:
			return h, p.errorf("a hunk line starting with ' ' (context), '-' (remove) or '+' (add), \"@@\" or a file header")
		}
		p.pos++
	}
	if len(h.Lines) == 0 {
		return h, &patchError{line: h.line, expected: "at least one ' ', '-' or '+' line in the hunk", got: fmt.Sprintf("none after %q", p.Lines[h.line-1])}
	}
	return h, nil
}

// render writes doc back as canonical patch text. Parsing the result gives
// doc again (line numbers aside); the fuzz test holds parsePatch to that.
func (doc *Doc) render() string {
	var b strings.Builder
	b.WriteString(beginPatch + "\n")
	for _, op := range doc.Ops {
		switch op.Kind {
		case OpAdd:
			b.WriteString(addHeader + " " + op.Path + "\n")
			for _, l := range op.Lines {
				b.WriteString("+" + l + "\n")
			}
		case OpDelete:
			b.WriteString(deleteHeader + " " + op.Path + "\n")
		case OpUpdate:
			b.WriteString(updateHeader + " " + op.Path + "\n")
			if op.MoveTo != "" {
				b.WriteString(moveHeader + " " + op.MoveTo + "\n")
			}
			for _, h := range op.Hunks {
				b.WriteString(strings.TrimSpace("@@ "+h.header) + "\n")
				for _, l := range h.Lines {
					b.WriteString(string(l.op) + l.text + "\n")
				}
				if h.eof {
					b.WriteString(endOfFile + "\n")
				}
			}
		}
	}
	b.WriteString(endPatch + "\n")
	return b.String()
}

// Paths lists the paths a patch's headers name, Move targets included:
// the parser's when the patch parses, else those a scan of the lines that
// start with a header finds.
func Paths(text string) []string {
	if doc, err := Parse(text); err == nil {
		var out []string
		for _, op := range doc.Ops {
			out = append(out, op.Path)
			if op.MoveTo != "" {
				out = append(out, op.MoveTo)
			}
		}
		return out
	}
	var out []string
	for l := range strings.SplitSeq(text, "\n") {
		l = strings.TrimSuffix(l, "\r")
		for _, h := range []string{addHeader, deleteHeader, updateHeader, moveHeader} {
			if strings.HasPrefix(l, h) {
				if path := strings.TrimSpace(l[len(h):]); path != "" {
					out = append(out, path)
				}
				break
			}
		}
	}
	return out
}
