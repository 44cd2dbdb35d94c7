package tools

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"runtime/debug"
	"strings"
	"time"

	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/messages"
	"github.com/troupe-ai/troupe/telemetry"
)

// CallInfo describes one call for the started/finished callbacks.
type CallInfo struct {
	Index       int             `json:"index"`
	ID          string          `json:"id"`
	Name        string          `json:"name"`
	Args        json.RawMessage `json:"args"`
	Duration    time.Duration   `json:"duration"`
	OutputBytes int             `json:"output_bytes"`
	Cached      bool            `json:"cached"`
	// Cacheable says the result could have come from the cache (a
	// read-only cacheable tool, with a cache).
	Cacheable bool `json:"cacheable"`
	// Parallel says the call could run at the same time as another call
	// of its turn: neither waits for the other.
	Parallel  bool `json:"parallel"`
	Truncated bool `json:"truncated"`
	IsError   bool `json:"is_error"`
	// Reads are the read-tracker entries of the files the call touched
	// (path → hex content hash), on finish: what a checkpoint needs so a
	// resumed agent may still edit what this call read or wrote.
	Reads map[string]string `json:"reads,omitempty"`
}

// Hooks are called around every call, from the goroutine running it; they
// must be safe for concurrent use and must not block for long.
type Hooks struct {
	OnStart  func(CallInfo)
	OnFinish func(CallInfo, Result)
}

// Executor runs the tool calls of one model turn for one session: calls run
// concurrently, except Sequential tools (one at a time, in call order) and
// calls touching a path that an earlier mutating call of the turn touches
// (serialized in call order). Each call gets the timeout, cache, truncation
// and panic policies; results come back in call order.
type Executor struct {
	// Tools are the tools the agent may call.
	Tools *Registry
	// Known, if set, is the full registry: a call to a tool in Known but
	// not in Tools is refused as not allowed for Kind, naming the allowed
	// tools.
	Known *Registry
	Kind  string
	// Hint is added to a refusal (e.g. how to unlock a tool).
	Hint    string
	Session *Session
	Hooks   Hooks
	Log     zerolog.Logger
	// Approved maps a call ID to the Preview.Fingerprint of the change a
	// person approved for it: the call writes only that change.
	Approved map[string]string
	// Meanwhile, when set, is called once by Run on its own goroutine
	// while the calls run (before the only call, when there is one): the
	// caller's work that may overlap them and that they may wait for.
	Meanwhile func()
}

type pending struct {
	call     messages.ToolCall
	tool     Tool
	spec     Spec
	scopes   []string // workspace-relative
	abs      []string // the same paths, absolute
	refused  *Result
	done     chan struct{}
	deps     []chan struct{}
	parallel bool // may run at the same time as another call of the turn
}

// Run executes calls and returns one result per call, in call order. It
// returns when every call has finished; a cancelled ctx makes the calls
// still running end with a cancellation result.
func (e *Executor) Run(ctx context.Context, calls []messages.ToolCall) []Result {
	ps := make([]*pending, len(calls))
	for i, c := range calls {
		ps[i] = e.prepare(c)
	}
	schedule(ps)
	results := make([]Result, len(calls))
	if len(ps) == 1 {
		if e.Meanwhile != nil {
			e.Meanwhile()
		}
		results[0] = e.runOne(ctx, 0, ps[0])
		return results
	}
	for i, p := range ps {
		go func() {
			for _, d := range p.deps {
				<-d
			}
			results[i] = e.runOne(ctx, i, p)
			close(p.done)
		}()
	}
	if e.Meanwhile != nil {
		e.Meanwhile()
	}
	for _, p := range ps {
		<-p.done
	}
	return results
}

func (e *Executor) prepare(c messages.ToolCall) *pending {
	p := &pending{call: c, done: make(chan struct{})}
	t, ok := e.Tools.Get(c.Name)
	if !ok {
		r := e.Refusal(c.Name)
		p.refused = &r
		return p
	}
	p.tool, p.spec = t, t.Spec()
	if !p.spec.Mutates() && !p.spec.Cacheable {
		return p // no scopes needed: never serialized, never cached
	}
	ws := e.Session.Workspace
	for _, raw := range t.Paths(c.Args) {
		// Mutations resolve symlinks so that two spellings of one file are
		// serialized; reads only need a lexical scope for the cache, which
		// spares a walk of lstat calls on every read.
		resolve := ws.Resolve
		if !p.spec.Mutates() {
			resolve = ws.Lexical
		}
		if abs, err := resolve(raw); err == nil {
			p.abs = append(p.abs, abs)
			p.scopes = append(p.scopes, ws.Rel(abs))
		}
	}
	return p
}

