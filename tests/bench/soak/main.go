// Command soak runs many runs through one node and one orchestrator
// process and checks that neither grows: it is run by tests/bench/soak.sh,
// which builds the node binary it needs.
//
// A real nats-server process (JetStream on disk) carries the runs; a node
// process serves the explore kind; the scripted model is a process of its
// own (this program with -serve-model); this process is the orchestrator and
// runs -runs runs one after another (app/runner, as `orchestrator
// run` does), each a root that delegates -tasks explore tasks placed on
// the node, against llm/llmtest's scripted model. After the run that
// brings the node's tasks to -after (100 by default) and after the last
// run it reads the node's goroutines and resident memory from its
// /metrics (go_goroutines, process_resident_memory_bytes) and its own
// (after a GC), and fails when a figure after the last run is more than
// -limit (10 %) above the one after the first -after tasks.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/app/config"
	"github.com/troupe-ai/troupe/app/runner"
	"github.com/troupe-ai/troupe/llm/llmtest"
)

func main() {
	nodeBin := flag.String("node", "", "the node binary")
	natsBin := flag.String("nats-server", "nats-server", "the nats-server binary")
	runs := flag.Int("runs", 100, "runs, one after another")
	tasks := flag.Int("tasks", 10, "explore tasks per run, placed on the node")
	after := flag.Int("after", 100, "tasks after which the baseline is taken")
	limit := flag.Float64("limit", 0.10, "the growth allowed after the baseline")
	serveModel := flag.Bool("serve-model", false, "be the scripted model server (a process of its own, so that what it records is not counted as the orchestrator's)")
	flag.Parse()
	if *serveModel {
		srv := llmtest.New(script(*tasks))
		fmt.Println(srv.URL())
		select {} // until killed
	}
	if err := soak(*nodeBin, *natsBin, *runs, *tasks, *after, *limit); err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		os.Exit(1)
	}
}

// figures are one process's size at one moment.
type figures struct {
	goroutines int
	rssMB      float64
	heapMB     float64
}

