package tools

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/troupe-ai/troupe/internal/redact"
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
	reg, err := BuildRegistry(ReadFile(), Shell())
	if err != nil {
		t.Fatal(err)
	}
	ex := &Executor{Tools: reg, Session: s}
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

// Spill files are private: 0600 in a 0700 directory, even one an older
// version created 0755.
func TestSpillFilesPrivate(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	if err := os.MkdirAll(filepath.Join(data, "spill"), 0o755); err != nil {
		t.Fatal(err)
	}
	sp := NewSpiller(nil, data, 0)
	p, err := sp.Save("shell", "output")
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(p)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("spill file mode %v %v", fi.Mode().Perm(), err)
	}
	di, err := os.Stat(sp.Dir())
	if err != nil || di.Mode().Perm() != 0o700 {
		t.Errorf("spill dir mode %v %v", di.Mode().Perm(), err)
	}
	if sp.maxAge != DefaultSpillMaxAge || DefaultSpillMaxAge.Hours() != 7*24 {
		t.Errorf("default retention %v", sp.maxAge)
	}
}
