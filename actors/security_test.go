package actors_test

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/llm/llmtest"
	"github.com/troupe-ai/troupe/messages"
	"github.com/troupe-ai/troupe/tools"
)

// A configured secret that a tool prints (a cat of a file holding the API
// key, a long output that is cut and spilled) or that the model writes in
// its arguments reaches no model request as a tool result, no event, no
// checkpoint, journal or spill file: each shows [redacted].
func TestSecretsRedactedFromEverythingTheRunWrites(t *testing.T) {
	const key = "sk-proj-SECRET-0123456789abcdef"
	ws := workspace(t, map[string]string{".env": "OPENAI_API_KEY=" + key + "\n",
		"big.txt": strings.Repeat("line "+key+"\n", 4000)})
	srv := llmtest.New(script(kind("root",
		calls(tc("shell", `{"command":"cat .env"}`), tc("read_file", `{"path":".env"}`), tc("shell", `{"command":"cat big.txt"}`)),
		calls(tc("grep", `{"pattern":"`+key+`","output":"content"}`)),
		say("done"))))
	defer srv.Close()
	rec := &actors.Recorder{}
	o := options(t, srv, ws, "show me the key", rec)
	o.Settings = noPlan()
	o.Settings.KeepCheckpoints = true
	o.Secrets = []string{key, "short"} // too short to redact: ignored
	res := run(t, o)
	if res.Status != actors.StatusCompleted {
		t.Fatalf("run: %+v", res.AgentResult)
	}
	reqs := srv.Requests()
	for i, r := range reqs {
		for _, content := range toolResults(r) {
			if strings.Contains(content, key) {
				t.Errorf("request %d: a tool result holds the key:\n%s", i+1, content)
			}
		}
	}
	if got := toolResults(reqs[1]); len(got) != 3 || !strings.Contains(got[0], "OPENAI_API_KEY=[redacted]") {
		t.Errorf("results the model got: %q", got)
	}
	sawArgs := false
	for _, ev := range rec.Events() {
		if strings.Contains(string(ev.Data), key) {
			t.Errorf("event %s holds the key: %s", ev.Type, ev.Data)
		}
		if ev.Type == messages.EvtToolStarted && strings.Contains(string(ev.Data), `[redacted]`) {
			sawArgs = true
		}
	}
	if !sawArgs {
		t.Error("no tool.started event shows the model's arguments redacted")
	}
	files := 0
	for _, dir := range []string{actors.DataDir(ws), stateOf(t, ws)} {
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || p == filepath.Join(actors.DataDir(ws), ".gitignore") {
				return err
			}
			files++
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			if strings.Contains(string(b), key) {
				t.Errorf("%s holds the key", p)
			}
			if fi, _ := d.Info(); fi.Mode().Perm() != 0o600 {
				t.Errorf("%s has mode %v", p, fi.Mode().Perm())
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if files < 3 { // a checkpoint, a journal and a spill file at least
		t.Fatalf("walked %d files", files)
	}
}

// A tool that ignores its context does not hang the agent: the call ends
// as a timeout result after the executor's grace, and the agent goes on.
func TestDeafToolTimesOutInARun(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	deaf := tools.New(tools.Spec{Name: "deaf", Description: "Never answers.", ReadOnly: true, Tier: tools.TierAlways,
		Timeout: 50 * time.Millisecond}, func(context.Context, *tools.Session, struct{}) (tools.Result, error) {
		<-release // deaf to its context
		return tools.Text("too late"), nil
	})
	srv := llmtest.New(script(kind("root", calls(tc("deaf", `{}`)), say("went on"))))
	defer srv.Close()
	o := options(t, srv, workspace(t, nil), "call the deaf tool", &actors.Recorder{})
	o.Settings = noPlan()
	o.ExtraTools = []tools.Tool{deaf}
	o.Kinds = actors.BuiltinKinds()
	root := o.Kinds[actors.KindRoot]
	root.Tools = append(root.Tools, "deaf")
	o.Kinds[actors.KindRoot] = root
	res := run(t, o)
	if res.Status != actors.StatusCompleted || res.Text != "went on" {
		t.Fatalf("run: %+v", res.AgentResult)
	}
	if got := lastTool(srv.Requests()[1]); !strings.Contains(got, "tool deaf timed out") {
		t.Errorf("result %q", got)
	}
}

// A call the executor refuses anyway (a tool this phase may not use,
// arguments the tool does not take, a path outside the workspace) is not
// put to the user; a legitimate one is.
func TestRefusedCallsAreNotAskedFor(t *testing.T) {
	srv := llmtest.New(script(kind("root",
		calls(tc("write_file", `{"path":"plan.txt","content":"x\n"}`)), // planning phase: not allowed yet
		calls(tc("submit_plan", `{"summary":"write one file","steps":[{"title":"write it"}]}`)),
		calls(tc("write_file", `{"path":"../outside.txt","content":"x\n"}`),
			tc("write_file", `{"path":"/etc/troupe-outside.txt","content":"x\n"}`),
			tc("write_file", `{"path":"inside.txt","content":"x\n"}`),
			tc("write_file", `{"path":"bad.txt","contents":"x\n"}`)),
		say("done"))))
	defer srv.Close()
	ws := workspace(t, nil)
	o := options(t, srv, ws, "write", &actors.Recorder{})
	o.Settings.Approval = map[string]string{"write_file": actors.PolicyAsk}
	asked := &countingApprover{}
	o.Approver = asked
	run(t, o)
	if n := asked.count(); n != 1 {
		t.Errorf("the user was asked %d times, want once (for inside.txt)", n)
	}
	reqs := srv.Requests()
	if got := lastTool(reqs[1]); !strings.Contains(got, "not allowed") {
		t.Errorf("write in the planning phase: %q", got)
	}
	got := toolResults(reqs[3])
	if len(got) != 4 || !strings.Contains(got[0], "outside") || !strings.Contains(got[1], "outside") || !strings.Contains(got[2], "inside.txt") ||
		!strings.Contains(got[3], "invalid arguments") {
		t.Errorf("results %q", got)
	}
	if _, err := os.Stat(filepath.Join(ws, "inside.txt")); err != nil {
		t.Error("the approved write did not happen")
	}
}

// countingApprover approves everything and counts the questions.
type countingApprover struct {
	mu sync.Mutex
	n  int
}

func (c *countingApprover) Approve(context.Context, actors.ApprovalRequest) (bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n++
	return true, nil
}

func (c *countingApprover) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// A state directory inside the workspace, where agents write, is refused
// before anything runs; the default one is outside it, private (0700).
func TestStateDirOutsideTheWorkspace(t *testing.T) {
	ws := workspace(t, map[string]string{"a.txt": "a\n"})
	srv := llmtest.New(script(kind("root", say("done"))))
	defer srv.Close()
	o := options(t, srv, ws, "x", &actors.Recorder{})
	o.StateDir = filepath.Join(ws, "state")
	if _, err := actors.Run(t.Context(), o); err == nil || !strings.Contains(err.Error(), "inside the workspace") {
		t.Fatalf("a state directory in the workspace: %v", err)
	}
	o.StateDir = ""
	if res := run(t, o); res.Status != actors.StatusCompleted {
		t.Fatalf("run: %+v", res.AgentResult)
	}
	fi, err := os.Stat(stateOf(t, ws))
	if err != nil || fi.Mode().Perm() != 0o700 || strings.HasPrefix(stateOf(t, ws), ws) {
		t.Errorf("the state directory %s: %v %v", stateOf(t, ws), fi, err)
	}
}
