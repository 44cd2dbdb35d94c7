package cluster

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/bus"
	"github.com/troupe-ai/troupe/messages"
)

// Control of the agents a node runs. The node subscribes once, with
// wildcards, to every run's control subjects and hands each message to
// the task it names, so starting a task costs no subscription and no
// round trip to the server. A cancel for an agent (or a run) the node is
// not running yet is remembered for a while: a task that arrives just
// after its cancel is not run.

// cancelMemory remembers recent cancels of runs and agents: for
// cancelKeep, and at most cancelMax of them (the oldest go first). Keys
// are queued in the order they came, so forgetting costs nothing per
// cancel but the ones it drops.
type cancelMemory struct {
	mu    sync.Mutex
	keys  map[string]time.Time // run, or run + "." + agent → when
	order []cancelAt           // order[head:] are the remembered ones, oldest first
	head  int
}

type cancelAt struct {
	key string
	at  time.Time
}

// cancelKeep is how long a cancel is remembered; cancelMax bounds how
// many are.
const (
	cancelKeep = 10 * time.Minute
	cancelMax  = 100_000
)

func newCancelMemory() *cancelMemory { return &cancelMemory{keys: map[string]time.Time{}} }

func (c *cancelMemory) add(key string) { c.addAt(key, time.Now()) }

func (c *cancelMemory) addAt(key string, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.keys[key] = now
	c.order = append(c.order, cancelAt{key, now})
	for c.head < len(c.order) && (now.Sub(c.order[c.head].at) > cancelKeep || len(c.order)-c.head > cancelMax) {
		if old := c.order[c.head]; c.keys[old.key].Equal(old.at) {
			delete(c.keys, old.key)
		}
		c.order[c.head] = cancelAt{}
		c.head++
	}
	if c.head > len(c.order)/2 { // compact: each entry is copied O(1) times on average
		c.order = append([]cancelAt(nil), c.order[c.head:]...)
		c.head = 0
	}
}

// size is how many cancels are remembered.
func (c *cancelMemory) size() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.keys)
}

// has reports whether run, or the agent of run, was cancelled recently.
func (c *cancelMemory) has(run, agent string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, k := range []string{run, run + "." + agent} {
		if at, ok := c.keys[k]; ok && time.Since(at) < cancelKeep {
			return true
		}
	}
	return false
}

// subscribeControl subscribes to every run's cancel, input and status
// subjects, and to the runs' heartbeats (five subscriptions for the
// node's life).
func (n *Node) subscribeControl() error {
	p := n.o.Bus.Prefix()
	subs := []struct {
		subj string
		fn   nats.MsgHandler
	}{
		{bus.CtlSubject(p, "*", "", ctlCancel), n.onRunCancel},
		{bus.CtlSubject(p, "*", "*", ctlCancel), n.onCancel},
		{bus.CtlSubject(p, "*", "*", ctlInput), n.onInput},
		{bus.CtlSubject(p, "*", "*", ctlStatus), n.onStatus},
		{bus.RunBeatSubject(p, "*"), n.onRunBeat},
	}
	for _, s := range subs {
		sub, err := n.o.Bus.NATS().Subscribe(s.subj, n.notFromStream(s.fn))
		if err != nil {
			return err
		}
		n.ctlMu.Lock()
		n.ctl = append(n.ctl, sub)
		n.ctlMu.Unlock()
	}
	return n.o.Bus.NATS().Flush()
}

// notFromStream wraps a control handler so that it ignores a message a
// JetStream consumer delivered (its reply subject is the server's ack
// subject): a node may pull tasks with any reply subject, and so have
// the server deliver a task onto a control subject; a requester's
// cancel, steer or status request never comes that way.
func (n *Node) notFromStream(fn nats.MsgHandler) nats.MsgHandler {
	return func(m *nats.Msg) {
		if fromStream(m) {
			n.o.Log.Warn().Str("subject", m.Subject).Msg("control message refused: delivered from a stream, not sent by a requester")
			return
		}
		fn(m)
	}
}

// fromStream says m was delivered by a JetStream consumer.
func fromStream(m *nats.Msg) bool { return strings.HasPrefix(m.Reply, "$JS.ACK.") }

func (n *Node) stopControl() {
	n.ctlMu.Lock()
	defer n.ctlMu.Unlock()
	for _, s := range n.ctl {
		if d, err := s.Dropped(); err == nil { // kept: Dropped fails once unsubscribed
			n.ctlOff += uint64(d)
		}
		_ = s.Unsubscribe()
	}
	n.ctl = nil
}

// controlDropped is how many control messages the node's subscriptions
// dropped as a slow consumer (past their pending limits).
func (n *Node) controlDropped() uint64 {
	n.ctlMu.Lock()
	defer n.ctlMu.Unlock()
	total := n.ctlOff
	for _, s := range n.ctl {
		if d, err := s.Dropped(); err == nil {
			total += uint64(d)
		}
	}
	return total
}

