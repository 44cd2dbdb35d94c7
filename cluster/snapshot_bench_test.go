package cluster

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/internal/testfiles"
	"github.com/troupe-ai/troupe/llm/llmtest"
)

// BenchmarkRemoteWorkerRoundTrip5000 is one run whose root delegates one
// remote worker that writes a file, on a 5,000-file repository: the task
// with its snapshot, the node's worktree of it, the capture and the
// requester's merge. "current": the node's checkout has the base commit
// (only the uncommitted changes travel); "behind": it lacks it (the whole
// snapshot travels, once per run); "no-snapshot": the task carries none
// and the worker edits the node's checkout, as before snapshots travelled.
func BenchmarkRemoteWorkerRoundTrip5000(b *testing.B) {
	for _, mode := range []string{"current", "behind", "no-snapshot"} {
		b.Run(mode, func(b *testing.B) { benchRoundTrip(b, mode) })
	}
}

// fiveThousand makes a committed 5,000-file repository with an
// uncommitted edit (the requester) and a clone of it (a node's checkout);
// with behind, the requester has one more commit than the clone.
func fiveThousand(b *testing.B, behind bool) (requester, node string) {
	needGit(b)
	requester = b.TempDir()
	testfiles.Git(b, requester, "init", "-q")
	for i := range 5000 {
		p := filepath.Join(requester, fmt.Sprintf("pkg%02d/file%04d.go", i%50, i))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(fmt.Sprintf("package pkg\n\nfunc F%d() int { return %d }\n", i, i)), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(requester, ".gitignore"), []byte(".troupe/\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	testfiles.Git(b, requester, "add", "-A")
	testfiles.Git(b, requester, "commit", "-q", "-m", "first")
	node = b.TempDir()
	testfiles.Git(b, node, "clone", "-q", requester, ".")
	if behind {
		if err := os.WriteFile(filepath.Join(requester, "second.go"), []byte("package main\n"), 0o644); err != nil {
			b.Fatal(err)
		}
		testfiles.Git(b, requester, "add", "-A")
		testfiles.Git(b, requester, "commit", "-q", "-m", "second")
	}
	if err := os.WriteFile(filepath.Join(requester, "pkg00/file0000.go"), []byte("package pkg // edited\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	return requester, node
}

func benchRoundTrip(b *testing.B, mode string) {
	requester, node := fiveThousand(b, mode == "behind")
	var n atomic.Int64
	srv := llmtest.New(llmtest.Script{Agents: []llmtest.AgentScript{
		{Match: llmtest.Matcher{Kind: "root"}, Repeat: true, Turns: []llmtest.Turn{
			{ToolCalls: []llmtest.ToolCall{{Name: "delegate", Args: json.RawMessage(`{"type":"worker","task":"add a file"}`)}}},
			{Text: "done"}}},
		{Match: llmtest.Matcher{Kind: "worker"}, Repeat: true, Turns: []llmtest.Turn{
			{Dynamic: func(llmtest.Recorded) llmtest.Turn {
				args, _ := json.Marshal(map[string]string{"path": fmt.Sprintf("new/f%d.go", n.Add(1)), "content": "package new\n"})
				return llmtest.Turn{ToolCalls: []llmtest.ToolCall{{Name: "write_file", Args: args}}}
			}},
			{Text: "wrote it"}}},
	}})
	defer srv.Close()
	s := natsServer(b)
	nd, err := StartNode(b.Context(), NodeOptions{Bus: wrap(b, connect(b, s)), ID: "n1", Kinds: []string{"worker"}, Slots: 1,
		Agent: actors.Options{Workspace: node, Client: modelClient(b, srv), Models: actors.Models{Default: "big"},
			Settings: actors.Settings{PlanFirst: map[string]bool{"worker": false}}, Log: zerolog.Nop()},
		Events: &recorder{}, AckWait: 30 * time.Second, Log: zerolog.Nop()})
	if err != nil {
		b.Fatal(err)
	}
	defer nd.Drain(b.Context())
	ws := requester
	if mode == "no-snapshot" {
		ws = ""
	}
	i := 0
	for b.Loop() {
		i++
		run := fmt.Sprintf("rt%d", i)
		remote, err := StartRemote(b.Context(), RemoteOptions{Bus: wrap(b, connect(b, s)), Run: run, Workspace: ws,
			Placement: map[string]string{"worker": PlaceRemote}, Log: zerolog.Nop()})
		if err != nil {
			b.Fatal(err)
		}
		res, err := actors.Run(b.Context(), actors.Options{Run: run, Workspace: requester, Task: "t", Client: modelClient(b, srv),
			Models: actors.Models{Default: "big"}, Placer: remote.Placer(), OnBudget: remote.ServeBudget,
			Settings: actors.Settings{PlanFirst: map[string]bool{"root": false}}, Log: zerolog.Nop()})
		remote.Close()
		if err != nil || res.Status != actors.StatusCompleted {
			b.Fatalf("run %+v %v", res, err)
		}
		if mode != "no-snapshot" && (len(res.Changes) != 1 || res.Changes[0].Status != "applied") {
			b.Fatalf("changes %+v", res.Changes)
		}
	}
}

// BenchmarkRemoteFanOut20 is one run whose root delegates 20 remote
// explore agents in one turn on a 5,000-file repository (a node of 4
// slots whose checkout has the base commit): snapshots/op is how many
// snapshots of the workspace the requester took for the 20 tasks, and
// wait-ms/task how long a task waited for its snapshot (taken and
// stored), on average.
func BenchmarkRemoteFanOut20(b *testing.B) {
	const fan = 20
	requester, node := fiveThousand(b, false)
	var calls []llmtest.ToolCall
	for i := range fan {
		calls = append(calls, llmtest.ToolCall{Name: "delegate", Args: json.RawMessage(fmt.Sprintf(`{"type":"explore","task":"look %d"}`, i))})
	}
	srv := llmtest.New(llmtest.Script{Agents: []llmtest.AgentScript{
		{Match: llmtest.Matcher{Kind: "root"}, Repeat: true, Turns: []llmtest.Turn{{ToolCalls: calls}, {Text: "done"}}},
		{Match: llmtest.Matcher{Kind: "explore"}, Repeat: true, Turns: []llmtest.Turn{{Text: "nothing here"}}},
	}})
	defer srv.Close()
	s := natsServer(b)
	nd, err := StartNode(b.Context(), NodeOptions{Bus: wrap(b, connect(b, s)), ID: "n1", Kinds: []string{"explore"}, Slots: 4,
		Agent:  actors.Options{Workspace: node, Client: modelClient(b, srv), Models: actors.Models{Default: "big"}, Log: zerolog.Nop()},
		Events: &recorder{}, AckWait: 30 * time.Second, Log: zerolog.Nop()})
	if err != nil {
		b.Fatal(err)
	}
	defer nd.Drain(b.Context())
	var taken, waited int64
	i := 0
	for b.Loop() {
		i++
		run := fmt.Sprintf("fan%d", i)
		remote, err := StartRemote(b.Context(), RemoteOptions{Bus: wrap(b, connect(b, s)), Run: run, Workspace: requester,
			Placement: map[string]string{"explore": PlaceRemote}, Log: zerolog.Nop()})
		if err != nil {
			b.Fatal(err)
		}
		res, err := actors.Run(b.Context(), actors.Options{Run: run, Workspace: requester, Task: "t", Client: modelClient(b, srv),
			Models: actors.Models{Default: "big"}, Placer: remote.Placer(), OnBudget: remote.ServeBudget,
			Settings: actors.Settings{PlanFirst: map[string]bool{"root": false}}, Log: zerolog.Nop()})
		tk, wt := remote.snaps.snd.Counts()
		taken, waited = taken+tk, waited+int64(wt)
		remote.Close()
		if err != nil || res.Status != actors.StatusCompleted {
			b.Fatalf("run %+v %v", res, err)
		}
	}
	b.ReportMetric(float64(taken)/float64(b.N), "snapshots/op")
	b.ReportMetric(float64(waited)/1e6/fan/float64(b.N), "wait-ms/task")
}
