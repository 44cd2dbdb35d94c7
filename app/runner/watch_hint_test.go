package runner

import (
	"os"
	"path/filepath"
	"testing"
)

// The watch line a run prints against an external server carries
// credentials that work: the watcher's file beside the run's own
// (serve's creds folder), or the run's own file when there is none; a
// run without credentials prints none, and a password in the URL is
// masked.
func TestWatchCommandCarriesCreds(t *testing.T) {
	dir := t.TempDir()
	requester := filepath.Join(dir, "requester.creds")
	if err := os.WriteFile(requester, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	b := &Bus{url: "nats://127.0.0.1:4222", credsFile: requester}
	if got, want := b.WatchCommand("r1"), "orchestrator watch --nats nats://127.0.0.1:4222 --creds "+requester+" --run r1 --from-start"; got != want {
		t.Errorf("without watcher.creds:\n got %s\nwant %s", got, want)
	}
	watcher := filepath.Join(dir, "watcher.creds")
	if err := os.WriteFile(watcher, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, want := b.WatchCommand("r1"), "orchestrator watch --nats nats://127.0.0.1:4222 --creds "+watcher+" --run r1 --from-start"; got != want {
		t.Errorf("with watcher.creds:\n got %s\nwant %s", got, want)
	}
	b = &Bus{url: "nats://u:secret@127.0.0.1:4222"}
	if got := b.WatchCommand("r1"); got != "orchestrator watch --nats nats://u:xxxxx@127.0.0.1:4222 --run r1 --from-start" {
		t.Errorf("no creds, password in the URL: %s", got)
	}
}
