package search

import (
	"bytes"
	"context"
	"fmt"
	"io"
)

// Line is one line of a file as content mode shows it.
type Line struct {
	No    int    // 1-based
	Text  string // without its line end (\n or \r\n), at most MaxLineBytes
	Match bool   // a selected line; false for a context line
	Long  bool   // Text was cut at MaxLineBytes
}

// MaxLineBytes bounds the text ReadLines keeps of one line; callers cut
// further for display.
const MaxLineBytes = 16 << 10

// ReadLines reads the lines numbered in matches (sorted, 1-based) from the
// file at path (absolute, inside t.Root, opened beneath it as a search's
// target is), each with up to before lines of context above and after
// lines below, in order. Reading stops after the last line needed.
func ReadLines(ctx context.Context, t Target, path string, matches []int, before, after int) ([]Line, error) {
	if len(matches) == 0 {
		return nil, nil
	}
	f, err := openFile(t, path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Line
	j := 0 // the first match whose window may still contain the next line
	err = eachLine(ctx, f, func(no int, text []byte) bool {
		for j < len(matches) && matches[j]+after < no {
			j++
		}
		if j == len(matches) {
			return false
		}
		if no < matches[j]-before {
			return true
		}
		l := Line{No: no, Match: matches[j] == no}
		text = bytes.TrimSuffix(text, []byte{'\r'})
		if len(text) > MaxLineBytes {
			text, l.Long = text[:MaxLineBytes], true
		}
		l.Text = string(text)
		out = append(out, l)
		return true
	})
	return out, err
}

// openFile opens the regular file path beneath t's root.
func openFile(t Target, path string) (*rawFile, error) {
	root, release, err := t.open()
	if err != nil {
		return nil, err
	}
	defer release()
	rel, err := t.rel(path)
	if err != nil {
		return nil, err
	}
	dir, pre, _, err := openStart(root, rel)
	if err != nil {
		return nil, err
	}
	if pre == nil {
		dir.close()
		return nil, fmt.Errorf("%s: %w", path, ErrNotRegular)
	}
	defer pre.close()
	return openEntry(Entry{Path: path, pre: pre}, true)
}

// eachLine calls fn with every line of r and its number until fn returns
// false. Lines longer than the buffer are passed whole.
func eachLine(ctx context.Context, r io.Reader, fn func(no int, text []byte) bool) error {
	buf := make([]byte, chunkSize)
	carry, no := 0, 1
	for {
		if carry == len(buf) {
			buf = append(buf, make([]byte, len(buf))...)
		}
		n, err := r.Read(buf[carry:])
		data := buf[:carry+n]
		start := 0
		for {
			i := bytes.IndexByte(data[start:], '\n')
			if i < 0 {
				break
			}
			if !fn(no, data[start:start+i]) {
				return nil
			}
			no++
			start += i + 1
		}
		if err != nil {
			if start < len(data) {
				fn(no, data[start:])
			}
			if err == io.EOF {
				return nil
			}
			return err
		}
		carry = copy(buf, data[start:])
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}

// MatchIndex returns the byte span of the first match in one line, or
// -1, -1 (a multiline match need not lie within one line).
func (p *Pattern) MatchIndex(line string) (int, int) {
	loc := p.re.FindStringIndex(line)
	if loc == nil {
		return -1, -1
	}
	return loc[0], loc[1]
}
