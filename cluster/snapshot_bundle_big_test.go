package cluster

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/internal/testfiles"
	"github.com/troupe-ai/troupe/llm"
	"github.com/troupe-ai/troupe/llm/llmtest"
	"github.com/troupe-ai/troupe/messages"
)

// The sizes of TestRemoteBigSnapshotKeepsMemoryBounded.
const (
	snapshotBig = 200 << 20 // random bytes in the requester's workspace
	// snapshotRSSGrowth is the most the requester's and the node's peak
	// RSS may each grow while the snapshot travels: well under the file,
	// so holding the bundle whole once, on either side, is over it.
	snapshotRSSGrowth = 96 << 10 // KiB
)

// snapshotRSSReport is what a child process (the requester or the node)
// says.
type snapshotRSSReport struct {
	Changes  []messages.ChangeOutcome `json:"changes,omitempty"`
	BeforeKB int64                    `json:"before_kb"` // peak RSS before the snapshot travelled
	MaxKB    int64                    `json:"max_rss_kb"`
}

// growth is how much the peak RSS grew, in KiB.
func (r snapshotRSSReport) growth() int64 { return r.MaxKB - r.BeforeKB }

// A snapshot holding a 200 MiB random file travels to a remote worker on
// a node with the peak RSS of the requester's process and of the node's
// (each its own, the NATS server and git's processes apart) growing by
// less than 64 MiB: the requester's git writes the bundle to a file,
// streamed from there into the snapshot bucket; the node streams the
// object into a file, proves its SHA-256, and git unbundles it from
// there. The worker sees the file byte-exact (it writes its SHA-256,
// which lands in the requester's workspace). "thin": the file is
// uncommitted and the node has the snapshot's base (the thin bundle
// carries it); "whole": the file is committed in a commit the node's
// checkout lacks (the node asks the requester for the whole snapshot).
// The requester and the node are child processes of the test, which runs
// the NATS server and the model.
func TestRemoteBigSnapshotKeepsMemoryBounded(t *testing.T) {
	needGit(t)
	bin := plainBinary(t)
	for _, mode := range []string{"thin", "whole"} {
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()
			requester, nodeWS := filepath.Join(dir, "requester"), filepath.Join(dir, "node")
			if err := os.Mkdir(requester, 0o755); err != nil {
				t.Fatal(err)
			}
			bigRepos(t, requester, nodeWS)
			writeURandom(t, filepath.Join(requester, "big.bin"), snapshotBig)
			if mode == "whole" {
				testfiles.Git(t, requester, "add", "big.bin")
				testfiles.Git(t, requester, "commit", "-q", "-m", "big")
			}
			srv := bigSnapshotScript()
			defer srv.Close()
			env := append(os.Environ(), "TROUPE_SNAPSHOT_RSS_DIR="+dir, "TROUPE_SNAPSHOT_RSS_NATS="+natsServer(t).ClientURL(),
				"TROUPE_SNAPSHOT_RSS_LLM="+srv.URL())
			req, node := runSnapshotRSSChildren(t, bin, env)
			t.Logf("%s: peak RSS of the requester %d MB (%d MB before: grew %d MB), of the node %d MB (%d MB before: grew %d MB)", mode,
				req.MaxKB/1024, req.BeforeKB/1024, req.growth()/1024, node.MaxKB/1024, node.BeforeKB/1024, node.growth()/1024)
			if len(req.Changes) != 1 || req.Changes[0].Status != messages.ChangeStatusApplied {
				t.Fatalf("changes %+v, want one applied", req.Changes)
			}
			want := bigFileSum(t, filepath.Join(requester, "big.bin"))
			if b, err := os.ReadFile(filepath.Join(requester, "seen.txt")); err != nil || !strings.HasPrefix(string(b), want+" ") {
				t.Errorf("the worker saw big.bin as %q (%v), the requester's is %s", b, err, want)
			}
			for who, rep := range map[string]snapshotRSSReport{"the requester's": req, "the node's": node} {
				if rep.growth() > snapshotRSSGrowth && !raceEnabled { // the race detector's shadow memory is not the program's
					t.Errorf("%s peak RSS grew %d MB while the snapshot travelled: want under %d MB", who, rep.growth()/1024, snapshotRSSGrowth/1024)
				}
			}
		})
	}
}

