package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/bus"
	"github.com/troupe-ai/troupe/cluster"
	"github.com/troupe-ai/troupe/llm/llmtest"
)

// lostRun is the script of TestOrchestratorKilledRunIsLostAndResumed: a
// root that delegates tasks explore tasks at once, whose first quick
// tasks to reach the model answer at once; the others go on with one
// tool call a second until the run is resumed, and then answer.
type lostRun struct {
	tasks, quick int
	resumed      atomic.Bool

	mu    sync.Mutex
	kinds map[string]bool // task → quick
}

func (l *lostRun) script() llmtest.Script {
	var calls []llmtest.ToolCall
	for i := 0; i < l.tasks; i++ {
		args, _ := json.Marshal(map[string]string{"type": "explore", "task": fmt.Sprintf("q%d: where is main?", i)})
		calls = append(calls, llmtest.ToolCall{Name: "delegate", Args: args})
	}
	return llmtest.Script{Agents: []llmtest.AgentScript{
		{Match: llmtest.Matcher{Kind: "root"}, Repeat: true, Turns: []llmtest.Turn{{Dynamic: func(req llmtest.Recorded) llmtest.Turn {
			for _, m := range req.Messages {
				if m.Role == "tool" {
					return llmtest.Turn{Text: "all answered"}
				}
			}
			return llmtest.Turn{ToolCalls: calls}
		}}}},
		{Match: llmtest.Matcher{Kind: "explore"}, Repeat: true, Turns: []llmtest.Turn{{Dynamic: func(req llmtest.Recorded) llmtest.Turn {
			q := task(req)
			l.mu.Lock()
			quick, ok := l.kinds[q]
			if !ok {
				quick = l.quickCount() < l.quick
				l.kinds[q] = quick
			}
			l.mu.Unlock()
			if quick || l.resumed.Load() {
				return llmtest.Turn{Text: q + ": main.go:3"}
			}
			args, _ := json.Marshal(map[string]string{"pattern": fmt.Sprintf("main%d", req.Round)})
			return llmtest.Turn{Latency: llmtest.Duration(time.Second), ToolCalls: []llmtest.ToolCall{{Name: "grep", Args: args}}}
		}}}},
	}}
}

func (l *lostRun) quickCount() int {
	n := 0
	for _, q := range l.kinds {
		if q {
			n++
		}
	}
	return n
}

// started counts the tasks that reached the model, quick and not.
func (l *lostRun) started() (quick, slow int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, q := range l.kinds {
		if q {
			quick++
		} else {
			slow++
		}
	}
	return quick, slow
}

// task is the "qN" an explore request works on.
func task(r llmtest.Recorded) string { return strings.SplitN(r.Task, ":", 2)[0] }

