package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/troupe-ai/troupe/internal/peer"
	"github.com/troupe-ai/troupe/llm/llmtest"
	"golang.org/x/sys/unix"
)

// SIGTERM and SIGINT end a run promptly wherever it is blocked (in a
// model call that stalls, in a long tool call): exit 130 and the resume
// hint, and the hint is true: resume finishes the run.
func TestSignalsEndARunAndResumeFinishesIt(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process")
	}
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		for _, where := range []string{"model", "tool"} {
			t.Run(fmt.Sprintf("%s in %s call", unix.SignalName(sig), where), func(t *testing.T) {
				ws := repo(t, "")
				blocked := make(chan struct{})
				var turns []llmtest.Turn
				if where == "model" {
					turns = []llmtest.Turn{
						{ToolCalls: []llmtest.ToolCall{{Name: "think", Args: json.RawMessage(`{"thought":"first"}`)}}},
						{Dynamic: func(llmtest.Recorded) llmtest.Turn { // stalls until the client goes
							close(blocked)
							return llmtest.Turn{Text: "never", Latency: llmtest.Duration(10 * time.Minute)}
						}},
						{Text: "finished after resume"}}
				} else {
					turns = []llmtest.Turn{
						{ToolCalls: []llmtest.ToolCall{{Name: "shell", Args: json.RawMessage(`{"command":"touch started && sleep 600"}`)}}},
						{Text: "finished after resume"}}
				}
				srv := llmtest.New(llmtest.Script{Agents: []llmtest.AgentScript{{Match: llmtest.Matcher{Kind: "root"}, Turns: turns}}})
				defer srv.Close()
				p := start(t, bin.orchestrator, modelEnv(srv), "run", "--workspace", ws, "--quiet", "block somewhere")
				if where == "model" {
					select {
					case <-blocked:
					case <-p.done:
						t.Fatalf("the run ended early:\n%s", p.errs())
					case <-time.After(time.Minute):
						t.Fatal("the stalling request never arrived")
					}
				} else {
					waitFile(t, p, filepath.Join(ws, "started"))
				}
				must(t, p.cmd.Process.Signal(sig))
				if code := p.wait(time.Minute); code != 130 {
					t.Fatalf("exit %d after %s, want 130:\n%s", code, sig, p.errs())
				}
				hint := regexp.MustCompile(`interrupted; the run is checkpointed\. Resume with:\n  orchestrator resume (\S+) --workspace `).FindStringSubmatch(p.errs())
				if hint == nil {
					t.Fatalf("no resume hint:\n%s", p.errs())
				}
				r := start(t, bin.orchestrator, modelEnv(srv), "resume", hint[1], "--workspace", ws, "--json")
				if res := runJSON(t, r); res.Status != "completed" || res.Text != "finished after resume" {
					t.Errorf("resume: %+v\n%s", res, r.errs())
				}
			})
		}
	}
}

// waitFile waits until path exists.
func waitFile(t *testing.T, p *proc, path string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		select {
		case <-p.done:
			t.Fatalf("the run ended before %s appeared:\n%s", path, p.errs())
		case <-time.After(5 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not appear:\n%s", path, p.errs())
		}
	}
}

// approvalScript writes one file under the "ask" policy, then answers.
func approvalScript() *llmtest.Server {
	return llmtest.New(llmtest.Script{Agents: []llmtest.AgentScript{{Match: llmtest.Matcher{Kind: "root"}, Turns: []llmtest.Turn{
		{ToolCalls: []llmtest.ToolCall{{Name: "write_file", Args: json.RawMessage(`{"path":"asked.txt","content":"x\n"}`)}}},
		{Text: "done"}}}}})
}

// A headless run (stdin /dev/null) applies the default answer, no, at
// once: no prompt, nothing written, the model told why.
func TestHeadlessApprovalDeniesAtOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process")
	}
	srv := approvalScript()
	defer srv.Close()
	ws := repo(t, "")
	agentConfig(t, ws, "  approval: {write_file: ask}\n  approval_timeout: 10m\n")
	devnull, err := os.Open(os.DevNull)
	must(t, err)
	defer devnull.Close()
	p := startIn(t, bin.orchestrator, modelEnv(srv), devnull, "run", "--workspace", ws, "--quiet", "write a file")
	if code := p.wait(time.Minute); code != 0 { // a wait of approval_timeout would be 10 minutes
		t.Fatalf("exit %d:\n%s", code, p.errs())
	}
	if strings.Contains(p.errs(), "Allow?") {
		t.Errorf("a headless run prompted:\n%s", p.errs())
	}
	if _, err := os.Stat(filepath.Join(ws, "asked.txt")); err == nil {
		t.Error("the write happened without approval")
	}
	if got := toolResultsOf(srv.Requests()[1]); len(got) != 1 || !strings.Contains(got[0], "no approver (headless run)") {
		t.Errorf("the model was told %q", got)
	}
}

// On a terminal nobody answers: the prompt applies the default answer, no,
// after agent.approval_timeout.
func TestTerminalApprovalDefaultsAfterTimeout(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process")
	}
	master, tty := openPTY(t)
	defer master.Close()
	defer tty.Close()
	srv := approvalScript()
	defer srv.Close()
	ws := repo(t, "")
	agentConfig(t, ws, "  approval: {write_file: ask}\n  approval_timeout: 300ms\n")
	p := startIn(t, bin.orchestrator, modelEnv(srv), tty, "run", "--workspace", ws, "--quiet", "write a file")
	if code := p.wait(time.Minute); code != 0 {
		t.Fatalf("exit %d:\n%s", code, p.errs())
	}
	if !strings.Contains(p.errs(), "wants to run write_file") || !strings.Contains(p.errs(), "(no answer)") {
		t.Errorf("no prompt, or no timeout, on the terminal:\n%s", p.errs())
	}
	if _, err := os.Stat(filepath.Join(ws, "asked.txt")); err == nil {
		t.Error("the write happened without approval")
	}
	if got := toolResultsOf(srv.Requests()[1]); len(got) != 1 || !strings.Contains(got[0], "timed out waiting for approval") {
		t.Errorf("the model was told %q", got)
	}
}

// agentConfig adds lines to the agent section of the user config of the
// programs started on ws (see userConfig).
func agentConfig(t *testing.T, ws, lines string) {
	t.Helper()
	home, ok := homes.Load(ws)
	if !ok {
		t.Fatalf("no user config for %s", ws)
	}
	p := filepath.Join(home.(string), ".config", "troupe", "config.yaml")
	cfg, err := os.ReadFile(p)
	must(t, err)
	must(t, os.WriteFile(p, []byte(strings.Replace(string(cfg), "agent:\n", "agent:\n"+lines, 1)), 0o644))
}

// openPTY opens a pseudo-terminal pair: the master and the terminal side
// a program gets as its stdin.
func openPTY(t *testing.T) (*os.File, *os.File) {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		peer.Missing(t, "pty", "no pseudo-terminals here: %v", err)
	}
	fd := int(master.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		master.Close()
		peer.Missing(t, "pty", "unlock pseudo-terminal: %v", err)
	}
	n, err := unix.IoctlGetUint32(fd, unix.TIOCGPTN)
	if err != nil {
		master.Close()
		peer.Missing(t, "pty", "pseudo-terminal number: %v", err)
	}
	tty, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		master.Close()
		peer.Missing(t, "pty", "open pseudo-terminal: %v", err)
	}
	return master, tty
}
