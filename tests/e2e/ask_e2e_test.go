package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/troupe-ai/troupe/llm/llmtest"
)

// A run started with --ask-via nats asks its approvals over NATS; a
// `watch --interactive` process answers them from its stdin: yes to the
// first write, no to the second.
func TestInteractiveApprovalOverNATS(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process")
	}
	serve := start(t, bin.orchestrator, nil, "serve", "--listen", "127.0.0.1:0", "--no-auth")
	url := serve.firstLine(30 * time.Second)
	defer serve.cmd.Process.Signal(syscall.SIGTERM)
	watch := startIn(t, bin.orchestrator, []string{"NO_COLOR=1"}, strings.NewReader("y\nn\n2\n"),
		"watch", "--nats", url, "--interactive", "--follow", "--json")
	watch.waitStderr("watching", 30*time.Second)
	srv := llmtest.New(llmtest.Script{Agents: []llmtest.AgentScript{{Match: llmtest.Matcher{Kind: "root"}, Turns: []llmtest.Turn{
		{ToolCalls: []llmtest.ToolCall{{Name: "write_file", Args: json.RawMessage(`{"path":"yes.txt","content":"y\n"}`)}}},
		{ToolCalls: []llmtest.ToolCall{{Name: "write_file", Args: json.RawMessage(`{"path":"no.txt","content":"n\n"}`)}}},
		{ToolCalls: []llmtest.ToolCall{{Name: "ask_user", Args: json.RawMessage(`{"question":"Which color?","choices":["red","blue"]}`)}}},
		{Text: "asked three times"}}}}})
	defer srv.Close()
	ws := repo(t, "")
	// A workspace's own config may make approvals stricter.
	must(t, os.MkdirAll(filepath.Join(ws, ".troupe"), 0o755))
	must(t, os.WriteFile(filepath.Join(ws, ".troupe", "config.yaml"), []byte("agent:\n  approval: {write_file: ask}\n"), 0o644))
	res := runJSON(t, start(t, bin.orchestrator, modelEnv(srv), "run", "--nats", url, "--workspace", ws, "--ask-via", "nats", "--json", "write two files"))
	if res.Status != "completed" {
		t.Fatalf("run %+v", res)
	}
	if _, err := os.Stat(filepath.Join(ws, "yes.txt")); err != nil {
		t.Error("the approved write did not happen")
	}
	if _, err := os.Stat(filepath.Join(ws, "no.txt")); err == nil {
		t.Error("the refused write happened")
	}
	if !strings.Contains(watch.errs(), "asks: allow write_file?") {
		t.Errorf("watch did not show the question:\n%s", watch.errs())
	}
	// The diff of the write comes before the question.
	shown := watch.errs()
	if i, j := strings.Index(shown, "The change it would make:\n    --- /dev/null\n    +++ b/yes.txt\n    @@ -0,0 +1 @@\n    +y\n"), strings.Index(shown, "Allow? [y/N]"); i < 0 || j < i {
		t.Errorf("watch did not show the diff before asking:\n%s", shown)
	}
	reqs := srv.Requests()
	if got := reqs[2].Messages[len(reqs[2].Messages)-1].Content; !strings.Contains(got, "did not approve") {
		t.Errorf("the refusal the model saw: %q", got)
	}
	if got := reqs[3].Messages[len(reqs[3].Messages)-1].Content; got != "The user answered: blue" {
		t.Errorf("the ask_user answer the model saw: %q", got)
	}
}
