package search

import (
	"bytes"
	"errors"
	"io"
	"sync/atomic"
)

// Mode is what a grep collects for each file.
type Mode int

const (
	// ModeFiles asks only whether a file matches; reading stops at the
	// first matching line.
	ModeFiles Mode = iota
	// ModeCount counts matching lines (in multiline mode, matches).
	ModeCount
	// ModeLines also records the numbers of the matching lines.
	ModeLines
)

// chunkSize is the read size. A NUL byte anywhere in a chunk marks the
// file as binary before that chunk is searched, as ripgrep does with its
// buffer of the same size.
const chunkSize = 64 << 10

var (
	errBinary  = errors.New("binary file")
	errStopped = errors.New("search cancelled")
)

// scanner is one goroutine's search state: a pattern's finder and a read
// buffer, reused from file to file.
type scanner struct {
	p       *Pattern
	f       finder
	stopped *atomic.Bool // set when the search is cancelled
	buf     []byte
	mode    Mode
	invert  bool
	keep    int // ModeLines: line numbers kept per file

	// per file
	count int   // matching lines, or match blocks in multiline mode
	lines []int // ModeLines: the first keep matching line numbers
	nline int   // ModeLines: matching lines in all
	stop  bool
}

func newScanner(p *Pattern, mode Mode, invert bool, keep int, stopped *atomic.Bool) *scanner {
	return &scanner{p: p, f: newFinder(p.lits), buf: make([]byte, chunkSize), mode: mode,
		invert: invert, keep: keep, stopped: stopped}
}

func (s *scanner) resetFile() {
	s.count, s.nline, s.stop = 0, 0, false
	s.lines = s.lines[:0]
}

// scan reads r and records its matches. It returns errBinary when r holds
// a NUL byte before a files-mode search found its match.
func (s *scanner) scan(r io.Reader) error {
	s.resetFile()
	if s.p.multiline {
		return s.scanWhole(r)
	}
	carry, line := 0, 1
	for !s.stop {
		if carry == len(s.buf) {
			s.buf = append(s.buf, make([]byte, len(s.buf))...) // a line longer than the buffer
		}
		n, err := r.Read(s.buf[carry:])
		if n > 0 && bytes.IndexByte(s.buf[carry:carry+n], 0) >= 0 {
			return errBinary
		}
		data := s.buf[:carry+n]
		eof := err != nil
		end := len(data)
		if !eof { // the carried part holds no newline: look in what was read
			if i := lastNewline(data[carry:]); i >= 0 {
				end = carry + i + 1
			} else {
				end = 0
			}
		}
		if end > 0 {
			region := data[:end]
			if region[end-1] == '\n' {
				region = region[:end-1]
			}
			s.region(region, line)
			if s.mode == ModeLines {
				line += bytes.Count(data[:end], newline)
			}
		}
		carry = copy(s.buf, data[end:])
		if eof {
			if err == io.EOF {
				return nil
			}
			return err
		}
		if s.stopped.Load() {
			return errStopped
		}
	}
	return nil
}

var newline = []byte{'\n'}

// region searches complete lines (data holds no final line end), the
// first numbered first.
func (s *scanner) region(data []byte, first int) {
	if s.invert {
		s.regionInverted(data, first)
		return
	}
	lineNo, counted := first, 0
	s.eachMatch(data, func(ls, le int) bool {
		s.count++
		if s.mode == ModeFiles {
			s.stop = true
			return false
		}
		if s.mode == ModeLines {
			s.nline++
			if len(s.lines) < s.keep {
				lineNo += bytes.Count(data[counted:ls], newline)
				counted = ls
				s.lines = append(s.lines, lineNo)
			}
		}
		return true
	})
}

// regionInverted records the lines that do not match.
func (s *scanner) regionInverted(data []byte, first int) {
	next, nextNo := 0, first // the first line not yet accounted for
	gap := func(to, toNo int) {
		// lines nextNo..toNo-1, starting at byte next, do not match
		n := toNo - nextNo
		s.count += n
		if s.mode == ModeLines {
			s.nline += n
			for no := nextNo; no < toNo && len(s.lines) < s.keep; no++ {
				s.lines = append(s.lines, no)
			}
		}
	}
	s.eachMatch(data, func(ls, le int) bool {
		lsNo := nextNo + bytes.Count(data[next:ls], newline)
		gap(ls, lsNo)
		next, nextNo = le+1, lsNo+1
		return true
	})
	if next <= len(data) {
		gap(len(data), nextNo+bytes.Count(data[next:], newline)+1)
	}
	if s.mode == ModeFiles && s.count > 0 {
		s.count, s.stop = 1, true
	}
}

// eachMatch calls emit with the bounds of each matching line of data, in
// order, until emit returns false.
func (s *scanner) eachMatch(data []byte, emit func(ls, le int) bool) {
	if s.f != nil {
		s.f.reset(data)
	}
	for pos := 0; pos <= len(data); {
		var ls, le int
		if s.f != nil {
			c := s.f.next(pos)
			if c < 0 {
				return
			}
			ls = bytes.LastIndexByte(data[pos:c], '\n') + 1 + pos
			le = lineEnd(data, c)
			if !(s.p.pure && s.f.sure()) && !s.p.re.Match(data[ls:le]) {
				pos = le + 1
				continue
			}
		} else {
			loc := s.p.re.FindIndex(data[pos:])
			if loc == nil {
				return
			}
			ls = bytes.LastIndexByte(data[pos:pos+loc[0]], '\n') + 1 + pos
			le = lineEnd(data, pos+loc[0])
		}
		if !emit(ls, le) {
			return
		}
		pos = le + 1
	}
}

func lineEnd(data []byte, from int) int {
	if i := bytes.IndexByte(data[from:], '\n'); i >= 0 {
		return from + i
	}
	return len(data)
}

// lastNewline is bytes.LastIndexByte(b, '\n'), without its cost on long
// lines: Go's LastIndexByte is a byte-at-a-time loop (no assembly), so
// the backward scan runs only over a window that the vectorised forward
// search (IndexByte) has found to hold a newline; windows grow as they
// come up empty, for a file of one long line (minified or generated).
func lastNewline(b []byte) int {
	window := 256
	for end := len(b); end > 0; window *= 2 {
		start := max(end-window, 0)
		if bytes.IndexByte(b[start:end], '\n') >= 0 {
			return start + bytes.LastIndexByte(b[start:end], '\n')
		}
		end = start
	}
	return -1
}
