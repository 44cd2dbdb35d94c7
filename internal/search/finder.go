package search

import (
	"bytes"
	"strings"
)

// finder finds candidate positions of a pattern in a buffer: every match
// contains a position it returns. A finder keeps state for the buffer it
// was reset on and must be asked for increasing positions; it belongs to
// one goroutine.
type finder interface {
	reset(data []byte)
	// next returns a candidate position >= from, or -1 when none is left.
	next(from int) int
	// sure reports whether the last position next returned starts an
	// occurrence of the literal itself (not merely a candidate).
	sure() bool
}

// newFinder returns a finder for a literal set, or nil for none.
func newFinder(lits []literal) finder {
	switch len(lits) {
	case 0:
		return nil
	case 1:
		return literalFinder(lits[0])
	}
	m := &multiFinder{subs: make([]finder, len(lits)), pos: make([]int, len(lits)), sur: make([]bool, len(lits))}
	for i, l := range lits {
		m.subs[i] = literalFinder(l)
	}
	return m
}

func literalFinder(l literal) finder {
	if !l.fold {
		return newExactFinder(l.text)
	}
	k := anchorIndex(l.text)
	if k < 0 {
		k = 0
	}
	c := l.text[k]
	return &foldFinder{lit: []byte(l.text), k: k, lo: c, up: upper(c), wide: l.unicodeFold}
}

// exactFinder finds a byte string. Like ripgrep, it scans for the
// literal's rarest byte with IndexByte (vectorized) and compares the rest
// around each hit; when hits turn out mostly false (a rare byte that is
// common in this buffer), it hands the rest of the buffer to bytes.Index.
type exactFinder struct {
	lit  []byte
	k    int  // index of the anchor byte in lit
	c    byte // the anchor byte
	data []byte
}

func newExactFinder(lit string) *exactFinder {
	k := rarestByte(lit)
	return &exactFinder{lit: []byte(lit), k: k, c: lit[k]}
}

func (f *exactFinder) reset(data []byte) { f.data = data }

func (f *exactFinder) sure() bool { return true }

func (f *exactFinder) next(from int) int {
	n := len(f.lit)
	last := len(f.data) - (n - f.k) // the last place the anchor can be
	fails := 0
	for at := from + f.k; at <= last; {
		j := bytes.IndexByte(f.data[at:last+1], f.c)
		if j < 0 {
			return -1
		}
		start := at + j - f.k
		if bytes.Equal(f.data[start:start+n], f.lit) {
			return start
		}
		at += j + 1
		if fails++; fails > 8 && fails > (at-from)>>6 {
			// more than one false hit per 64 bytes: the anchor is common here
			if i := bytes.Index(f.data[start+1:], f.lit); i >= 0 {
				return start + 1 + i
			}
			return -1
		}
	}
	return -1
}

// foldFinder finds an ASCII string regardless of case. It scans for one
// anchor byte (the rarest of the literal, in both cases, with IndexByte)
// and compares the rest around each hit. A literal holding k or s can also
// match through the Kelvin sign or the long s; for such a literal (wide)
// an anchor hit that fails the ASCII comparison but has non-ASCII bytes
// nearby is returned as an unsure candidate.
type foldFinder struct {
	lit    []byte // lower case
	k      int    // index of the anchor byte in lit
	lo, up byte   // the anchor in both cases (equal for a non-letter)
	wide   bool

	data     []byte
	nlo, nup int // next known position of each anchor case; -2 unknown, -1 none
	isSure   bool
}

func (f *foldFinder) reset(data []byte) { f.data, f.nlo, f.nup = data, -2, -2 }

func (f *foldFinder) sure() bool { return f.isSure }

