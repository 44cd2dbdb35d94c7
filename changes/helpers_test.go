package changes

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/configs"
	"github.com/troupe-ai/troupe/internal/peer"
	"github.com/troupe-ai/troupe/internal/testfiles"
)

// gitRepo makes a git repository of files, committed.
func gitRepo(t *testing.T, files map[string]string) string {
	t.Helper()
	peer.Need(t, "git")
	dir := t.TempDir()
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	testfiles.Git(t, dir, "init", "-q")
	testfiles.Git(t, dir, "add", "-A")
	testfiles.Git(t, dir, "commit", "-q", "-m", "first")
	return dir
}

// openRun opens a run's isolation of ws in the given mode (worktree,
// auto, shared), its data and state directories private to the test,
// closed with it.
func openRun(t *testing.T, ws, mode string) *Run {
	t.Helper()
	s := configs.Agent{Isolation: mode}
	r, err := Open(context.Background(), s, Dirs{Root: ws, Data: filepath.Join(ws, ".troupe"), State: t.TempDir()}, false, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.close)
	return r
}

// event is one event an Emit sent.
type event struct {
	typ  string
	data any
}

// recorder collects what an Emit sends.
type recorder struct{ events []event }

func (rec *recorder) emit(typ string, data any) { rec.events = append(rec.events, event{typ, data}) }

// ofType are the events of type typ.
func (rec *recorder) ofType(typ string) []event {
	var out []event
	for _, e := range rec.events {
		if e.typ == typ {
			out = append(out, e)
		}
	}
	return out
}

// write writes body to name in dir, failing the test on an error.
func write(t *testing.T, dir, name, body string) {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}