// TestOrchestratorKilledRunIsLostAndResumed: with the default timing
// settings (only the model's latency scripted), an orchestrator SIGKILLed
// while 60 remote tasks are finished, running or queued is lost: no model
// call for the run reaches the model after its lease expired (nodes stop
// its agents and drop its queued tasks), watch --from-start marks the run
// lost and ends, its task records stay, and resume --nats --placement
// finishes it with no model call for the tasks that had finished and one
// for each of the others; the records go with the run's clean end.
func TestOrchestratorKilledRunIsLostAndResumed(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process")
	}
	const tasks, quick, nodes, slots = 60, 40, 2, 8
	s := jetStreamServer(t)
	url := s.ClientURL()

	l := &lostRun{tasks: tasks, quick: quick, kinds: map[string]bool{}}
	srv := llmtest.New(l.script())
	defer srv.Close()
	ws := repo(t, "")
	var ns []*proc
	for i := 0; i < nodes; i++ {
		n := start(t, bin.node, modelEnv(srv), "--nats", url, "--workspace", ws, "--slots", fmt.Sprint(slots))
		n.waitStderr(" ready", 30*time.Second)
		ns = append(ns, n)
	}
	nodeLogs := func() string {
		var b strings.Builder
		for i, n := range ns {
			fmt.Fprintf(&b, "node %d:\n%s\n", i, n.errs())
		}
		return b.String()
	}
	var run *proc
	defer func() {
		if t.Failed() {
			t.Logf("nodes:\n%s", nodeLogs())
			if run != nil {
				t.Logf("killed run:\n%s", run.errs())
			}
		}
	}()
	conn, err := bus.Connect(t.Context(), bus.ConnectOptions{URLs: url}, zerolog.Nop())
	must(t, err)
	defer conn.Close()
	began := time.Now()
	run = start(t, bin.orchestrator, modelEnv(srv), "run", "--workspace", ws, "--json", "--nats", url,
		"--placement", "explore=remote", "find main")
	// Killed once the quick tasks answered, every slot holds a slow one
	// and every task was queued: the rest wait in the queue.
	poll(t, 2*time.Minute, func() error {
		if q, s := l.started(); q < quick || s < nodes*slots {
			return fmt.Errorf("%d quick and %d slow tasks started", q, s)
		}
		st, err := conn.JetStream().Stream(t.Context(), conn.Names().Tasks)
		if err != nil {
			return err
		}
		if n := st.CachedInfo().State.LastSeq; n < tasks {
			return fmt.Errorf("%d of %d tasks queued", n, tasks)
		}
		return nil
	})
	must(t, run.cmd.Process.Signal(syscall.SIGKILL))
	killed := time.Now()
	run.wait(time.Minute)
	runID := ""
	for _, r := range srv.Requests() {
		runID = r.Run
	}
	records := cluster.RecordsPath(stateDirOf(t, ws), runID)
	if _, err := os.Stat(records); err != nil {
		t.Fatalf("the killed run's task records: %v", err)
	}

	// The lease expires a lease after its last heartbeat, as the server
	// stored it.
	kv, err := conn.JetStream().KeyValue(t.Context(), conn.Names().Runs)
	must(t, err)
	e, err := kv.Get(t.Context(), runID)
	must(t, err)
	expiry := e.Created().Add(cluster.DefaultRunLease)

	w := start(t, bin.orchestrator, []string{"NO_COLOR=1"}, "watch", "--nats", url, "--from-start", "--json", "--run", runID)
	if code := w.wait(time.Minute); code != 0 || !strings.Contains(w.errs(), "lost") {
		t.Fatalf("watch exited %d:\n%s", code, w.errs())
	}
	watched := time.Now()
	// Every running agent was stopped, and every queued task dropped unrun.
	poll(t, time.Minute, func() error {
		logs := nodeLogs()
		if n := strings.Count(logs, "lease lapsed (its orchestrator is gone): agent stopped"); n != nodes*slots {
			return fmt.Errorf("%d agents stopped for the lapsed lease", n)
		}
		if n := strings.Count(logs, "dropped unrun"); n != tasks-quick-nodes*slots {
			return fmt.Errorf("%d queued tasks dropped", n)
		}
		if n := srv.InFlight(); n > 0 {
			return fmt.Errorf("%d model calls in flight", n)
		}
		return nil
	})
	lost := time.Now()
	l.resumed.Store(true)
	before := len(srv.Requests())
	for _, r := range srv.Requests() {
		if r.Run == runID && r.Received.After(expiry) {
			t.Errorf("model call %d for %s %s after the run's lease expired", r.Seq, r.Kind, task(r))
		}
	}

	// The resume line watch printed, run as copied (with --json).
	resumed := start(t, "/bin/sh", modelEnv(srv), "-c", resumeLine(t, w.out(), runID)+" --json")
	res := runJSON(t, resumed)
	if res.Status != "completed" || res.Text != "all answered" {
		t.Fatalf("resumed: %+v\n%s", res, resumed.errs())
	}
	t.Logf("run to kill %s; from the kill: lease expiry %s, watch's lost %s, all agents stopped and queued tasks dropped %s; resume %s",
		killed.Sub(began).Round(time.Millisecond), expiry.Sub(killed).Round(time.Millisecond), watched.Sub(killed).Round(time.Millisecond),
		lost.Sub(killed).Round(time.Millisecond), time.Since(lost).Round(time.Millisecond))
	after := map[string]int{}
	for _, r := range srv.Requests()[before:] {
		if r.Kind == "explore" {
			after[task(r)]++
		}
	}
	l.mu.Lock()
	for i := 0; i < tasks; i++ {
		q := fmt.Sprintf("q%d", i)
		want := 1 // one call on resume for a task that never finished
		if l.kinds[q] {
			want = 0 // none for one that had
		}
		if after[q] != want {
			t.Errorf("%s (quick %v): %d model calls on resume, want %d", q, l.kinds[q], after[q], want)
		}
	}
	l.mu.Unlock()
	if _, err := os.Stat(records); !os.IsNotExist(err) {
		t.Errorf("the task records of the run that ended: %v", err)
	}
	var left []string
	for _, dir := range []string{filepath.Join(ws, ".troupe"), stateDirOf(t, ws)} {
		_ = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
			// The nodes' snapshot worktrees (they share the workspace here)
			// are the nodes' to prune, not the run's.
			if err == nil && !d.IsDir() && strings.Contains(path, runID) && !strings.Contains(path, string(filepath.Separator)+"snapshots"+string(filepath.Separator)) {
				left = append(left, path)
			}
			return nil
		})
	}
	sort.Strings(left)
	if len(left) > 0 {
		t.Errorf("files of the finished run left behind: %v", left)
	}
	if t.Failed() {
		t.Logf("resumed:\n%s", resumed.errs())
	}
}

// resumeLine is the command in the run.lost line watch --json printed for
// run, with the orchestrator it names made this build's.
func resumeLine(t *testing.T, out, run string) string {
	t.Helper()
	for _, l := range strings.Split(out, "\n") {
		var lost struct {
			Type, Run, Source string
			Data              struct{ Resume string }
		}
		if json.Unmarshal([]byte(l), &lost) == nil && lost.Type == "run.lost" && lost.Run == run && lost.Source == "watch" {
			line, ok := strings.CutPrefix(lost.Data.Resume, "orchestrator resume ")
			if !ok {
				t.Fatalf("the resume line %q", lost.Data.Resume)
			}
			return "'" + bin.orchestrator + "' resume " + line
		}
	}
	t.Fatalf("watch --json printed no run.lost line for %s:\n%s", run, out)
	return ""
}