func (e *Executor) Refusal(name string) Result {
	if e.Known != nil {
		if _, ok := e.Known.Get(name); ok {
			kind := e.Kind
			if kind == "" {
				kind = "this"
			}
			r := Errorf("tool %q is not allowed for %s agents; allowed tools: %s", name, kind, strings.Join(e.Tools.Names(), ", "))
			if e.Hint != "" {
				r.Text += ". " + e.Hint
			}
			return r
		}
	}
	return e.Tools.unknownTool(name)
}

func (e *Executor) runOne(ctx context.Context, idx int, p *pending) Result {
	info := CallInfo{Index: idx, ID: p.call.ID, Name: p.call.Name, Args: p.call.Args, Parallel: p.parallel,
		Cacheable: p.tool != nil && p.spec.Cacheable && p.spec.ReadOnly && e.Session.Cache != nil}
	if e.Hooks.OnStart != nil {
		e.Hooks.OnStart(info)
	}
	// Under its agent's span when tracing is on; a delegate call's ctx
	// carries this span to the child it starts.
	ctx, span := telemetry.StartTool(ctx, p.call.Name, p.call.ID)
	start := time.Now()
	res := e.execute(ctx, p)
	info.Duration = time.Since(start)
	if span.Recording() {
		span.EndTool(telemetry.ToolEnd{IsError: res.IsError, Cancelled: res.IsError && ctx.Err() != nil,
			Cached: res.Cached, Truncated: res.Truncated})
	}
	info.OutputBytes = len(res.Text)
	info.Cached, info.Truncated, info.IsError = res.Cached, res.Truncated, res.IsError
	if e.Hooks.OnFinish != nil {
		for abs, h := range e.readsOf(p) {
			if info.Reads == nil {
				info.Reads = map[string]string{}
			}
			info.Reads[abs] = hex.EncodeToString(h[:])
		}
		e.Hooks.OnFinish(info, res)
	}
	return res
}

func (e *Executor) execute(ctx context.Context, p *pending) Result {
	if p.refused != nil {
		return *p.refused
	}
	if err := ctx.Err(); err != nil {
		return cancelled(p.spec.Name, err)
	}
	s := e.Session
	cacheable := p.spec.Cacheable && p.spec.ReadOnly && s.Cache != nil
	var key string
	if cacheable {
		key = CacheKey(p.spec.Name, p.call.Args)
		if r, reads, ok := s.Cache.Get(s.Agent, key); ok {
			for abs, h := range reads {
				s.Reads.recordHash(abs, h)
			}
			return r
		}
	}
	if p.spec.Parallel == Sequential {
		s.shellMu.Lock()
		defer s.shellMu.Unlock()
	}
	var gate *changeGate
	if p.spec.Diff {
		gate = &changeGate{approved: e.Approved[p.call.ID]}
		ctx = withGate(ctx, gate)
	}
	res, err := e.invoke(withCallID(ctx, p.call.ID), p)
	if gate != nil && err == nil && !res.IsError {
		if changes, ok := gate.recorded(); ok {
			res = withDiff(res, changes)
		}
	}
	switch {
	case err != nil && ctx.Err() != nil:
		return cancelled(p.spec.Name, ctx.Err())
	case errors.Is(err, context.DeadlineExceeded):
		res = Errorf("tool %s timed out after %s", p.spec.Name, e.timeoutFor(p.spec))
	case err != nil:
		e.Log.Error().Err(err).Str("tool", p.spec.Name).Msg("tool failed")
		res = Errorf("tool %s failed: %v", p.spec.Name, err)
	}
	if p.spec.Mutates() {
		s.afterMutation() // e.g. a local server may serve what was just changed
	}
	// Before the cache, the spill file and the conversation see it: a
	// command that prints a configured secret (cat of a file holding the
	// API key) hands on "[redacted]" instead.
	if s.Redact != nil {
		res.Text = s.Redact(res.Text)
	}
	if p.spec.Mutates() && s.Cache != nil {
		switch {
		case p.spec.Parallel == Sequential:
			s.Cache.InvalidateAll()
		case len(p.scopes) > 0:
			s.Cache.Invalidate(p.scopes)
		case !res.IsError:
			s.Cache.InvalidateAll()
		}
	}
	res = e.truncate(p.spec, res)
	if cacheable && !res.IsError {
		s.Cache.Put(s.Agent, key, res, p.scopes, e.readsOf(p))
	}
	return res
}

