package search

import (
	"bytes"
	"io"
)

// scanWhole is the multiline search: the file is read whole and the
// pattern runs over all of it, so a match may span lines. Every line a
// match touches is a matching line; count mode counts matches, joining
// those that share a line, as ripgrep does.
func (s *scanner) scanWhole(r io.Reader) error {
	data, err := s.readAll(r)
	if err != nil {
		return err
	}
	if s.f != nil {
		s.f.reset(data)
		if s.f.next(0) < 0 {
			return nil // no required literal anywhere: no match
		}
	}
	total := bytes.Count(data, newline)
	if len(data) > 0 && data[len(data)-1] != '\n' {
		total++
	}
	var covered []int // ModeLines or invert: every matching line, in order
	lineAt := lineCounter(data)
	lastLine := 0
	for _, loc := range s.p.re.FindAllIndex(data, -1) {
		if loc[0] == len(data) && len(data) > 0 && data[len(data)-1] == '\n' {
			break // the empty position after the final line end is no line
		}
		first := lineAt(loc[0])
		last := first
		if loc[1] > loc[0] {
			last = lineAt(loc[1] - 1)
		}
		if first > lastLine {
			s.count++ // a new block; one sharing a line with the last joins it
		}
		for no := max(first, lastLine+1); no <= last; no++ {
			covered = append(covered, no)
		}
		lastLine = max(lastLine, last)
		if s.mode == ModeFiles && !s.invert {
			s.count = 1
			return nil
		}
		if s.stopped.Load() {
			return errStopped
		}
	}
	if s.invert {
		covered = complement(covered, total)
		s.count = len(covered)
	}
	if s.mode == ModeFiles && s.count > 0 {
		s.count = 1
	}
	s.nline = len(covered)
	s.lines = append(s.lines, covered[:min(len(covered), s.keep)]...)
	return nil
}

// readAll reads r into the scanner's buffer, refusing binary content.
func (s *scanner) readAll(r io.Reader) ([]byte, error) {
	n := 0
	for {
		if n == len(s.buf) {
			s.buf = append(s.buf, make([]byte, len(s.buf))...)
		}
		m, err := r.Read(s.buf[n:])
		if m > 0 && bytes.IndexByte(s.buf[n:n+m], 0) >= 0 {
			return nil, errBinary
		}
		n += m
		if err == io.EOF {
			return s.buf[:n], nil
		}
		if err != nil {
			return nil, err
		}
		if s.stopped.Load() {
			return nil, errStopped
		}
	}
}

// lineCounter returns a function giving the 1-based line of a byte
// offset; offsets must not decrease between calls.
func lineCounter(data []byte) func(off int) int {
	at, line := 0, 1
	return func(off int) int {
		if off > at {
			line += bytes.Count(data[at:off], newline)
			at = off
		}
		return line
	}
}

// complement returns the lines 1..total not in sorted.
func complement(sorted []int, total int) []int {
	out := make([]int, 0, total-len(sorted))
	j := 0
	for no := 1; no <= total; no++ {
		if j < len(sorted) && sorted[j] == no {
			j++
			continue
		}
		out = append(out, no)
	}
	return out
}
