package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/troupe-ai/troupe/messages"
)

type ctxT = context.Context

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// calls builds tool calls from name/args pairs.
func calls(pairs ...string) []messages.ToolCall {
	var out []messages.ToolCall
	for i := 0; i+1 < len(pairs); i += 2 {
		out = append(out, messages.ToolCall{ID: fmt.Sprintf("c%d", i/2), Name: pairs[i], Args: json.RawMessage(pairs[i+1])})
	}
	return out
}

type pathArg struct {
	Path string `json:"path"`
	N    int    `json:"n,omitempty"`
}

func (p pathArg) TouchedPaths() []string { return []string{p.Path} }

// A mutation tool that records, per path, how many calls are active at once
// and the order calls ran in.
type mutProbe struct {
	mu        sync.Mutex
	active    map[string]int
	maxActive map[string]int
	order     []int
}

func (m *mutProbe) tool() Tool {
	m.active, m.maxActive = map[string]int{}, map[string]int{}
	return New(Spec{Name: "mut", Parallel: PerPath}, func(_ ctxT, _ *Session, p pathArg) (Result, error) {
		m.mu.Lock()
		m.active[p.Path]++
		if m.active[p.Path] > m.maxActive[p.Path] {
			m.maxActive[p.Path] = m.active[p.Path]
		}
		m.order = append(m.order, p.N)
		m.mu.Unlock()
		for range 2000 {
			runtimeGosched()
		}
		m.mu.Lock()
		m.active[p.Path]--
		m.mu.Unlock()
		return Text(fmt.Sprint(p.N)), nil
	})
}

func TestExecutorRunsCallsConcurrentlyInCallOrder(t *testing.T) {
	t.Parallel()
	const n = 6
	var started atomic.Int32
	all := make(chan struct{})
	barrier := New(Spec{Name: "barrier", ReadOnly: true}, func(ctx ctxT, _ *Session, p pathArg) (Result, error) {
		if started.Add(1) == n {
			close(all)
		}
		select {
		case <-all: // every call is running at the same time
		case <-time.After(10 * time.Second):
			return Errorf("calls did not run concurrently"), nil
		}
		return Text(p.Path), nil
	})
	ex := &Executor{Tools: NewRegistry(barrier), Session: newTestSession(t)}
	var cs []string
	for i := range n {
		cs = append(cs, "barrier", fmt.Sprintf(`{"path":"f%d"}`, i))
	}
	res := ex.Run(t.Context(), calls(cs...))
	for i, r := range res {
		if r.IsError || r.Text != fmt.Sprintf("f%d", i) {
			t.Errorf("result %d = %q (error %v)", i, r.Text, r.IsError)
		}
	}
}

func TestExecutorSerializesMutationsOfOnePath(t *testing.T) {
	t.Parallel()
	probe := &mutProbe{}
	ex := &Executor{Tools: NewRegistry(probe.tool()), Session: newTestSession(t)}
	var cs []string
	for i := range 8 {
		cs = append(cs, "mut", fmt.Sprintf(`{"path":"same.txt","n":%d}`, i))
	}
	ex.Run(t.Context(), calls(cs...))
	if probe.maxActive["same.txt"] != 1 {
		t.Errorf("mutations of one path overlapped: max %d at once", probe.maxActive["same.txt"])
	}
	for i, n := range probe.order {
		if n != i {
			t.Fatalf("mutations ran out of call order: %v", probe.order)
		}
	}
	// "./same.txt" and "same.txt" are one path once resolved.
	probe2 := &mutProbe{}
	ex2 := &Executor{Tools: NewRegistry(probe2.tool()), Session: newTestSession(t)}
	ex2.Run(t.Context(), calls("mut", `{"path":"same.txt","n":0}`, "mut", `{"path":"./same.txt","n":1}`, "mut", `{"path":"x/../same.txt","n":2}`))
	if probe2.maxActive["same.txt"]+probe2.maxActive["./same.txt"]+probe2.maxActive["x/../same.txt"] != 3 || fmt.Sprint(probe2.order) != "[0 1 2]" {
		t.Errorf("differently spelled paths not serialized: %v", probe2.order)
	}
}

func TestExecutorSequentialToolsRunOneAtATime(t *testing.T) {
	t.Parallel()
	var active, maxActive atomic.Int32
	var mu sync.Mutex
	var order []int
	seq := New(Spec{Name: "seq", Parallel: Sequential}, func(_ ctxT, _ *Session, p pathArg) (Result, error) {
		a := active.Add(1)
		for {
			m := maxActive.Load()
			if a <= m || maxActive.CompareAndSwap(m, a) {
				break
			}
		}
		mu.Lock()
		order = append(order, p.N)
		mu.Unlock()
		for range 2000 {
			runtimeGosched()
		}
		active.Add(-1)
		return Text("ok"), nil
	})
	ex := &Executor{Tools: NewRegistry(seq), Session: newTestSession(t)}
	var cs []string
	for i := range 6 {
		cs = append(cs, "seq", fmt.Sprintf(`{"path":"p%d","n":%d}`, i, i))
	}
	ex.Run(t.Context(), calls(cs...))
	if maxActive.Load() != 1 || fmt.Sprint(order) != "[0 1 2 3 4 5]" {
		t.Errorf("sequential tool: max active %d, order %v", maxActive.Load(), order)
	}
}

