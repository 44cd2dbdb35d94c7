package readme

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/troupe-ai/troupe/internal/peer"
	"github.com/troupe-ai/troupe/internal/testfiles"
	"github.com/troupe-ai/troupe/llm/llmtest"
)

// The first commands of "Parallel workers and their changes" do what
// their comments say, in a shell that ran the try-out block (the
// orchestrator built and on PATH, the scripted model, whose worker writes
// llmtest.TryOutFile), in a git checkout: apply merges the worker's
// change into the working tree, branch commits it on troupe/RUN/AGENT and
// leaves the tree clean, patch only writes the patch file, which run
// --json | jq .changes names.
func TestReadmeChanges(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the README's commands")
	}
	peer.Need(t, "git")
	peer.Need(t, "jq")
	readme := readmeText(t)
	lines := commandLines(shBlocks(t, readme, "## Parallel workers and their changes")[0])
	if len(lines) != 3 {
		t.Fatalf("want the apply, branch and patch lines, got %q", lines)
	}
	s := repoSession(t, strings.NewReplacer(), "OPENAI_API_KEY=", "OPENAI_BASE_URL=", "TROUPE_NATS_URL=", "TROUPE_NATS_CREDS=")
	tryOut(t, s, readme)
	const file = llmtest.TryOutFile
	for _, line := range lines {
		mode := strings.Fields(line)[3] // orchestrator run --changes MODE
		t.Run(mode, func(t *testing.T) {
			ws := t.TempDir()
			testfiles.Git(t, ws, "init", "-q")
			if err := os.WriteFile(filepath.Join(ws, "f.go"), []byte("package f\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			testfiles.Git(t, ws, "add", "-A")
			testfiles.Git(t, ws, "commit", "-q", "-m", "first")
			in := &session{t: t, dir: ws, env: s.env, repl: s.repl}
			out, errs := in.must(line, 3*time.Minute)
			written, _ := os.ReadFile(filepath.Join(ws, file))
			status := testfiles.Git(t, ws, "status", "--porcelain")
			switch mode {
			case "apply":
				if !strings.HasPrefix(string(written), "Written by a troupe worker") || status != "?? "+file {
					t.Errorf("%s: %s %q, status %q\n%s", line, file, written, status, errs)
				}
			case "branch":
				branch := strings.TrimSpace(strings.TrimPrefix(testfiles.Git(t, ws, "branch", "--list", "troupe/*"), "*"))
				if written != nil || status != "" || !strings.HasPrefix(branch, "troupe/") {
					t.Fatalf("%s: %s %q, status %q, branches %q\n%s", line, file, written, status, branch, errs)
				}
				if got := testfiles.Git(t, ws, "show", branch+":"+file); !strings.HasPrefix(got, "Written by a troupe worker") {
					t.Errorf("%s: %s on %s: %q", line, file, branch, got)
				}
			case "patch":
				var changes []struct{ Status, Patch string }
				if err := json.Unmarshal([]byte(out), &changes); err != nil || len(changes) != 1 || changes[0].Status != "patch" {
					t.Fatalf("%s: %v\n%s\n%s", line, err, out, errs)
				}
				if written != nil || status != "" {
					t.Errorf("%s: %s %q, status %q", line, file, written, status)
				}
				testfiles.Git(t, ws, "apply", "--check", changes[0].Patch)
			default:
				t.Errorf("unknown mode in %q", line)
			}
		})
	}
}
