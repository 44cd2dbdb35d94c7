package readme

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/troupe-ai/troupe/internal/peer"
	"github.com/troupe-ai/troupe/internal/testfiles"
	"github.com/troupe-ai/troupe/llm/llmtest"
)

// The first commands of "Parallel workers and their changes" do what
// their comments say (the orchestrator built and on PATH, the scripted
// model in place of a real one, in a git checkout whose config isolates
// every worker): apply merges a worker's change into the working tree,
// branch commits it on troupe/RUN/AGENT and leaves the tree clean, patch
// only writes the patch file, which run --json | jq .changes names.
func TestReadmeChanges(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the README's commands")
	}
	peer.Need(t, "git")
	peer.Need(t, "jq")
	root := repoRoot(t)
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	lines := commandLines(shBlocks(t, string(readme), "## Parallel workers and their changes")[0])
	if len(lines) != 3 {
		t.Fatalf("want the apply, branch and patch lines, got %q", lines)
	}
	bin := t.TempDir()
	build := exec.Command("go", "build", "-o", filepath.Join(bin, "orchestrator"), "./cmd/orchestrator")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	const before, after = "package f\n\nfunc F() int { return 1 }\n", "package f\n\nfunc F() int { return 2 }\n"
	for _, line := range lines {
		mode := strings.Fields(line)[3] // orchestrator run --changes MODE
		t.Run(mode, func(t *testing.T) {
			ws := t.TempDir()
			testfiles.Git(t, ws, "init", "-q")
			must := func(err error) {
				t.Helper()
				if err != nil {
					t.Fatal(err)
				}
			}
			must(os.WriteFile(filepath.Join(ws, ".gitignore"), []byte(".troupe/\n"), 0o644))
			must(os.WriteFile(filepath.Join(ws, "f.go"), []byte(before), 0o644))
			testfiles.Git(t, ws, "add", "-A")
			testfiles.Git(t, ws, "commit", "-q", "-m", "first")
			must(os.MkdirAll(filepath.Join(ws, ".troupe"), 0o755))
			must(os.WriteFile(filepath.Join(ws, ".troupe", "config.yaml"),
				[]byte("agent:\n  plan_first: {root: false, worker: false}\n  isolation: worktree\n"), 0o644))
			srv := llmtest.New(llmtest.Script{Agents: []llmtest.AgentScript{
				{Match: llmtest.Matcher{Kind: "root"}, Turns: []llmtest.Turn{
					{ToolCalls: []llmtest.ToolCall{{Name: "delegate", Args: []byte(`{"type":"worker","task":"change F"}`)}}},
					{Text: "done"}}},
				{Match: llmtest.Matcher{Kind: "worker"}, Turns: []llmtest.Turn{
					{ToolCalls: []llmtest.ToolCall{{Name: "read_file", Args: []byte(`{"path":"f.go"}`)}}},
					{ToolCalls: []llmtest.ToolCall{{Name: "edit_file", Args: []byte(`{"path":"f.go","old_string":"return 1","new_string":"return 2"}`)}}},
					{Text: "changed F"}}},
			}})
			defer srv.Close()
			env := []string{"PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH"), "OPENAI_BASE_URL=" + srv.URL(),
				"OPENAI_API_KEY=sk-test-readme", "TROUPE_NATS_URL=", "NO_COLOR=1"}
			out, errs, code := sh(t, ws, env, line, 3*time.Minute)
			if code != 0 {
				t.Fatalf("%s: exit %d\nstdout:\n%s\nstderr:\n%s", line, code, out, errs)
			}
			f, _ := os.ReadFile(filepath.Join(ws, "f.go"))
			status := testfiles.Git(t, ws, "status", "--porcelain")
			switch mode {
			case "apply":
				if string(f) != after || status != "M f.go" {
					t.Errorf("%s: f.go %q, status %q", line, f, status)
				}
			case "branch":
				branch := strings.TrimSpace(strings.TrimPrefix(testfiles.Git(t, ws, "branch", "--list", "troupe/*"), "*"))
				if string(f) != before || status != "" || !strings.HasPrefix(branch, "troupe/") {
					t.Fatalf("%s: f.go %q, status %q, branches %q", line, f, status, branch)
				}
				if got := testfiles.Git(t, ws, "show", branch+":f.go"); got+"\n" != after {
					t.Errorf("%s: f.go on %s: %q", line, branch, got)
				}
			case "patch":
				var changes []struct{ Status, Patch string }
				if err := json.Unmarshal([]byte(out), &changes); err != nil || len(changes) != 1 || changes[0].Status != "patch" {
					t.Fatalf("%s: %v\n%s", line, err, out)
				}
				if string(f) != before || status != "" {
					t.Errorf("%s: f.go %q, status %q", line, f, status)
				}
				testfiles.Git(t, ws, "apply", "--check", changes[0].Patch)
			default:
				t.Errorf("unknown mode in %q", line)
			}
		})
	}
}