// bigSnapshotScript is the model of the big snapshot's run: the root
// delegates to a worker, which hashes big.bin with the shell tool.
func bigSnapshotScript() *llmtest.Server {
	shell, _ := json.Marshal(map[string]string{"command": "sha256sum big.bin > seen.txt"})
	return llmtest.New(llmtest.Script{Agents: []llmtest.AgentScript{
		{Match: llmtest.Matcher{Kind: "root"}, Turns: []llmtest.Turn{
			{ToolCalls: []llmtest.ToolCall{{Name: "delegate", Args: json.RawMessage(`{"type":"worker","task":"hash the big file"}`)}}},
			{Text: "done"}}},
		{Match: llmtest.Matcher{Kind: "worker"}, Turns: []llmtest.Turn{
			{ToolCalls: []llmtest.ToolCall{{Name: "shell", Args: shell}}},
			{Text: "hashed"}}},
	}})
}

// runSnapshotRSSChildren starts the node's child process, waits until it
// says it is ready, runs the requester's to its end, then stops the node
// (its stdin closed) and returns both reports.
func runSnapshotRSSChildren(t *testing.T, bin string, env []string) (req, node snapshotRSSReport) {
	t.Helper()
	dir := envDir(env)
	nodeCmd := exec.Command(bin, "-test.run=^TestRemoteSnapshotRSSNode$", "-test.v")
	nodeCmd.Env = env
	var nodeErr bytes.Buffer
	nodeCmd.Stderr = &nodeErr
	stdin, err := nodeCmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := nodeCmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := nodeCmd.Start(); err != nil {
		t.Fatal(err)
	}
	var nodeOut bytes.Buffer
	ready, drained := make(chan bool, 1), make(chan struct{})
	go func() {
		defer close(drained)
		sc := bufio.NewScanner(stdout)
		said := false
		for sc.Scan() {
			nodeOut.WriteString(sc.Text() + "\n")
			if !said && sc.Text() == snapshotNodeReady {
				said = true
				ready <- true
			}
		}
		if !said {
			ready <- false
		}
	}()
	stopNode := func() {
		_ = stdin.Close()
		<-drained
		if err := nodeCmd.Wait(); err != nil {
			t.Fatalf("node: %v\n%s%s", err, nodeOut.String(), nodeErr.String())
		}
	}
	if !<-ready {
		stopNode()
		t.Fatalf("the node never said it was ready\n%s%s", nodeOut.String(), nodeErr.String())
	}
	reqCmd := exec.Command(bin, "-test.run=^TestRemoteSnapshotRSSRequester$", "-test.v")
	reqCmd.Env = env
	out, err := reqCmd.CombinedOutput()
	stopNode()
	if err != nil {
		t.Fatalf("requester: %v\n%s", err, out)
	}
	return readSnapshotRSS(t, filepath.Join(dir, "requester.json")), readSnapshotRSS(t, filepath.Join(dir, "node.json"))
}

// snapshotNodeReady is the line the node's child says once it serves.
const snapshotNodeReady = "troupe-snapshot-node-ready"

// envDir is the TROUPE_SNAPSHOT_RSS_DIR of env.
func envDir(env []string) string {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "TROUPE_SNAPSHOT_RSS_DIR="); ok {
			return v
		}
	}
	return ""
}

func readSnapshotRSS(t *testing.T, path string) snapshotRSSReport {
	t.Helper()
	var rep snapshotRSSReport
	data, err := os.ReadFile(path)
	if err == nil {
		err = json.Unmarshal(data, &rep)
	}
	if err != nil {
		t.Fatalf("a child's report: %v", err)
	}
	return rep
}

