// Command worker-pool is a distributed worker pool in one program: an
// embedded NATS server with JetStream, two worker nodes (each with its own
// clone of the repository, as on two machines) and an orchestrator whose
// worker agents are placed on the nodes through the task queue. Each
// worker works in its node's worktree of the orchestrator's snapshot, and
// its changes come back and land in the orchestrator's checkout. It
// prints which node ran each task, what became of its changes and the
// orchestrator's files afterwards. It needs git.
//
// Offline it runs against the scripted OpenAI-compatible server; with
// OPENAI_API_KEY (or OPENAI_BASE_URL) set it uses that model.
//
//	go run ./examples/worker-pool
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"time"

	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/bus"
	"github.com/troupe-ai/troupe/cluster"
	"github.com/troupe-ai/troupe/llm"
	"github.com/troupe-ai/troupe/llm/llmtest"
	"github.com/troupe-ai/troupe/messages"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "worker-pool:", err)
		os.Exit(1)
	}
}

// repo is the small repository every checkout starts from.
var repo = map[string]string{
	"greet.go": "package app\n\nfunc Greet(name string) string { return \"hello \" + name }\n",
	"bye.go":   "package app\n\nfunc Bye(name string) string { return \"bye \" + name }\n",
}

func run(ctx context.Context, stdout, stderr io.Writer) error {
	log := zerolog.Nop()
	// The hub: a NATS server with JetStream, here in this process.
	hub, err := bus.StartEmbedded(ctx, bus.EmbeddedOptions{Ephemeral: true}, log)
	if err != nil {
		return err
	}
	defer hub.Shutdown(context.Background())
	fmt.Fprintf(stderr, "NATS at %s\n", hub.URL())

	baseURL, key, model := os.Getenv("OPENAI_BASE_URL"), os.Getenv("OPENAI_API_KEY"), "gpt-4.1-mini"
	if baseURL == "" && key == "" {
		srv := scripted()
		defer srv.Close()
		baseURL, model = srv.URL(), "scripted"
		fmt.Fprintln(stderr, "no OPENAI_API_KEY: using the scripted model (real nodes, queue, tools; canned answers)")
	}
	client, err := llm.NewClient(llm.Config{BaseURL: baseURL, APIKey: key, Model: model, Stream: true}, log)
	if err != nil {
		return err
	}
	models := actors.Models{Default: model, Cheap: model}

	// The orchestrator's checkout, with an edit not yet committed.
	ws, err := checkout()
	if err != nil {
		return err
	}
	defer os.RemoveAll(ws)

	// Two nodes, each with its own clone, taking worker tasks.
	for _, name := range []string{"node-a", "node-b"} {
		conn, err := bus.Connect(ctx, bus.ConnectOptions{URLs: hub.URL(), Name: name}, log)
		if err != nil {
			return err
		}
		defer conn.Close()
		clone, err := os.MkdirTemp("", "worker-pool-"+name+"-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(clone)
		if err := git(clone, "clone", "-q", ws, "."); err != nil {
			return err
		}
		node, err := cluster.StartNode(ctx, cluster.NodeOptions{Bus: conn, ID: name, Name: name,
			Kinds: []string{actors.KindWorker}, Slots: 1, Log: log,
			Agent: actors.Options{Workspace: clone, Client: client, Models: models, Log: log,
				Settings: actors.Settings{PlanFirst: map[string]bool{actors.KindWorker: false}}}})
		if err != nil {
			return err
		}
		defer node.Drain(context.Background())
		fmt.Fprintf(stderr, "%s takes worker tasks; its own clone is %s\n", name, clone)
	}

	// The orchestrator: worker agents go to the nodes.
	conn, err := bus.Connect(ctx, bus.ConnectOptions{URLs: hub.URL(), Name: "orchestrator"}, log)
	if err != nil {
		return err
	}
	defer conn.Close()
	runID := fmt.Sprintf("pool-%d", time.Now().UnixNano())
	rec := &actors.Recorder{}
	// Workspace: tasks carry snapshots of it, and changes come back to it.
	remote, err := cluster.StartRemote(ctx, cluster.RemoteOptions{Bus: conn, Run: runID, Workspace: ws,
		Placement: map[string]string{actors.KindWorker: cluster.PlaceRemote}, Events: rec, Log: log})
	if err != nil {
		return err
	}
	defer remote.Close()
	res, err := actors.Run(ctx, actors.Options{Run: runID, Workspace: ws, Client: client, Models: models, Log: log,
		Task:     "Make Greet and Bye say their words in capitals: one worker per file.",
		Placer:   remote.Placer(),
		OnBudget: remote.ServeBudget,
		Events:   rec,
		Settings: actors.Settings{PlanFirst: map[string]bool{actors.KindRoot: false}}})
	if err != nil {
		return err
	}
	return report(stdout, rec, res, ws)
}

// report prints which node ran each worker, what became of its changes,
// the orchestrator's files and the run's end.
func report(stdout io.Writer, rec *actors.Recorder, res actors.Result, ws string) error {
	for _, ev := range rec.OfType(messages.EvtToolFinished) {
		tf, err := messages.DecodeAs[messages.ToolFinished](ev)
		if err != nil || tf.Tool != "delegate" {
			continue
		}
		fmt.Fprintf(stdout, "%s ran on %v: changed %v\n", tf.Metadata["agent_id"], tf.Metadata["node"], tf.Metadata["changed"])
	}
	for _, c := range res.Changes {
		fmt.Fprintf(stdout, "changes of %s: %s %v\n", c.Agent, c.Status, c.Files)
	}
	for _, f := range []string{"greet.go", "bye.go"} {
		b, err := os.ReadFile(filepath.Join(ws, f))
		if err != nil {
			return err
		}
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		fmt.Fprintf(stdout, "orchestrator's %s: %s\n", f, lines[len(lines)-1])
	}
	fmt.Fprintf(stdout, "%s: %s\n", res.Status, res.Text)
	return nil
}

// checkout makes a temporary git checkout of the repository, committed,
// plus an uncommitted edit (the nodes' clones never have it; their
// workers see it all the same).
func checkout() (string, error) {
	dir, err := os.MkdirTemp("", "worker-pool-orchestrator-")
	if err != nil {
		return "", err
	}
	files := map[string]string{".gitignore": ".troupe/\n"}
	for f, body := range repo {
		files[f] = body
	}
	for f, body := range files {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(body), 0o644); err != nil {
			return "", err
		}
	}
	if err := git(dir, "init", "-q"); err != nil {
		return "", err
	}
	if err := git(dir, "add", "-A"); err != nil {
		return "", err
	}
	if err := git(dir, "commit", "-q", "-m", "first"); err != nil {
		return "", err
	}
	edited := strings.Replace(repo["greet.go"], "package app\n", "package app\n\n// Greet greets.", 1)
	return dir, os.WriteFile(filepath.Join(dir, "greet.go"), []byte(edited), 0o644)
}

