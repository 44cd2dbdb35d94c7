package tools

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// Content-mode output cut at the byte cap says which offset continues it,
// and that offset picks up at the first line not shown.
func TestGrepContentByteCapNamesOffset(t *testing.T) {
	t.Parallel()
	s := newTestSession(t)
	var b strings.Builder
	for i := 1; i <= 400; i++ {
		fmt.Fprintf(&b, "match %03d %s\n", i, strings.Repeat("x", 400))
	}
	writeFile(t, s, "big.txt", b.String())
	r := runTool(t, Grep(), s, `{"pattern": "match", "mode": "content", "limit": 400}`)
	if r.IsError {
		t.Fatal(r.Text)
	}
	m := regexp.MustCompile(`\[output cut at \d+ KB: use offset=(\d+) for the rest\]$`).FindStringSubmatch(r.Text)
	if m == nil {
		t.Fatalf("no offset note at the end: %q", r.Text[max(0, len(r.Text)-200):])
	}
	if len(r.Text) > 50*1024 {
		t.Errorf("%d bytes, over the tool's cap", len(r.Text))
	}
	next, _ := strconv.Atoi(m[1])
	shown := strings.Count(r.Text, "big.txt:")
	if next != shown {
		t.Errorf("offset %d after %d lines shown", next, shown)
	}
	r2 := runTool(t, Grep(), s, fmt.Sprintf(`{"pattern": "match", "mode": "content", "limit": 400, "offset": %d}`, next))
	if want := fmt.Sprintf("big.txt:%d: match %03d ", next+1, next+1); !strings.HasPrefix(r2.Text, want) {
		t.Errorf("offset %d starts %q, want %q", next, r2.Text[:min(len(r2.Text), 60)], want)
	}
}
