package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/budget"
	"github.com/troupe-ai/troupe/bus"
	"github.com/troupe-ai/troupe/cluster"
	"github.com/troupe-ai/troupe/llm/llmtest"
	"github.com/troupe-ai/troupe/messages"
)

// BenchmarkRecoveryAfterSIGKILL measures recovery after SIGKILL with the
// default timing settings: a node process running a task is killed, and
// the time from the kill until the task starts on a second node process
// (ms-restart: the run finds the node lost after two of its heartbeats
// and queues the task again at once; goal ≤ 5 s), and until its result
// reaches the orchestrator side (ms-recovery).
//
// Run: go test -run '^$' -bench RecoveryAfterSIGKILL -benchtime 3x ./tests/e2e
func BenchmarkRecoveryAfterSIGKILL(b *testing.B) {
	if testing.Short() {
		b.Skip("multi-process")
	}
	s := jetStreamServer(b)
	var mu sync.Mutex
	calls := map[string]int{}
	srv := llmtest.New(llmtest.Script{Agents: []llmtest.AgentScript{{Match: llmtest.Matcher{Kind: "explore"}, Repeat: true,
		Turns: []llmtest.Turn{{Dynamic: func(req llmtest.Recorded) llmtest.Turn {
			mu.Lock()
			defer mu.Unlock()
			if calls[req.Agent]++; calls[req.Agent] == 1 { // the first attempt hangs until its node dies
				return llmtest.Turn{Text: "never", Latency: llmtest.Duration(time.Hour)}
			}
			return llmtest.Turn{Text: "main.go:3"}
		}}}}}})
	defer srv.Close()
	ws := b.TempDir()
	must(b, os.WriteFile(filepath.Join(ws, "main.go"), []byte("package main\n\nfunc main() {}\n"), 0o644))
	nc, err := nats.Connect(s.ClientURL())
	must(b, err)
	defer nc.Close()
	conn, err := bus.Wrap(nc, "")
	must(b, err)
	node := func() *proc {
		p := start(b, bin.node, modelEnv(srv), "--nats", s.ClientURL(), "--workspace", ws, "--slots", "1")
		p.waitStderr(" ready", 30*time.Second)
		return p
	}
	var total, restart time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		run := fmt.Sprintf("recovery-%d", i)
		victim := node()
		remote, err := cluster.StartRemote(b.Context(), cluster.RemoteOptions{Bus: conn, Run: run,
			Placement: map[string]string{"explore": cluster.PlaceRemote}, Log: zerolog.Nop()})
		must(b, err)
		sys := actor.NewActorSystem()
		pid, err := budget.Spawn(sys.Root, run, budget.Limits{Tokens: 1 << 40})
		must(b, err)
		must(b, remote.ServeBudget(budget.NewClient(sys.Root, pid)))
		started := make(chan struct{}, 4)
		sub, err := nc.Subscribe("troupe.ctl."+run+".*.started", func(*nats.Msg) { started <- struct{}{} })
		must(b, err)
		child, err := remote.Placer().Place(b.Context(), actors.ChildTask{V: messages.ProtocolVersion, Run: run, ID: fmt.Sprintf("explore-%d", i),
			Parent: "root", Kind: "explore", Task: "q: where is main?", Model: "small"})
		must(b, err)
		done := make(chan actors.AgentResult, 1)
		go func() { r, _ := child.Start(context.Background()); done <- r }()
		<-started // the victim runs it
		second := node()
		b.StartTimer()
		killed := time.Now()
		must(b, victim.cmd.Process.Signal(syscall.SIGKILL))
		<-started // the second node runs it
		restart += time.Since(killed)
		res := <-done
		total += time.Since(killed)
		b.StopTimer()
		if res.Status != actors.StatusCompleted {
			b.Fatalf("result after the kill: %+v", res)
		}
		_ = sub.Unsubscribe()
		remote.Close()
		_ = budget.Stop(sys.Root, pid)
		sys.Shutdown()
		must(b, second.cmd.Process.Signal(syscall.SIGTERM))
		second.wait(time.Minute)
		victim.wait(time.Minute)
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms-recovery")
	b.ReportMetric(float64(restart.Milliseconds())/float64(b.N), "ms-restart")
}