func TestExecutorErrorsBecomeResults(t *testing.T) {
	t.Parallel()
	s := newTestSession(t)
	s.Config.Timeout = 20 * time.Millisecond
	slow := New(Spec{Name: "slow", ReadOnly: true}, func(ctx ctxT, _ *Session, _ struct{}) (Result, error) {
		<-ctx.Done()
		return Result{}, ctx.Err()
	})
	boom := New(Spec{Name: "boom", ReadOnly: true}, func(_ ctxT, _ *Session, _ struct{}) (Result, error) {
		panic("boom: a real panic in a tool")
	})
	broken := New(Spec{Name: "broken", ReadOnly: true}, func(_ ctxT, _ *Session, _ struct{}) (Result, error) {
		return Result{}, fmt.Errorf("disk on fire")
	})
	all := NewRegistry(slow, boom, broken, Think0())
	ex := &Executor{Tools: all.Filter([]string{"slow", "boom", "broken"}), Known: all, Kind: "explore", Session: s}
	res := ex.Run(t.Context(), calls("slow", `{}`, "boom", `{}`, "broken", `{}`, "nope", `{}`, "think0", `{}`))
	want := []string{
		"tool slow timed out after 20ms",
		"tool boom crashed: boom: a real panic in a tool",
		"tool broken failed: disk on fire",
		`unknown tool "nope"; available tools: boom, broken, slow`,
		`tool "think0" is not allowed for explore agents; allowed tools: boom, broken, slow`,
	}
	for i, w := range want {
		if !res[i].IsError || !strings.Contains(res[i].Text, w) {
			t.Errorf("call %d: %q, want error containing %q", i, res[i].Text, w)
		}
	}
}

// Think0 is a no-op tool used where a second tool name is needed.
func Think0() Tool {
	return New(Spec{Name: "think0", ReadOnly: true}, func(_ ctxT, _ *Session, _ struct{}) (Result, error) {
		return Text(""), nil
	})
}

func TestExecutorCancellation(t *testing.T) {
	t.Parallel()
	entered := make(chan struct{})
	wait := New(Spec{Name: "wait", ReadOnly: true}, func(ctx ctxT, _ *Session, _ struct{}) (Result, error) {
		close(entered)
		<-ctx.Done()
		return Result{}, ctx.Err()
	})
	ex := &Executor{Tools: NewRegistry(wait), Session: newTestSession(t)}
	ctx, cancel := context.WithCancel(t.Context())
	go func() { <-entered; cancel() }()
	r := ex.Run(ctx, calls("wait", `{}`))[0]
	if !r.IsError || !strings.Contains(r.Text, "tool wait cancelled: context canceled") {
		t.Errorf("got %q", r.Text)
	}
	// A call made after cancellation does not run at all.
	r = ex.Run(ctx, calls("wait", `{}`))[0]
	if !strings.Contains(r.Text, "cancelled") {
		t.Errorf("after cancel: %q", r.Text)
	}
}

func TestExecutorHooks(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var finished []CallInfo
	starts := 0
	s := newTestSession(t)
	echo := New(Spec{Name: "echo", ReadOnly: true, Cacheable: true, Truncation: Head(4)}, func(_ ctxT, _ *Session, p pathArg) (Result, error) {
		return Text("0123456789"), nil
	})
	ex := &Executor{Tools: NewRegistry(echo), Session: s, Hooks: Hooks{
		OnStart:  func(CallInfo) { mu.Lock(); starts++; mu.Unlock() },
		OnFinish: func(c CallInfo, _ Result) { mu.Lock(); finished = append(finished, c); mu.Unlock() },
	}}
	ex.Run(t.Context(), calls("echo", `{"path":"a"}`))
	ex.Run(t.Context(), calls("echo", `{ "path" : "a" }`))
	if starts != 2 || len(finished) != 2 {
		t.Fatalf("starts %d finishes %d", starts, len(finished))
	}
	if finished[0].Cached || !finished[0].Truncated || finished[0].OutputBytes == 0 {
		t.Errorf("first call info %+v", finished[0])
	}
	if !finished[1].Cached {
		t.Errorf("second call (same args, other spacing) not served from cache: %+v", finished[1])
	}
}

