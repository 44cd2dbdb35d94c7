package tools

import (
	"bufio"
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

//go:embed read_file.md
var readFileDoc string

const (
	// readFileDefaultLimit is how many lines read_file shows by default.
	readFileDefaultLimit = 2000
	// readFileMaxLineChars is where read_file cuts a long line.
	readFileMaxLineChars = 500
	// binarySniffBytes is how much of a file decides whether it is binary.
	binarySniffBytes = 8192
	// maxTrackedFileBytes bounds the files whose content read_file keeps to
	// register the read (the tracker hashes the whole content); larger
	// files are streamed and shown but cannot be edited with our tools.
	maxTrackedFileBytes = 64 << 20
)

// readSpan is one inclusive range of lines in a read_file call.
type readSpan struct {
	Start, End int
}

// ReadFileParams are read_file's arguments.
type ReadFileParams struct {
	Path      string  `json:"path" jsonschema:"file path, relative to the workspace root"`
	Offset    int     `json:"offset,omitempty" jsonschema:"first line to read, 1-based (default 1)"`
	Limit     int     `json:"limit,omitempty" jsonschema:"maximum number of lines to show (default 2000)"`
	StartLine int     `json:"start_line,omitempty" jsonschema:"another name for offset"`
	EndLine   int     `json:"end_line,omitempty" jsonschema:"last line to read, inclusive (instead of limit)"`
	Ranges    [][]int `json:"ranges,omitempty" jsonschema:"several line ranges [start, end] to read in one call, e.g. [[10,40],[200,230]]; overlapping or adjacent ranges are merged"`

	spans []readSpan // ranges, checked (normalize)
}

// TouchedPaths names the file read.
func (p ReadFileParams) TouchedPaths() []string { return []string{p.Path} }

// ReadFile returns the read_file tool.
func ReadFile() Tool {
	return New(Spec{
		Guidance: []GuidanceLine{Line(SectionWhichTool, 40, "Read file contents with read_file; use offset/limit or ranges for the part you need.")},
		Name:     NameReadFile, Truncation: Head(100 * 1024), Description: readFileDoc, ReadOnly: true, Cacheable: true,
		Parallel: ParallelSafe, Tier: TierAlways}, runReadFile,
		Minimum("offset", 1), Minimum("limit", 1), Minimum("start_line", 1), Minimum("end_line", 1), readRangesSchema)
}

func runReadFile(ctx context.Context, s *Session, p ReadFileParams) (Result, error) {
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	if res, ok := p.normalize(); !ok {
		return res, nil
	}
	if IsArtifact(p.Path) {
		local, err := s.localArtifact(ctx, p.Path)
		if err != nil {
			return Errorf("%v", err), nil
		}
		p.Path = local
	}
	abs, err := s.Workspace.Resolve(p.Path)
	if err != nil {
		return Errorf("%v", err), nil
	}
	display := s.Workspace.Display(abs)
	f, fi, err := s.Workspace.open(abs)
	if err != nil {
		var special *notRegularError
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return fileNotFound(s, abs, display), nil
		case errors.As(err, &special):
			return Errorf("%v; read_file reads regular files only", special), nil
		}
		return Errorf("cannot read %s: %v", display, err), nil
	}
	defer f.Close()
	if fi.IsDir() {
		return Errorf("%s is a directory, not a file; use list_dir to see what it contains", display), nil
	}
	if !fi.Mode().IsRegular() {
		return Errorf("%v; read_file reads regular files only", &notRegularError{path: display, mode: fi.Mode()}), nil
	}
	ranges, res, ok := readRanges(p)
	if !ok {
		return res, nil
	}
	limit := p.Limit
	if limit == 0 {
		limit = readFileDefaultLimit
	}
	keep := &keepBuffer{max: maxTrackedFileBytes, over: fi.Size() > maxTrackedFileBytes}
	if !keep.over {
		keep.buf = make([]byte, 0, fi.Size())
	}
	r := bufio.NewReaderSize(io.TeeReader(f, keep), 64*1024)
	sniff, _ := r.Peek(binarySniffBytes)
	if looksBinary(sniff) {
		n, err := io.Copy(io.Discard, r)
		if err != nil {
			return Errorf("cannot read %s: %v", display, err), nil
		}
		if !keep.over {
			s.Reads.Record(abs, keep.buf)
		}
		return Text(fmt.Sprintf("Binary file %s (%d bytes, %s); not shown", display, n, detectType(sniff))).
			WithMeta("path", display).WithMeta("binary", true), nil
	}
	w := readWindow{ranges: ranges, limit: limit}
	if err := w.scan(ctx, r); err != nil {
		if ctx.Err() != nil {
			return Result{}, ctx.Err()
		}
		return Errorf("cannot read %s: %v", display, err), nil
	}
	if !keep.over {
		s.Reads.Record(abs, keep.buf)
	}
	return w.result(p, display), nil
}

// readRanges turns offset/limit or ranges into sorted, merged, 1-based
// inclusive ranges; ok is false with an error result on bad input.
func readRanges(p ReadFileParams) ([]readSpan, Result, bool) {
	if len(p.spans) == 0 {
		off := max(p.Offset, 1)
		limit := p.Limit
		if limit == 0 {
			limit = readFileDefaultLimit
		}
		return []readSpan{{Start: off, End: off + limit - 1}}, Result{}, true
	}
	spans := append([]readSpan(nil), p.spans...)
	for i, sp := range spans {
		if sp.Start < 1 || sp.End < sp.Start {
			return nil, Errorf("ranges[%d]: start must be at least 1 and end at least start, got [%d, %d]", i, sp.Start, sp.End), false
		}
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i].Start < spans[j].Start })
	merged := spans[:1]
	for _, sp := range spans[1:] {
		last := &merged[len(merged)-1]
		if sp.Start <= last.End+1 {
			last.End = max(last.End, sp.End)
			continue
		}
		merged = append(merged, sp)
	}
	return merged, Result{}, true
}

