package e2e

import (
	"encoding/json"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/troupe-ai/troupe/llm/llmtest"
)

// stallProxy forwards TCP connections to target and can stall them all:
// paused, it reads no more from either side, so the bytes stay in the
// kernel's buffers and neither end sees the connection close.
type stallProxy struct {
	ln     net.Listener
	target string

	mu     sync.Mutex
	cond   *sync.Cond
	paused bool
	conns  []net.Conn
}

func newStallProxy(t *testing.T, target string) *stallProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	p := &stallProxy{ln: ln, target: target}
	p.cond = sync.NewCond(&p.mu)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

func (p *stallProxy) url() string { return "nats://" + p.ln.Addr().String() }

func (p *stallProxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, up)
		p.mu.Unlock()
		go p.pipe(up, c)
		go p.pipe(c, up)
	}
}

// pipe copies src to dst, holding each read while the proxy is paused.
func (p *stallProxy) pipe(dst, src net.Conn) {
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32<<10)
	for {
		p.mu.Lock()
		for p.paused {
			p.cond.Wait()
		}
		p.mu.Unlock()
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			for p.paused {
				p.cond.Wait()
			}
			p.mu.Unlock()
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (p *stallProxy) pause(on bool) {
	p.mu.Lock()
	p.paused = on
	p.mu.Unlock()
	p.cond.Broadcast()
}

func (p *stallProxy) close() {
	_ = p.ln.Close()
	p.pause(false)
	p.mu.Lock()
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
}

// TestStalledNodeNeverRunsATaskTwiceAtOnce: with the default timing
// settings (only the model's latency scripted), a node whose connection
// to NATS stalls (not closed: it sees nothing wrong) while its agent
// waits on the model stops that agent before the run may hand the task
// to the other node, which finishes it: the task's model calls from the
// two nodes never overlap in time (as the model server saw them), and the
// stalled node, back, drops its copy's result.
func TestStalledNodeNeverRunsATaskTwiceAtOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process")
	}
	s := jetStreamServer(t)
	addr := strings.TrimPrefix(s.ClientURL(), "nats://")

	held := make(chan string, 1)
	var once sync.Once
	args, _ := json.Marshal(map[string]string{"type": "explore", "task": "q0: where is main?"})
	srv := llmtest.New(llmtest.Script{Agents: []llmtest.AgentScript{
		{Match: llmtest.Matcher{Kind: "root"}, Turns: []llmtest.Turn{{ToolCalls: []llmtest.ToolCall{{Name: "delegate", Args: args}}}, {Text: "all answered"}}},
		{Match: llmtest.Matcher{Kind: "explore"}, Repeat: true, Turns: []llmtest.Turn{{Dynamic: func(req llmtest.Recorded) llmtest.Turn {
			first := false
			once.Do(func() { first = true; held <- byKey(req) })
			if first { // the first node's call waits on the model until its client gives up
				return llmtest.Turn{Latency: llmtest.Duration(10 * time.Minute), Text: "q0: main.go:3"}
			}
			return llmtest.Turn{Text: "q0: main.go:3"}
		}}}},
	}})
	defer srv.Close()
	ws := repo(t, "")
	proxies, nodes := map[string]*stallProxy{}, map[string]*proc{}
	for _, key := range []string{"sk-a", "sk-b"} {
		proxies[key] = newStallProxy(t, addr)
		nodes[key] = start(t, bin.node, append(modelEnv(srv), "OPENAI_API_KEY="+key), "--nats", proxies[key].url(), "--workspace", ws, "--slots", "1")
		nodes[key].waitStderr(" ready", 30*time.Second)
	}
	run := start(t, bin.orchestrator, modelEnv(srv), "run", "--workspace", ws, "--json", "--nats", s.ClientURL(),
		"--placement", "explore=remote", "find main")
	var victim string
	select {
	case victim = <-held:
	case <-time.After(time.Minute):
		t.Fatalf("no node called the model:\n%s", run.errs())
	}
	proxies[victim].pause(true)
	stalled := time.Now()
	res := runJSON(t, run)
	if res.Status != "completed" || res.Text != "all answered" {
		t.Fatalf("run: %+v\n%s", res, run.errs())
	}
	// The stalled node's call ended: its agent was stopped, not answered.
	poll(t, time.Minute, func() error {
		if n := srv.InFlight(); n > 0 {
			return fmt.Errorf("%d model calls in flight", n)
		}
		return nil
	})
	proxies[victim].pause(false)
	nodes[victim].waitStderr("its result is dropped", time.Minute)
	if !strings.Contains(nodes[victim].errs(), "claim given up") {
		t.Errorf("the stalled node never gave its claim up:\n%s", nodes[victim].errs())
	}

	byNode := map[string][]llmtest.Recorded{}
	for _, r := range srv.Requests() {
		if r.Kind == "explore" {
			byNode[byKey(r)] = append(byNode[byKey(r)], r)
		}
	}
	other := "sk-a"
	if victim == other {
		other = "sk-b"
	}
	if len(byNode[victim]) == 0 || len(byNode[other]) == 0 {
		t.Fatalf("calls: victim %d, other %d", len(byNode[victim]), len(byNode[other]))
	}
	for _, v := range byNode[victim] {
		if !v.Canceled || v.Ended.IsZero() {
			t.Errorf("the stalled node's call %d was not given up (canceled %v)", v.Seq, v.Canceled)
		}
		for _, o := range byNode[other] {
			if v.Received.Before(o.Ended) && o.Received.Before(v.Ended) {
				t.Errorf("the task ran on both nodes at once: call %d (stalled node) %s–%s, call %d %s–%s", v.Seq,
					v.Received.Format(time.StampMilli), v.Ended.Format(time.StampMilli), o.Seq, o.Received.Format(time.StampMilli), o.Ended.Format(time.StampMilli))
			}
		}
	}
	t.Logf("stall → the stalled node's call given up %s, → the other node's first call %s",
		byNode[victim][0].Ended.Sub(stalled).Round(time.Millisecond), byNode[other][0].Received.Sub(stalled).Round(time.Millisecond))
	if t.Failed() {
		t.Logf("run:\n%s\nstalled node:\n%s", run.errs(), nodes[victim].errs())
	}
}