func runtimeGosched() { runtime.Gosched() }

func BenchmarkExecutorOverhead(b *testing.B) {
	ws, err := NewWorkspace(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	s := NewSession("bench", ws, Config{})
	noop := New(Spec{Name: "noop", ReadOnly: true}, func(_ ctxT, _ *Session, p pathArg) (Result, error) {
		return Text(p.Path), nil
	})
	ex := &Executor{Tools: NewRegistry(noop), Session: s}
	one := calls("noop", `{"path":"a.go"}`)
	four := calls("noop", `{"path":"a.go"}`, "noop", `{"path":"b.go"}`, "noop", `{"path":"c.go"}`, "noop", `{"path":"d.go"}`)
	b.Run("one-call", func(b *testing.B) {
		for b.Loop() {
			ex.Run(context.Background(), one)
		}
	})
	cached := New(Spec{Name: "cread", ReadOnly: true, Cacheable: true}, func(_ ctxT, _ *Session, p pathArg) (Result, error) {
		return Text(p.Path), nil
	})
	mut := New(Spec{Name: "mut", Parallel: PerPath}, func(_ ctxT, _ *Session, p pathArg) (Result, error) {
		return Text(p.Path), nil
	})
	ex2 := &Executor{Tools: NewRegistry(cached, mut), Session: s}
	b.Run("cacheable-read-hit", func(b *testing.B) {
		c := calls("cread", `{"path":"src/a.go"}`)
		for b.Loop() {
			ex2.Run(context.Background(), c)
		}
	})
	b.Run("mutation-with-invalidation", func(b *testing.B) {
		c := calls("mut", `{"path":"src/a.go"}`)
		for b.Loop() {
			ex2.Run(context.Background(), c)
		}
	})
	b.Run("four-calls-per-turn", func(b *testing.B) {
		for b.Loop() {
			ex.Run(context.Background(), four)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*4)/1000, "µs/call")
	})
}

// A read served from the shared cache registers the read in the second
// session too, also when the path goes through a symlinked directory, so
// that session may edit the file.
func TestCacheHitRegistersReadThroughSymlink(t *testing.T) {
	t.Parallel()
	a := newTestSession(t)
	writeFile(t, a, "real/f.txt", "one\n")
	if err := os.Symlink(filepath.Join(a.Workspace.Root(), "real"), filepath.Join(a.Workspace.Root(), "link")); err != nil {
		t.Fatal(err)
	}
	b := &Session{Agent: "b", Workspace: a.Workspace, Reads: NewReadTracker(), Todos: &TodoList{}, Cache: a.Cache, Spill: a.Spill}
	reg := NewRegistry(ReadFile(), EditFile())
	exA := &Executor{Tools: reg, Session: a}
	exB := &Executor{Tools: reg, Session: b}
	read := calls("read_file", `{"path":"link/f.txt"}`)
	if r := exA.Run(t.Context(), read)[0]; r.IsError || r.Cached {
		t.Fatalf("first read: %+v", r)
	}
	if r := exB.Run(t.Context(), read)[0]; !r.Cached {
		t.Fatalf("second session's read not served from the cache")
	}
	r := exB.Run(t.Context(), calls("edit_file", `{"path":"link/f.txt","old_string":"one","new_string":"two"}`))[0]
	if r.IsError {
		t.Fatalf("edit after a cached read refused: %s", r.Text)
	}
}

// Meanwhile runs once, on Run's goroutine, while the calls run: calls
// that wait for it finish; a lone call runs after it.
func TestExecutorMeanwhile(t *testing.T) {
	t.Parallel()
	for _, n := range []int{1, 3} {
		var ran atomic.Int32
		gate := make(chan struct{})
		waiter := New(Spec{Name: "waiter", ReadOnly: true}, func(ctx ctxT, _ *Session, p pathArg) (Result, error) {
			select {
			case <-gate: // Meanwhile has run
			case <-ctx.Done():
				return Result{}, ctx.Err()
			}
			return Text(p.Path), nil
		})
		ex := &Executor{Tools: NewRegistry(waiter), Session: newTestSession(t),
			Meanwhile: func() { ran.Add(1); close(gate) }}
		var cs []string
		for i := range n {
			cs = append(cs, "waiter", fmt.Sprintf(`{"path":"f%d"}`, i))
		}
		for i, r := range ex.Run(t.Context(), calls(cs...)) {
			if r.IsError || r.Text != fmt.Sprintf("f%d", i) {
				t.Errorf("%d calls: result %d = %q (error %v)", n, i, r.Text, r.IsError)
			}
		}
		if ran.Load() != 1 {
			t.Errorf("%d calls: Meanwhile ran %d times", n, ran.Load())
		}
	}
}