func soak(nodeBin, natsBin string, runs, tasks, after int, limit float64) error {
	if nodeBin == "" {
		return errors.New("-node is required")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir, err := os.MkdirTemp("", "troupe-soak-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	url, stopNATS, err := startNATS(natsBin, filepath.Join(dir, "js"))
	if err != nil {
		return err
	}
	defer stopNATS()
	ws, err := workspace(dir)
	if err != nil {
		return err
	}
	model, stopModel, err := startModel(tasks)
	if err != nil {
		return err
	}
	defer stopModel()
	node, metrics, err := startNode(ctx, nodeBin, url, ws, model)
	if err != nil {
		return err
	}
	defer func() { _ = node.Process.Kill(); _ = node.Wait() }()

	var base, baseSelf figures
	baseAt := max((after+tasks-1)/tasks, 1)
	for i := 1; i <= runs; i++ {
		if err := oneRun(ctx, ws, url, model, i); err != nil {
			return fmt.Errorf("run %d: %w", i, err)
		}
		if i == baseAt || i == runs {
			n, err := settled(metrics)
			if err != nil {
				return err
			}
			self := selfSettled()
			if os.Getenv("SOAK_GOROUTINES") != "" { // to find a leak: this process's goroutines, by stack
				_ = pprof.Lookup("goroutine").WriteTo(os.Stderr, 1)
			}
			if f := os.Getenv("SOAK_HEAP"); f != "" { // and its heap (go tool pprof), one file per reading
				writeHeap(fmt.Sprintf("%s.%d", f, i))
			}
			fmt.Printf("after run %3d (%4d tasks): node %4d goroutines, %6.1f MB RSS, %6.1f MB heap; orchestrator %4d goroutines, %6.1f MB RSS, %6.1f MB heap\n",
				i, i*tasks, n.goroutines, n.rssMB, n.heapMB, self.goroutines, self.rssMB, self.heapMB)
			if i == baseAt {
				base, baseSelf = n, self
			} else {
				return judge(limit, []growth{
					{"node goroutines", float64(base.goroutines), float64(n.goroutines), false},
					{"node RSS", base.rssMB, n.rssMB, false},
					{"orchestrator goroutines", float64(baseSelf.goroutines), float64(self.goroutines), false},
					{"orchestrator RSS", baseSelf.rssMB, self.rssMB, false},
					{"node live heap (info)", base.heapMB, n.heapMB, true},
					{"orchestrator heap (info)", baseSelf.heapMB, self.heapMB, true},
				})
			}
		}
	}
	return nil
}

// growth is one figure before and after.
type growth struct {
	what          string
	before, after float64
	info          bool // shown, not judged
}

// judge prints each figure's growth and fails when one is above limit.
func judge(limit float64, gs []growth) error {
	var over []string
	for _, g := range gs {
		pct := (g.after - g.before) / g.before
		fmt.Printf("%-24s %8.1f -> %8.1f  %+6.1f %%\n", g.what, g.before, g.after, pct*100)
		if pct > limit && !g.info {
			over = append(over, g.what)
		}
	}
	if len(over) > 0 {
		return fmt.Errorf("grew more than %.0f %%: %s", limit*100, strings.Join(over, ", "))
	}
	return nil
}

// script is the model: a root that delegates tasks explore tasks and
// answers, explore agents that grep once and answer; both repeat, for
// every run.
func script(tasks int) llmtest.Script {
	var calls []llmtest.ToolCall
	for i := range tasks {
		args, _ := json.Marshal(map[string]string{"type": "explore", "task": fmt.Sprintf("q%d: where is main?", i)})
		calls = append(calls, llmtest.ToolCall{Name: "delegate", Args: args})
	}
	return llmtest.Script{Agents: []llmtest.AgentScript{
		{Match: llmtest.Matcher{Kind: "root"}, Repeat: true, Turns: []llmtest.Turn{{ToolCalls: calls}, {Text: "all answered"}}},
		{Match: llmtest.Matcher{Kind: "explore"}, Repeat: true, Turns: []llmtest.Turn{
			{ToolCalls: []llmtest.ToolCall{{Name: "grep", Args: json.RawMessage(`{"pattern":"func main"}`)}}},
			{Text: "main.go:3"}}},
	}}
}

// oneRun runs one run as `orchestrator run --placement explore=remote`
// does, in this process.
func oneRun(ctx context.Context, ws, url, model string, i int) error {
	env := map[string]string{"OPENAI_BASE_URL": model, "OPENAI_API_KEY": "sk-soak-0000"}
	cfg, err := runner.LoadConfig(config.Sources{Workspace: ws, Getenv: func(k string) string { return env[k] }},
		runner.Overrides{NATS: url, Placement: "explore=remote", Model: "m1"})
	if err != nil {
		return err
	}
	r, err := runner.Prepare(ctx, runner.Spec{Config: cfg, NATSSetting: "--nats", Workspace: ws,
		Task: fmt.Sprintf("soak run %d", i), Log: zerolog.Nop()})
	if err != nil {
		return err
	}
	defer r.Close()
	res, err := r.Execute(ctx)
	if err != nil {
		return err
	}
	if res.Text != "all answered" {
		return fmt.Errorf("the run ended %q, not with the scripted answer", res.Text)
	}
	return nil
}

// workspace is a small repository the explore agents grep, whose config
// lets the root delegate from round 1.
func workspace(dir string) (string, error) {
	ws := filepath.Join(dir, "ws")
	files := map[string]string{"main.go": "package main\n\nfunc main() {}\n",
		".troupe/config.yaml": "agent:\n  plan_first: {root: false}\n"}
	for name, body := range files {
		p := filepath.Join(ws, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			return "", err
		}
	}
	return ws, nil
}

// startModel starts this program again as the scripted model server and
// returns its URL.
func startModel(tasks int) (string, func(), error) {
	self, err := os.Executable()
	if err != nil {
		return "", nil, err
	}
	cmd := exec.Command(self, "-serve-model", "-tasks", strconv.Itoa(tasks))
	out, err := cmd.StdoutPipe()
	if err != nil {
		return "", nil, err
	}
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	stop := func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		stop()
		return "", nil, fmt.Errorf("the model server: %w", err)
	}
	return strings.TrimSpace(line), stop, nil
}

// startNATS starts nats-server with JetStream on a free loopback port.
func startNATS(bin, store string) (string, func(), error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	_ = l.Close()
	cmd := exec.Command(bin, "-a", "127.0.0.1", "-p", port, "-js", "-sd", store)
	if err := cmd.Start(); err != nil {
		return "", nil, fmt.Errorf("start nats-server (tests/run.sh installs it): %w", err)
	}
	stop := func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }
	deadline := time.Now().Add(15 * time.Second)
	for {
		c, err := net.Dial("tcp", "127.0.0.1:"+port)
		if err == nil {
			_ = c.Close()
			return "nats://127.0.0.1:" + port, stop, nil
		}
		if time.Now().After(deadline) {
			stop()
			return "", nil, fmt.Errorf("nats-server on port %s: %w", port, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

var metricsAt = regexp.MustCompile(`metrics at (http://\S+/metrics)`)

// startNode starts the node process serving explore, and returns the URL
// of its metrics once it is ready.
func startNode(ctx context.Context, bin, url, ws, model string) (*exec.Cmd, string, error) {
	cmd := exec.CommandContext(ctx, bin, "--nats", url, "--workspace", ws, "--kinds", "explore", "--slots", "4",
		"--name", "soak", "--http", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), "OPENAI_BASE_URL="+model, "OPENAI_API_KEY=sk-soak-0000", "NO_COLOR=1")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, "", err
	}
	if err := cmd.Start(); err != nil {
		return nil, "", err
	}
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sent := false
		for sc.Scan() {
			if m := metricsAt.FindStringSubmatch(sc.Text()); m != nil && !sent {
				found <- m[1]
				sent = true
			}
		}
	}()
	select {
	case u := <-found:
		return cmd, u, nil
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		return nil, "", errors.New("the node did not announce its metrics in 30 s")
	}
}

// settled reads the node's figures once its goroutine count has stopped
// moving (the last run's agents are gone): three equal reads in a row, or
// the last of 40 reads; its RSS is the least of those reads (the process
// cannot be made to collect from here, and the runtime returns freed
// memory to the system gradually).
func settled(url string) (figures, error) {
	var last figures
	same, minRSS := 0, 0.0
	for range 40 {
		f, err := scrape(url)
		if err != nil {
			return figures{}, err
		}
		if f.goroutines == last.goroutines {
			same++
		} else {
			same, minRSS = 0, f.rssMB
		}
		minRSS = min(minRSS, f.rssMB)
		last = f
		if same >= 2 {
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	last.rssMB = minRSS
	return last, nil
}

// scrape reads goroutines, RSS and the live heap (after the last
// collection) from a /metrics page.
func scrape(url string) (figures, error) {
	resp, err := http.Get(url)
	if err != nil {
		return figures{}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return figures{}, err
	}
	val := func(name string) float64 {
		m := regexp.MustCompile(`(?m)^` + name + ` (\S+)$`).FindSubmatch(body)
		if m == nil {
			return -1
		}
		v, _ := strconv.ParseFloat(string(m[1]), 64)
		return v
	}
	f := figures{goroutines: int(val("go_goroutines")), rssMB: val("process_resident_memory_bytes") / 1e6,
		heapMB: val("go_gc_heap_live_bytes") / 1e6}
	if f.goroutines < 0 || f.rssMB < 0 {
		return figures{}, fmt.Errorf("the node's metrics lack go_goroutines or process_resident_memory_bytes")
	}
	return f, nil
}

// selfSettled is the least of this process's figures over 35 s after a
// run, read each second after a collection: what the last run leaves
// behind for a while (what its timers hold until they fire, connections
// closing) is not growth.
func selfSettled() figures {
	low := selfFigures()
	for range 35 {
		time.Sleep(time.Second)
		f := selfFigures()
		low.goroutines, low.rssMB, low.heapMB = min(low.goroutines, f.goroutines), min(low.rssMB, f.rssMB), min(low.heapMB, f.heapMB)
	}
	return low
}

// selfFigures are this process's figures after a collection.
func selfFigures() figures {
	runtime.GC()
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return figures{goroutines: runtime.NumGoroutine(), rssMB: rss() / 1e6, heapMB: float64(ms.HeapInuse) / 1e6}
}

// rss is this process's resident memory in bytes, from /proc.
func rss() float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return -1
	}
	m := regexp.MustCompile(`(?m)^VmRSS:\s+(\d+) kB`).FindSubmatch(b)
	if m == nil {
		return -1
	}
	kb, _ := strconv.ParseFloat(string(m[1]), 64)
	return kb * 1000
}

// writeHeap writes this process's heap profile to file.
func writeHeap(file string) {
	f, err := os.Create(file)
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		return
	}
	defer f.Close()
	if err := pprof.WriteHeapProfile(f); err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
	}
}
