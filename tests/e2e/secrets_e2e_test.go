package e2e

import (
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/troupe-ai/troupe/llm/llmtest"
)

// secretEnv are secret-looking variables in the orchestrator's
// environment; no command may see them.
var secretEnv = map[string]string{"GITHUB_PAT": "ghp_e2eSecretValue0001", "NPM_AUTH": "npm_e2eSecretValue0002",
	"AWS_SECRET_ACCESS_KEY": "aws/e2eSecretValue0003", "OPENAI_KEY": "sk-e2eSecretValue0004",
	"OPENAI_API_KEY": "sk-e2eModelKey0005"}

func secretVars() []string {
	var out []string
	for k, v := range secretEnv {
		out = append(out, k+"="+v)
	}
	return out
}

// asOtherUser prepares running program (bin.orchestrator, bin.node) as
// an unprivileged user when the tests run as root: root keeps
// CAP_SYS_PTRACE, which reads any process's /proc/<pid>/environ, dumpable
// or not, so the property under test (a command run by the same user
// cannot read it) needs a user that is not root. It returns the binary to
// run, a workspace and a home that user owns, and the credential (nil
// when the tests are not root).
func asOtherUser(t *testing.T, program string) (string, string, string, *syscall.Credential) {
	t.Helper()
	if os.Geteuid() != 0 {
		return program, t.TempDir(), t.TempDir(), nil
	}
	const nobody = 65534
	dir, err := os.MkdirTemp("", "troupe-e2e-user-")
	must(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	must(t, os.Chmod(dir, 0o755))
	exe := filepath.Join(dir, filepath.Base(program))
	src, err := os.Open(program)
	must(t, err)
	defer src.Close()
	dst, err := os.OpenFile(exe, os.O_CREATE|os.O_WRONLY, 0o755)
	must(t, err)
	_, err = io.Copy(dst, src)
	must(t, err)
	must(t, dst.Close())
	ws, home := filepath.Join(dir, "ws"), filepath.Join(dir, "home")
	for _, d := range []string{ws, home} {
		must(t, os.Mkdir(d, 0o755))
		must(t, os.Chown(d, nobody, nobody))
	}
	return exe, ws, home, &syscall.Credential{Uid: nobody, Gid: nobody}
}

// A command run by the shell tool (orchestrator tools call shell, a real
// process) gets no secret-looking variable, and cannot read its parent's
// (the orchestrator's) environment through /proc: the orchestrator is
// non-dumpable.
func TestShellChildSeesNoSecrets(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process")
	}
	exe, ws, home, cred := asOtherUser(t, bin.orchestrator)
	args, _ := json.Marshal(map[string]string{"command": `env; echo "---"; cat /proc/$PPID/environ; echo; echo "ppid=$PPID"`})
	cmd := exec.Command(exe, "tools", "call", "shell", string(args), "--workspace", ws)
	cmd.Env = append(append(os.Environ(), "HOME="+home, "XDG_STATE_HOME=", "TROUPE_NATS_URL="), secretVars()...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	must(t, cmd.Start())
	pid := cmd.Process.Pid
	_ = cmd.Wait() // exit 1: cat failed, so the command's status is not 0
	text := out.String()
	if !strings.Contains(text, "ppid="+strconv.Itoa(pid)) {
		t.Fatalf("the command's parent is not the orchestrator (pid %d):\n%s", pid, text)
	}
	if !strings.Contains(text, "/environ: Permission denied") {
		t.Errorf("reading the orchestrator's /proc/<pid>/environ did not fail:\n%s", text)
	}
	for k, v := range secretEnv {
		if strings.Contains(text, v) || strings.Contains(text, k+"=") {
			t.Errorf("the command saw %s", k)
		}
	}
	envPart, _, _ := strings.Cut(text, "---")
	var names []string
	for _, line := range strings.Split(envPart, "\n")[1:] { // after "[exit: N]"
		if name, _, ok := strings.Cut(line, "="); ok && name != "" && !strings.ContainsAny(name, " \t") {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	t.Logf("a shell command's environment (%d variables): %s", len(names), strings.Join(names, " "))
}

// In a scripted run, what a command prints of the environment, even of
// the orchestrator's own, never carries the model API key to the model:
// the variable is not passed on, /proc is closed to the commands (root's
// included), and a file holding the key shows [redacted].
func TestRunNeverSendsTheKeyToTheModel(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process")
	}
	srv := llmtest.New(llmtest.Script{Agents: []llmtest.AgentScript{{Match: llmtest.Matcher{Kind: "root"}, Turns: []llmtest.Turn{
		{ToolCalls: []llmtest.ToolCall{{Name: "shell", Args: json.RawMessage(`{"command":"env | sort"}`)},
			{Name: "shell", Args: json.RawMessage(`{"command":"cat /proc/$PPID/environ | tr '\\0' '\\n'"}`)},
			{Name: "shell", Args: json.RawMessage(`{"command":"cat key.txt"}`)}}},
		{Text: "looked"}}}}})
	defer srv.Close()
	ws := repo(t, "")
	must(t, os.WriteFile(filepath.Join(ws, "key.txt"), []byte(secretEnv["OPENAI_API_KEY"]+"\n"), 0o600))
	env := append(secretVars(), "OPENAI_BASE_URL="+srv.URL(), "NO_COLOR=1", "TROUPE_NATS_URL=")
	p := start(t, bin.orchestrator, env, "run", "--workspace", ws, "--json", "--log-level", "debug", "look around")
	if res := runJSON(t, p); res.Status != "completed" {
		t.Fatalf("run: %+v", res)
	}
	reqs := srv.Requests()
	if got := reqs[0].Header.Get("Authorization"); got != "Bearer "+secretEnv["OPENAI_API_KEY"] {
		t.Fatalf("the key did not reach the model API as the bearer token: %q", got)
	}
	results := toolResultsOf(reqs[1])
	if len(results) != 3 {
		t.Fatalf("results %q", results)
	}
	all := strings.Join(results, "\n")
	if strings.Contains(all, secretEnv["OPENAI_API_KEY"]) || strings.Contains(p.errs(), secretEnv["OPENAI_API_KEY"]) {
		t.Errorf("the model API key reached the model or the logs:\n%s", all)
	}
	if !strings.Contains(results[2], "[redacted]") {
		t.Errorf("cat key.txt: %q", results[2])
	}
	for k, v := range secretEnv {
		if strings.Contains(results[0], k+"=") || strings.Contains(results[0], v) {
			t.Errorf("env showed %s", k)
		}
	}
	// Even as root: the orchestrator is non-dumpable and its commands hold
	// no capability that passes that check.
	if !strings.Contains(results[1], "Permission denied") || strings.Contains(results[1], "GITHUB_PAT") {
		t.Errorf("a command read the orchestrator's environment: %.300q", results[1])
	}
}

// A node process is non-dumpable too: a process of the node's own user
// (what its shell commands are) cannot read its /proc/<pid>/environ,
// where the model API key lives, and the kernel shows the node's /proc
// files as root's. A control reads a dumpable process of the same user
// the same way, so the refusal is the node's doing.
func TestNodeIsNotDumpable(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process")
	}
	ns, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true,
		JetStream: true, StoreDir: t.TempDir()})
	must(t, err)
	go ns.Start()
	t.Cleanup(ns.Shutdown)
	if !ns.ReadyForConnections(30 * time.Second) {
		t.Fatal("nats server not ready")
	}
	exe, ws, home, cred := asOtherUser(t, bin.node)
	key := secretEnv["OPENAI_API_KEY"]
	cmd := exec.Command(exe, "--nats", ns.ClientURL(), "--workspace", ws, "--slots", "1")
	// Only what the node needs: a failure prints what was read.
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "TROUPE_NATS_URL=", "OPENAI_API_KEY=" + key,
		"OPENAI_BASE_URL=http://127.0.0.1:9"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	node := startCmd(t, cmd)
	node.waitStderr(" ready", 60*time.Second) // main made it non-dumpable before this line
	pid := strconv.Itoa(node.cmd.Process.Pid)

	// As the node's user, read another process's environment: the node's,
	// then (the control) a dumpable shell's, its parent.
	readAs := func(script string) (string, error) {
		c := exec.Command("sh", "-c", script, "sh", pid)
		c.Env = []string{"PATH=" + os.Getenv("PATH")}
		c.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		out, err := c.CombinedOutput()
		return string(out), err
	}
	out, err := readAs(`cat /proc/$1/environ`)
	if err == nil || !strings.Contains(out, "Permission denied") || strings.Contains(out, key) {
		t.Errorf("a process of the node's user read its environment (%v):\n%.300q", err, out)
	}
	if out, err := readAs(`cat /proc/$$/environ >/dev/null && echo readable`); err != nil || !strings.Contains(out, "readable") {
		t.Fatalf("control: a dumpable process of the same user was not readable either, so this test shows nothing (%v): %s", err, out)
	}

	fi, err := os.Stat("/proc/" + pid + "/environ")
	must(t, err)
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		t.Fatalf("no owner in %T", fi.Sys())
	}
	uid := uint32(os.Getuid())
	if cred != nil {
		uid = cred.Uid
	}
	if uid == 0 {
		t.Fatal("the node runs as root, so its /proc owner says nothing")
	}
	if st.Uid != 0 {
		t.Errorf("the node's /proc/%s/environ belongs to uid %d, its own user: the node is dumpable", pid, st.Uid)
	}
}