// git runs git in dir with a fixed identity.
func git(dir string, args ...string) error {
	cmd := exec.Command("git", append([]string{"-c", "user.name=example", "-c", "user.email=example@localhost",
		"-c", "init.defaultBranch=main"}, args...)...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, out)
	}
	return nil
}

// scripted is the offline model: the lead starts one worker per file in
// one turn; each worker reads its file, edits it, and reports.
func scripted() *llmtest.Server {
	edit := func(file, from, to string) []llmtest.Turn {
		return []llmtest.Turn{
			{ToolCalls: []llmtest.ToolCall{{Name: "read_file", Args: json.RawMessage(`{"path":"` + file + `"}`)}}},
			{ToolCalls: []llmtest.ToolCall{{Name: "edit_file", Args: json.RawMessage(`{"path":"` + file + `","old_string":"` + from + `","new_string":"` + to + `"}`)}}},
			{Text: "Changed " + file + ": " + to},
		}
	}
	return llmtest.New(llmtest.Script{Agents: []llmtest.AgentScript{
		{Match: llmtest.Matcher{Kind: "root"}, Turns: []llmtest.Turn{
			{ToolCalls: []llmtest.ToolCall{
				{Name: "delegate", Args: json.RawMessage(`{"type":"worker","task":"greet.go: make Greet say HELLO"}`)},
				{Name: "delegate", Args: json.RawMessage(`{"type":"worker","task":"bye.go: make Bye say BYE"}`)}}},
			{Text: "Both files changed on the nodes."}}},
		{Match: llmtest.Matcher{Kind: "worker", TaskContains: "greet.go"}, Turns: edit("greet.go", `\"hello \"`, `\"HELLO \"`)},
		{Match: llmtest.Matcher{Kind: "worker", TaskContains: "bye.go"}, Turns: edit("bye.go", `\"bye \"`, `\"BYE \"`)},
	}})
}