func (f *foldFinder) next(from int) int {
	n, data := len(f.lit), f.data
	for at := from + f.k; at <= len(data); {
		// The first anchor at or after at, in either case: each case's
		// next position is kept (-2 unknown, -1 none), so a scan stays
		// linear; one loop with no calls but IndexByte's, as it runs once
		// per anchor hit and a common anchor hits often.
		if f.nlo != -1 && f.nlo < at {
			f.nlo = indexFrom(data, at, f.lo)
		}
		p := f.nlo
		if f.up != f.lo {
			if f.nup != -1 && f.nup < at {
				f.nup = indexFrom(data, at, f.up)
			}
			if p < 0 || (f.nup >= 0 && f.nup < p) {
				p = f.nup
			}
		}
		if p < 0 {
			return -1
		}
		start := p - f.k
		if start+n <= len(data) && equalFoldASCII(data[start:start+n], f.lit) {
			f.isSure = true
			return start
		}
		if f.wide && nonASCIINear(data, p, 3*n) {
			f.isSure = false
			return p
		}
		at = p + 1
	}
	return -1
}

// indexFrom is the first position of c at or after at, or -1.
func indexFrom(data []byte, at int, c byte) int {
	if i := bytes.IndexByte(data[at:], c); i >= 0 {
		return at + i
	}
	return -1
}

// multiFinder finds the first of several literals, remembering where each
// was last seen so a scan stays linear.
type multiFinder struct {
	subs []finder
	pos  []int  // -2 unknown, -1 none
	sur  []bool // sure() of each sub's position
	last int    // the sub that gave the last position
}

func (m *multiFinder) sure() bool { return m.sur[m.last] }

func (m *multiFinder) reset(data []byte) {
	for i, s := range m.subs {
		s.reset(data)
		m.pos[i] = -2
	}
}

func (m *multiFinder) next(from int) int {
	best := -1
	for i, s := range m.subs {
		if m.pos[i] == -2 || (m.pos[i] >= 0 && m.pos[i] < from) {
			m.pos[i] = s.next(from)
			m.sur[i] = s.sure()
		}
		if p := m.pos[i]; p >= 0 && (best < 0 || p < best) {
			best, m.last = p, i
		}
	}
	return best
}

// nonASCIINear reports whether data holds a byte >= 0x80 within d bytes
// of p.
func nonASCIINear(data []byte, p, d int) bool {
	for _, c := range data[max(0, p-d):min(len(data), p+d+1)] {
		if c >= 0x80 {
			return true
		}
	}
	return false
}

func equalFoldASCII(b, lower []byte) bool {
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}

func upper(c byte) byte {
	if 'a' <= c && c <= 'z' {
		return c - ('a' - 'A')
	}
	return c
}

// byteRank orders bytes from rare to common in source code (measured on
// Go's own source, letters folded); the anchor of a case-insensitive
// literal is its rarest byte. Bytes not listed, non-ASCII ones among them,
// count as rarest.
const byteRank = "@~$?^#`>|j<'%&;+!zq\\*-7][958364kw:2v_}{1y\"=bg/h)(m.xu0p,fdlco\nasi\tnrte "

// exactRank orders bytes from rare to common in source code, case kept
// (measured on Go's own source: 'O' is rarer than 'y', 'S' than 'b');
// the anchor of an exact literal is its rarest byte. Bytes not listed,
// non-ASCII ones among them, count as rarest.
const exactRank = "~@?$^#JZ`Qj>'qK|;Y%<z+W&!H-G*U][VBX7LNFMw9kD5POCIR8\\vA6EyT3}{4S_bh=\"2gm:)(/1.pdufclx,osia\nnr0\tte "

// rarestByte returns the index of the rarest byte of lit (exactRank).
func rarestByte(lit string) int {
	best, bestRank := 0, 1<<30
	for i := 0; i < len(lit); i++ {
		if rank := strings.IndexByte(exactRank, lit[i]); rank < bestRank {
			best, bestRank = i, rank
		}
	}
	return best
}

// anchorIndex picks the anchor of a lower-case literal: its rarest byte,
// never k or s (their case folding reaches beyond ASCII). -1 if the
// literal has no other byte.
func anchorIndex(lit string) int {
	best, bestRank := -1, 1<<30
	for i := 0; i < len(lit); i++ {
		c := lit[i]
		if c == 'k' || c == 's' {
			continue
		}
		rank := strings.IndexByte(byteRank, c) // -1 (rarest) for unlisted
		if rank < bestRank {
			best, bestRank = i, rank
		}
	}
	return best
}
