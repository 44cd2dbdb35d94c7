package shell

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/troupe-ai/troupe/internal/redact"
	"github.com/troupe-ai/troupe/tools"
)

// A tool result that holds a configured secret (a shell cat of a file with
// the API key, or a long output cut and spilled) reaches nothing with the
// secret in it: not the result, not the cache, not the spill file.
func TestExecutorRedactsSecrets(t *testing.T) {
	const key = "sk-live-0123456789abcdef"
	s := newTestSession(t)
	s.Redact = redact.New(key).String
	writeFile(t, s, ".env", "OPENAI_API_KEY="+key+"\n")
	writeFile(t, s, "big.txt", strings.Repeat("line with "+key+" in it\n", 5000))
	reg, err := tools.BuildRegistry(tools.ReadFile(), Shell())
	if err != nil {
		t.Fatal(err)
	}
	ex := &tools.Executor{Tools: reg, Session: s}
	res := ex.Run(t.Context(), calls("shell", `{"command":"cat .env"}`, "read_file", `{"path":".env"}`,
		"shell", `{"command":"cat big.txt"}`))
	for i, r := range res {
		if strings.Contains(r.Text, key) {
			t.Errorf("result %d holds the key:\n%s", i, r.Text)
		}
		if !strings.Contains(r.Text, redact.Mask) {
			t.Errorf("result %d lacks the mask:\n%s", i, r.Text)
		}
	}
	if !res[2].Truncated || res[2].SpillPath == "" {
		t.Fatalf("the long output was not spilled: %+v", res[2])
	}
	spilled, err := os.ReadFile(filepath.Join(s.Workspace.Root(), res[2].SpillPath))
	if err != nil {
		spilled, err = os.ReadFile(res[2].SpillPath)
	}
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(spilled), key) || !strings.Contains(string(spilled), redact.Mask) {
		t.Error("the spill file holds the key")
	}
	// A cached read answers with the redacted text too.
	ex.Run(t.Context(), calls("read_file", `{"path":".env"}`))
	again := ex.Run(t.Context(), calls("read_file", `{"path":".env"}`))
	if !again[0].Cached || strings.Contains(again[0].Text, key) {
		t.Errorf("cached read: cached=%v %q", again[0].Cached, again[0].Text)
	}
}
