package runner

import (
	"os"
	"path/filepath"
	"testing"
)

// A lost run's resume line from watch names the requester's credentials
// beside the watcher's it was given (a watcher may run nothing), or the
// file it was given when there is none beside it.
func TestResumeLineTakesTheRequesterCreds(t *testing.T) {
	serveDir, other := t.TempDir(), t.TempDir()
	for _, f := range []string{filepath.Join(serveDir, "watcher.creds"), filepath.Join(serveDir, "requester.creds"), filepath.Join(other, "mine.creds")} {
		if err := os.WriteFile(f, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for creds, want := range map[string]string{
		filepath.Join(serveDir, "watcher.creds"): " --creds " + filepath.Join(serveDir, "requester.creds"),
		filepath.Join(other, "mine.creds"):       " --creds " + filepath.Join(other, "mine.creds"),
		"":                                       "",
	} {
		if got, w := ResumeLine("r1", "/w", "nats://h:4222", creds, map[string]string{"explore": "remote"}),
			"orchestrator resume r1 --workspace /w --nats nats://h:4222"+want+" --placement explore=remote"; got != w {
			t.Errorf("creds %q:\ngot  %s\nwant %s", creds, got, w)
		}
	}
}
