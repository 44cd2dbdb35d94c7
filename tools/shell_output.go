package tools

import "fmt"

// capBuffer keeps a command's output within a byte cap: the first 60 % of
// the cap and the last 40 %, since build and test output puts its verdict
// at the end. The executor's head-and-tail truncation then cuts the kept
// text down to what the model sees.
type capBuffer struct {
	head    []byte
	headCap int
	tail    []byte // the latest bytes; trimmed to tailCap when read
	tailCap int
	total   int64
}

func newCapBuffer(limit int) *capBuffer {
	h := limit * 6 / 10
	return &capBuffer{headCap: h, tailCap: limit - h}
}

// Write appends p; it never fails.
func (b *capBuffer) Write(p []byte) {
	b.total += int64(len(p))
	if room := b.headCap - len(b.head); room > 0 {
		n := min(room, len(p))
		b.head = append(b.head, p[:n]...)
		p = p[n:]
	}
	if len(p) == 0 {
		return
	}
	b.tail = append(b.tail, p...)
	if len(b.tail) > 2*b.tailCap {
		// Amortized: copy down only when the slack reaches tailCap.
		b.tail = append(b.tail[:0], b.tail[len(b.tail)-b.tailCap:]...)
	}
}

// String returns the kept output, with a marker where bytes were dropped.
func (b *capBuffer) String() string {
	tail := b.tail
	if len(tail) > b.tailCap {
		tail = tail[len(tail)-b.tailCap:]
	}
	dropped := b.total - int64(len(b.head)) - int64(len(tail))
	if dropped == 0 {
		return string(b.head) + string(tail)
	}
	return fmt.Sprintf("%s\n[... %d bytes of output dropped: the command wrote %d bytes, more than the %d bytes kept ...]\n%s",
		b.head, dropped, b.total, b.headCap+b.tailCap, tail)
}