// toolGrace is how long a tool whose context ended may take to return
// before the executor stops waiting for it.
const toolGrace = 2 * time.Second

// invoke runs the tool under its timeout and turns a panic into an error.
// The timeout holds whether or not the tool honours its context: a tool
// still running toolGrace after its context ended is abandoned (its
// goroutine is left to finish on its own) and the call is a timeout.
func (e *Executor) invoke(ctx context.Context, p *pending) (res Result, err error) {
	ctx, cancel := context.WithTimeout(ctx, e.timeoutFor(p.spec))
	defer cancel()
	type outcome struct {
		res Result
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		var o outcome
		defer func() {
			if v := recover(); v != nil {
				e.Log.Error().Str("tool", p.spec.Name).Interface("panic", v).Bytes("stack", debug.Stack()).Msg("tool panicked")
				o = outcome{Errorf("tool %s crashed: %v (this is a bug in the tool, not in your call; try another approach)", p.spec.Name, v), nil}
			}
			done <- o
		}()
		o.res, o.err = p.tool.Run(ctx, e.Session, p.call.Args)
	}()
	select {
	case o := <-done:
		res, err = o.res, o.err
	case <-ctx.Done():
		grace := time.NewTimer(toolGrace)
		defer grace.Stop()
		select {
		case o := <-done:
			res, err = o.res, o.err
		case <-grace.C:
			e.Log.Warn().Str("tool", p.spec.Name).Msg("tool ignored its context; abandoned")
			return Result{}, ctx.Err()
		}
	}
	if err == nil && ctx.Err() == context.DeadlineExceeded && !res.IsError {
		// The tool returned normally but only because its context ended.
		err = ctx.Err()
	}
	return res, err
}

// maxSequentialTimeout bounds tools that time themselves (shell allows up
// to 600 s): the executor's own timeout is only a backstop for them.
const maxSequentialTimeout = 11 * time.Minute

func (e *Executor) timeoutFor(spec Spec) time.Duration {
	if spec.Timeout > 0 {
		return spec.Timeout
	}
	if spec.Parallel == Sequential {
		return maxSequentialTimeout
	}
	return e.Session.Config.timeout()
}

func (e *Executor) truncate(spec Spec, res Result) Result {
	tr := e.Session.Config.truncation(spec.Name, spec.Truncation)
	cut := tr.Apply(res.Text)
	if !cut.Truncated {
		return res
	}
	path := ""
	if e.Session.Spill != nil {
		p, err := e.Session.Spill.Save(spec.Name, res.Text)
		if err != nil {
			e.Log.Warn().Err(err).Str("tool", spec.Name).Msg("spill truncated output")
		} else {
			path = p
			if e.Session.Artifacts != nil {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				h, err := e.Session.Artifacts.Put(ctx, filepath.Base(p), strings.NewReader(res.Text))
				cancel()
				if err != nil {
					e.Log.Warn().Err(err).Str("tool", spec.Name).Msg("keep spilled output as an artifact")
				} else {
					path += " (from any node of the run: " + h + ")"
				}
			}
		}
	}
	text := cut.Text
	if !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	res.Text = text + tr.Notice(cut, path)
	res.Truncated, res.SpillPath = true, path
	return res
}

// readsOf collects the read-tracker hashes a call recorded, so a cache hit
// by another session registers the same reads (and stays exact about what
// content the model saw).
func (e *Executor) readsOf(p *pending) map[string][sha256.Size]byte {
	var m map[string][sha256.Size]byte
	for _, abs := range p.abs {
		// Read-only scopes are lexical; the tracker keys real paths.
		if real, err := e.Session.Workspace.Resolve(abs); err == nil {
			abs = real
		}
		if h, ok := e.Session.Reads.hash(abs); ok {
			if m == nil {
				m = map[string][sha256.Size]byte{}
			}
			m[abs] = h
		}
	}
	return m
}

func cancelled(tool string, err error) Result {
	return Errorf("tool %s cancelled: %v", tool, err)
}

// String renders a CallInfo for logs.
func (c CallInfo) String() string {
	return fmt.Sprintf("%s#%d %s (%d bytes)", c.Name, c.Index, c.Duration, c.OutputBytes)
}
