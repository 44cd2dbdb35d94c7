package actors

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCapText(t *testing.T) {
	t.Parallel()
	if capText("short", 10) != "short" {
		t.Error("short text changed")
	}
	long := strings.Repeat("é", 3000) // 6000 bytes
	got := capText(long, 4000)
	head, notice, ok := strings.Cut(got, "\n[result truncated: ")
	if !ok || len(head) > 4000 || !utf8.ValidString(head) || !strings.Contains(notice, "of 6000 chars") {
		t.Errorf("capped: %d bytes, notice %q", len(head), notice)
	}
}

func TestFindingsOf(t *testing.T) {
	t.Parallel()
	text := "ApplyDiscount is at discount.go:4, called from cart.go:22 and again cart.go:22; see internal/api/api.go:10."
	got := findingsOf(KindExplore, text)
	want := []string{"discount.go:4", "cart.go:22", "internal/api/api.go:10"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("findings %v, want %v", got, want)
	}
	if findingsOf(KindWorker, text) != nil {
		t.Error("findings extracted for a worker")
	}
}
