package shell

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

// The jobs note cuts a command on a character boundary: a multi-byte
// character straddling the cut is left out whole (as the cuts of package
// tools do, TestShortenedTextKeepsCharactersWhole).
func TestClipCommandKeepsCharactersWhole(t *testing.T) {
	t.Parallel()
	pad := func(at int) string {
		return strings.Repeat("a", at) + "日本語のテキスト" + strings.Repeat("b", 300)
	}
	for at := 79 - 4; at <= 79; at++ {
		t.Run(fmt.Sprint(at), func(t *testing.T) {
			got := clipCommand(pad(at))
			if !utf8.ValidString(got) || strings.ContainsRune(got, utf8.RuneError) {
				t.Fatalf("cut splits a character: %q", got)
			}
			if !strings.Contains(got, strings.Repeat("a", 30)) {
				t.Fatalf("cut lost the text: %q", got)
			}
			if strings.Contains(got, "b") {
				t.Fatalf("not cut: %q", got)
			}
		})
	}
	if got := clipCommand("go   test\n./..."); got != "go test ./..." {
		t.Errorf("a short command is kept (spaces folded): %q", got)
	}
	if got := clipCommand(pad(78)); len(strings.TrimSuffix(got, "…")) > 79 || !strings.HasSuffix(got, "…") {
		t.Errorf("long command: %q", got)
	}
}