// snapshotRSSChild is the environment of a child of
// TestRemoteBigSnapshotKeepsMemoryBounded (skipped when it is not one).
func snapshotRSSChild(t *testing.T) (dir string, nc *nats.Conn, model llm.Client) {
	dir = os.Getenv("TROUPE_SNAPSHOT_RSS_DIR")
	if dir == "" {
		t.Skip("a child of TestRemoteBigSnapshotKeepsMemoryBounded")
	}
	nc, err := nats.Connect(os.Getenv("TROUPE_SNAPSHOT_RSS_NATS"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	model, err = llm.NewClient(llm.Config{BaseURL: os.Getenv("TROUPE_SNAPSHOT_RSS_LLM"), Model: "big", Stream: true, MaxAttempts: 2,
		InitialBackoff: time.Millisecond}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	return dir, nc, model
}

// bigSnapshotSettings are both sides' settings: agent.max_change_bytes
// raised over the file, so that nothing but the snapshot is measured.
var bigSnapshotSettings = actors.Settings{PlanFirst: map[string]bool{"root": false, "worker": false}, MaxChangeBytes: remoteBigLimit}

// TestRemoteSnapshotRSSNode is the node of
// TestRemoteBigSnapshotKeepsMemoryBounded (run only as its child): it
// serves until its stdin closes.
func TestRemoteSnapshotRSSNode(t *testing.T) {
	dir, nc, model := snapshotRSSChild(t)
	n, err := StartNode(t.Context(), NodeOptions{Bus: wrap(t, nc), ID: "n1", Kinds: []string{"worker"}, Slots: 2,
		Agent: actors.Options{Workspace: filepath.Join(dir, "node"), Client: model, Models: actors.Models{Default: "big"},
			Settings: bigSnapshotSettings, Log: zerolog.Nop()},
		Events: &recorder{}, AckWait: 5 * time.Second, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	before := peakRSS(t)
	os.Stdout.WriteString(snapshotNodeReady + "\n")
	_, _ = io.Copy(io.Discard, os.Stdin)
	n.Drain(context.Background())
	writeSnapshotRSS(t, filepath.Join(dir, "node.json"), snapshotRSSReport{BeforeKB: before, MaxKB: peakRSS(t)})
}

// TestRemoteSnapshotRSSRequester is the requester of
// TestRemoteBigSnapshotKeepsMemoryBounded (run only as its child): the
// run, its worker placed on the node.
func TestRemoteSnapshotRSSRequester(t *testing.T) {
	dir, nc, model := snapshotRSSChild(t)
	requester := filepath.Join(dir, "requester")
	r, err := StartRemote(t.Context(), RemoteOptions{Bus: wrap(t, nc), Run: "rr", Workspace: requester,
		Placement: map[string]string{"worker": PlaceRemote}, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	before := peakRSS(t)
	res, err := actors.Run(t.Context(), actors.Options{Run: "rr", Workspace: requester, Task: "t", Client: model,
		Models: actors.Models{Default: "big"}, Placer: r.Placer(), OnBudget: r.ServeBudget, Settings: bigSnapshotSettings, Log: zerolog.Nop()})
	if err != nil || res.Status != actors.StatusCompleted {
		t.Fatalf("run %+v %v", res, err)
	}
	writeSnapshotRSS(t, filepath.Join(dir, "requester.json"), snapshotRSSReport{Changes: res.Changes, BeforeKB: before, MaxKB: peakRSS(t)})
}

func writeSnapshotRSS(t *testing.T, path string, rep snapshotRSSReport) {
	t.Helper()
	data, err := json.Marshal(rep)
	if err == nil {
		err = os.WriteFile(path, data, 0o644)
	}
	if err != nil {
		t.Fatal(err)
	}
}
