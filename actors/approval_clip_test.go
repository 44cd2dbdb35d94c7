package actors_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/messages"
)

// The terminal prompt shows long arguments cut on a character boundary:
// a multi-byte character at the cut is left out whole.
func TestTerminalApprovalCutsArgsOnACharacter(t *testing.T) {
	t.Parallel()
	for at := 396; at <= 400; at++ {
		t.Run(fmt.Sprint(at), func(t *testing.T) {
			t.Parallel()
			// `{"command":"` is 12 bytes: "日" starts at byte at of the args.
			args, _ := json.Marshal(map[string]string{"command": strings.Repeat("a", at-12) + "日本語" + strings.Repeat("b", 200)})
			var out strings.Builder
			ap := &actors.TerminalApprover{In: strings.NewReader("y\n"), Out: &out}
			ok, err := ap.Approve(t.Context(), messages.AskRequest{V: messages.ProtocolVersion, ID: "q", Run: "r", Agent: "worker-1",
				Kind: "worker", Tool: "shell", Args: args, Question: "run it?"})
			if err != nil || !ok {
				t.Fatalf("approve: %v %v", ok, err)
			}
			got := out.String()
			if !utf8.ValidString(got) || !strings.Contains(got, "aaaa") || strings.Contains(got, "bbb") || !strings.Contains(got, "…") {
				t.Fatalf("prompt %q", got)
			}
		})
	}
}