// ctlTarget reads run and agent from <prefix>.ctl.<run>[.<agent>].<op>.
func (n *Node) ctlTarget(subject string) (run, agent string) {
	t := strings.Split(strings.TrimPrefix(subject, n.o.Bus.Prefix()+".ctl."), ".")
	switch len(t) {
	case 2:
		return t[0], ""
	case 3:
		return t[0], t[1]
	}
	return "", ""
}

// cancelOf decodes a cancel, or refuses it with a warning. Only a
// well-formed cancel of this protocol version counts: anyone on the
// server may have it publish a JetStream answer (a JSON document of the
// server's, no "v") on any subject, a cancel subject included, by naming
// that subject as the reply of an API request.
func (n *Node) cancelOf(m *nats.Msg) (messages.Cancel, bool) {
	c, err := messages.Decode[messages.Cancel](m.Data, maxRequestBytes)
	if err != nil {
		n.o.Log.Warn().Err(err).Str("subject", m.Subject).Msg("cancel refused: not a requester's cancel")
		return c, false
	}
	return c, true
}

func cancelReason(c messages.Cancel) string {
	reason := "cancelled by the orchestrator"
	if c.Reason != "" {
		reason += ": " + c.Reason
	}
	return reason
}

// onRunCancel cancels every agent of the run on this node.
func (n *Node) onRunCancel(m *nats.Msg) {
	run, _ := n.ctlTarget(m.Subject)
	if run == "" {
		return
	}
	c, ok := n.cancelOf(m)
	if !ok {
		return
	}
	n.gone.add(run)
	reason := cancelReason(c)
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, rt := range n.running {
		if rt.run == run && rt.h != nil { // nil: starting; it checks the cancels once started
			rt.h.Cancel(reason)
		}
	}
}

func (n *Node) onCancel(m *nats.Msg) {
	run, agent := n.ctlTarget(m.Subject)
	if agent == "" {
		return
	}
	c, ok := n.cancelOf(m)
	if !ok {
		return
	}
	if c.Node != "" {
		// A claim revoked: only that node's copy stops.
		if c.Node == n.o.ID {
			n.revoke(run, agent, c.Attempt, c.Reason)
		}
		return
	}
	if rt := n.task(run, agent); rt != nil {
		rt.h.Cancel(cancelReason(c))
		return
	}
	n.gone.add(run + "." + agent)
}

// revoke stops this node's copy of run's agent, whose task the run has
// handed to another node: it publishes no result and settles nothing. A
// copy of a later attempt than upTo (0: any) is another delivery than the
// one revoked (a revoke that arrived after the task was queued again and
// taken here anew) and goes on.
func (n *Node) revoke(run, agent string, upTo int, reason string) {
	n.mu.Lock()
	rt := n.running[run+"."+agent]
	if rt != nil && upTo > 0 && rt.attempt > upTo {
		rt = nil
	}
	if rt != nil {
		rt.revoked.Store(true)
		rt.letGo()
	}
	n.mu.Unlock()
	if rt == nil {
		return
	}
	n.o.Log.Warn().Str("run", run).Str("agent", agent).Msg(reason)
	if h := n.handle(rt); h != nil {
		h.Cancel(reason)
	}
}

// handle is rt's agent (nil while it starts: it checks revoked once started).
func (n *Node) handle(rt *runningTask) *actors.AgentHandle {
	n.mu.Lock()
	defer n.mu.Unlock()
	return rt.h
}

// task is the running task of run's agent on this node, or nil (also
// while its agent is starting).
func (n *Node) task(run, agent string) *runningTask {
	n.mu.Lock()
	defer n.mu.Unlock()
	if rt := n.running[run+"."+agent]; rt != nil && rt.h != nil {
		return rt
	}
	return nil
}

func (n *Node) onInput(m *nats.Msg) {
	rt := n.task(n.ctlTarget(m.Subject))
	if rt == nil || m.Reply == "" {
		return // another node's agent, or ended
	}
	steer, err := messages.Decode[messages.Steer](m.Data, maxRequestBytes)
	if err != nil {
		b, _ := json.Marshal(messages.SteerReply{Error: &messages.Error{Code: messages.CodeBadRequest, Message: err.Error()}})
		_ = m.Respond(b)
		return
	}
	go func() {
		ctx, c := context.WithTimeout(n.ctx, 5*time.Second)
		defer c()
		ok, _ := rt.h.SendInput(ctx, steer.Message)
		b, _ := json.Marshal(messages.SteerReply{Accepted: ok})
		_ = m.Respond(b)
	}()
}

func (n *Node) onStatus(m *nats.Msg) {
	rt := n.task(n.ctlTarget(m.Subject))
	if rt == nil || m.Reply == "" {
		return
	}
	go func() {
		ctx, c := context.WithTimeout(n.ctx, 5*time.Second)
		defer c()
		st, err := rt.h.Status(ctx)
		if err != nil {
			return
		}
		b, _ := json.Marshal(st.Wire())
		_ = m.Respond(b)
	}()
}