// readWindow walks a file's lines once, formatting those inside its
// ranges (up to limit lines) and counting all of them.
type readWindow struct {
	ranges []readSpan
	limit  int

	out      strings.Builder
	total    int    // lines in the file
	shown    int    // lines formatted
	lastShow int    // number of the last line formatted (0: none)
	next     int    // first line in the ranges left unshown because of limit (0: none)
	num      []byte // scratch for a line's "L{n}: " prefix
}

func (w *readWindow) scan(ctx context.Context, r *bufio.Reader) error {
	ri := 0
	var line []byte
	pending := false // bytes of an unfinished line were read
	for {
		chunk, err := r.ReadSlice('\n')
		if len(chunk) == 0 && err == io.EOF && pending {
			// The last line ended exactly at a buffer boundary, without a
			// line end: it still is a line.
			lineNo := w.total + 1
			for ri < len(w.ranges) && w.ranges[ri].End < lineNo {
				ri++
			}
			w.total = lineNo
			if ri < len(w.ranges) && w.ranges[ri].Start <= lineNo {
				w.emit(lineNo, line)
			}
			return nil
		}
		if len(chunk) > 0 {
			pending = chunk[len(chunk)-1] != '\n' && err != io.EOF
			complete := chunk[len(chunk)-1] == '\n'
			lineNo := w.total + 1
			for ri < len(w.ranges) && w.ranges[ri].End < lineNo {
				ri++
			}
			if ri < len(w.ranges) && w.ranges[ri].Start <= lineNo {
				if cap := 4*readFileMaxLineChars + 8; len(line) < cap {
					line = append(line, chunk[:min(len(chunk), cap-len(line))]...)
				}
			}
			if complete || err == io.EOF {
				w.total = lineNo
				if ri < len(w.ranges) && w.ranges[ri].Start <= lineNo {
					w.emit(lineNo, line)
				}
				line = line[:0]
				if lineNo%8192 == 0 {
					if cerr := ctx.Err(); cerr != nil {
						return cerr
					}
				}
			}
		}
		switch {
		case err == nil, errors.Is(err, bufio.ErrBufferFull):
			continue
		case err == io.EOF:
			return nil
		default:
			return err
		}
	}
}

// emit formats line n (its raw bytes, possibly cut short) if the limit
// allows; otherwise it remembers n as where to continue.
func (w *readWindow) emit(n int, raw []byte) {
	if w.shown >= w.limit {
		if w.next == 0 {
			w.next = n
		}
		return
	}
	if w.lastShow != 0 && n != w.lastShow+1 {
		w.out.WriteString("...\n")
	}
	raw = trimEOL(raw)
	if !utf8.Valid(raw) {
		raw = bytes.ToValidUTF8(raw, []byte("\uFFFD"))
	}
	cut := false
	if utf8.RuneCount(raw) > readFileMaxLineChars {
		i := 0
		for range readFileMaxLineChars {
			_, size := utf8.DecodeRune(raw[i:])
			i += size
		}
		raw, cut = raw[:i], true
	}
	w.num = append(strconv.AppendInt(append(w.num[:0], 'L'), int64(n), 10), ':', ' ')
	w.out.Write(w.num)
	w.out.Write(raw)
	if cut {
		fmt.Fprintf(&w.out, "... [line truncated at %d chars]", readFileMaxLineChars)
	}
	w.out.WriteByte('\n')
	w.shown++
	w.lastShow = n
}

func trimEOL(b []byte) []byte {
	if n := len(b); n > 0 && b[n-1] == '\n' {
		b = b[:n-1]
	}
	if n := len(b); n > 0 && b[n-1] == '\r' {
		b = b[:n-1]
	}
	return b
}

// result renders the scanned window, or an error when the requested lines
// lie past the end of the file.
func (w *readWindow) result(p ReadFileParams, display string) Result {
	if w.total == 0 {
		return Text(fmt.Sprintf("(empty file: %s)", display)).WithMeta("path", display).WithMeta("total_lines", 0)
	}
	if len(p.spans) == 0 && w.ranges[0].Start > w.total {
		return Errorf("offset %d is past the end of %s, which has %d lines; use an offset from 1 to %d",
			w.ranges[0].Start, display, w.total, w.total)
	}
	for i, sp := range p.spans {
		if sp.Start > w.total {
			return Errorf("ranges[%d] starts at line %d, past the end of %s, which has %d lines",
				i, sp.Start, display, w.total)
		}
	}
	if w.next == 0 && len(p.spans) == 0 && w.lastShow < w.total {
		w.next = w.lastShow + 1
	}
	if w.next != 0 {
		fmt.Fprintf(&w.out, "[truncated: %d total lines in file; use offset=%d to continue]\n", w.total, w.next)
	}
	text := strings.TrimSuffix(w.out.String(), "\n")
	return Text(text).WithMeta("path", display).WithMeta("total_lines", w.total).
		WithMeta("shown_lines", w.shown).WithMeta("truncated", w.next != 0)
}

// keepBuffer keeps what is written to it up to max bytes; past that it
// drops its content and reports over.
type keepBuffer struct {
	buf  []byte
	max  int
	over bool
}

func (k *keepBuffer) Write(p []byte) (int, error) {
	if k.over {
		return len(p), nil
	}
	if len(k.buf)+len(p) > k.max {
		k.buf, k.over = nil, true
		return len(p), nil
	}
	k.buf = append(k.buf, p...)
	return len(p), nil
}
