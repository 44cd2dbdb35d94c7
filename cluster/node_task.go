package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/bus"
	"github.com/troupe-ai/troupe/messages"
	"github.com/troupe-ai/troupe/telemetry"
)

// runningTask is a task a node is running.
type runningTask struct {
	run      string
	agent    string
	h        *actors.AgentHandle
	handBack atomic.Bool   // drain timed out: Nak instead of a result
	revoked  atomic.Bool   // the run handed the task to another node: no result, no ack
	fenced   atomic.Bool   // this node gave the task up (revoked too): the run is told once it is back
	lapsed   atomic.Bool   // the run's lease lapsed: no result, the task dropped
	leased   bool          // the run has a lease
	seq      uint64        // the task's stream sequence
	attempt  int           // the attempt this copy runs
	fenceAt  time.Duration // a heartbeat silence this long stops it (fenceAfter)
	gone     chan struct{} // closed once revoked or lapsed (let go)
	goneOnce sync.Once

	// The progress acks (node_alive.go): closing alive stops them, and
	// aliveDone is closed once they have stopped.
	alive, aliveDone chan struct{}
	quietOnce        sync.Once

	mu  sync.Mutex
	msg jetstream.Msg // the task's latest delivery: the one kept alive and settled
}

// letGo closes gone: the task is no longer this node's, and its agent's
// budget requests give up at once.
func (rt *runningTask) letGo() { rt.goneOnce.Do(func() { close(rt.gone) }) }

func (rt *runningTask) latest() jetstream.Msg {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return rt.msg
}

// redelivered makes m, a later delivery of the same task, the one the
// running copy keeps alive and settles.
func (rt *runningTask) redelivered(m jetstream.Msg) {
	rt.mu.Lock()
	rt.msg = m
	rt.mu.Unlock()
}

// What claim found for a delivered task.
type claimOutcome int

const (
	claimRun      claimOutcome = iota // not running here: run it
	claimAgain                        // delivered again while it runs here: the running copy keeps it
	claimHandBack                     // a stopped copy ends here, or a later one runs: hand the delivery back for a moment
)

// claim registers the task as running on this node (claimRun), or, when
// it runs here already (the server delivered it again, its progress acks
// having been lost), hands m to the running copy (claimAgain).
//
// A running copy that is no longer the task's (its run's lease lapsed, or
// its claim was revoked) keeps nothing: the new delivery waits for it to
// end (claimHandBack). So does a delivery of a later queueing of the task
// (another stream message: the run, or a new life of it, queued the task
// again and counts only on its latest queueing), and the running copy is
// stopped as a revoked one. A delivery of an earlier queueing than the
// running copy's is handed back too, the running copy kept: the run
// deleted it from the queue (so it is not delivered again), or, if it
// still counts on it (a queue made again without its store, numbered from
// 1 again), it is delivered again once the copy here ends or fails for
// good after its attempts, never settled unrun.
func (n *Node) claim(key string, rt *runningTask) claimOutcome {
	n.mu.Lock()
	cur := n.running[key]
	switch {
	case cur == nil:
		n.running[key] = rt
		n.mu.Unlock()
		return claimRun
	case cur.lapsed.Load() || cur.revoked.Load():
		n.mu.Unlock()
		return claimHandBack
	case rt.seq > cur.seq:
		cur.revoked.Store(true)
		cur.letGo()
		h := cur.h
		n.mu.Unlock()
		n.stats.revoked.Add(1)
		n.o.Log.Info().Str("key", key).Msg("the task was queued again: the copy running here stops")
		if h != nil {
			h.Cancel("the task was queued again")
		}
		return claimHandBack
	case rt.seq < cur.seq:
		n.mu.Unlock()
		return claimHandBack
	}
	cur.redelivered(rt.msg)
	n.mu.Unlock()
	return claimAgain
}

// run handles one delivered task: checks it, runs its agent, publishes the
// result and acks. Whatever goes wrong, the message is settled (acked,
// nak'ed or terminated) and the slot freed.
func (n *Node) run(kind string, m jetstream.Msg) {
	defer n.tasks.Done()
	defer n.release(1)
	log := n.o.Log.With().Str("subject", m.Subject()).Logger()
	task, md, ok := n.decode(kind, m, log)
	if !ok {
		return
	}
	task.Attempt = task.Prior + int(md.NumDelivered)
	log = log.With().Str("run", task.Run).Str("agent", task.ID).Int("attempt", task.Attempt).Logger()
	if task.Workspace != "" && n.o.WorkspaceKey != "" && task.Workspace != n.o.WorkspaceKey {
		n.stats.workspace.Add(1)
		why := fmt.Sprintf("node %s serves another repository (%s) than the task's (%s); start it with --workspace on a checkout of the orchestrator's repository",
			n.o.Name, n.o.WorkspaceKey, task.Workspace)
		log.Warn().Msg("task refused: " + why)
		n.refuse(task, newDelivery(task.Secret, task.ID, n.o.ID, task.Attempt), why)
		_ = m.NakWithDelay(time.Second) // another node may serve the task's repository
		return
	}
	d := newDelivery(task.Secret, task.ID, n.o.ID, task.Attempt)
	rel := n.relay(task, d, log)
	defer rel.close()
	if task.Attempt > 1 {
		n.stats.redelivered.Add(1)
		n.events.emitAlso(rel, task.Run, n.o.ID, messages.EvtTaskRedelivered, messages.TaskRedelivered{Agent: task.ID, Kind: task.Kind,
			Attempt: task.Attempt, Node: n.o.ID})
		if n.resultExists(task) {
			n.stats.alreadyDone.Add(1)
			log.Info().Msg("redelivered task already has a result; acked without rerunning it")
			n.ack(m, log)
			return
		}
	}
	if n.dropLapsed(task, m, log) {
		return
	}
	fenceAt, cutOff := n.cutOff(task, log)
	if cutOff {
		return
	}
	key := task.Run + "." + task.ID
	rt := &runningTask{run: task.Run, agent: task.ID, msg: m, seq: md.Sequence.Stream, attempt: task.Attempt, leased: task.RunLeaseMS > 0, fenceAt: fenceAt,
		gone: make(chan struct{})}
	switch n.claim(key, rt) {
	case claimHandBack:
		log.Info().Msg("task delivered again while another copy of it ends or runs here: handed back for a moment")
		_ = m.NakWithDelay(time.Second)
		return
	case claimAgain:
		n.stats.duplicate.Add(1)
		log.Info().Msg("task delivered again while this node runs it: the running copy keeps it")
		_ = m.InProgress()
		return
	}
	n.kick()
	n.keepAlive(rt, log)
	defer func() {
		rt.quiet()
		n.mu.Lock()
		delete(n.running, key)
		n.mu.Unlock()
		n.kick()
	}()
	var res actors.AgentResult
	switch {
	case n.gone.has(task.Run, task.ID):
		n.stats.cancelled.Add(1)
		res = actors.AgentResult{Agent: task.ID, Kind: task.Kind, Status: actors.StatusCancelled, Reason: actors.ReasonCancelled}
	case !n.claimed(task, d, log):
		return // unrun and unsettled: the run queued the task again, or has its result
	default:
		n.stats.taken.Add(1)
		var handedBack bool
		res, handedBack = n.runAgent(rt, task, d, rel)
		if handedBack {
			n.stats.handedBack.Add(1)
			log.Info().Msg("task handed back to the queue (drain timeout)")
			rt.quiet()
			_ = rt.latest().Nak()
			return
		}
	}
	n.settle(rt, task, res, d, rel, log)
}

// decode reads a delivered task, terminating one that no node of this
// kind and version can run (no metadata, malformed, another version's or
// another kind's), and reports whether it may run.
func (n *Node) decode(kind string, m jetstream.Msg, log zerolog.Logger) (actors.ChildTask, *jetstream.MsgMetadata, bool) {
	var task actors.ChildTask
	md, err := m.Metadata()
	if err != nil {
		n.stats.malformed.Add(1)
		log.Warn().Err(err).Msg("task without metadata terminated")
		_ = m.Term()
		return task, nil, false
	}
	task, err = DecodeTask(m.Data())
	switch {
	case errors.Is(err, messages.ErrVersion):
		// Each version has its own subject: this one was published on
		// the wrong subject, and no node of this version can run it.
		n.stats.version.Add(1)
		log.Warn().Err(err).Msg("task of another protocol version on this version's subject terminated")
		_ = m.TermWithReason(fmt.Sprintf("node %s: %v (published on the subject of protocol %d)", n.o.Name, err, n.o.Protocol))
		return task, nil, false
	case err != nil:
		n.stats.malformed.Add(1)
		log.Warn().Err(err).Msg("malformed task terminated")
		_ = m.TermWithReason(fmt.Sprintf("node %s: malformed task: %v", n.o.Name, err))
		return task, nil, false
	case task.Kind != kind:
		n.stats.wrongKind.Add(1)
		log.Warn().Str("kind", task.Kind).Msg("task of another kind on this kind's subject terminated")
		_ = m.TermWithReason(fmt.Sprintf("node %s: a %s task on the subject of %s tasks", n.o.Name, task.Kind, kind))
		return task, nil, false
	}
	return task, md, true
}

// settle publishes the task's result and acks it, unless the task is no
// longer this node's: its run's lease lapsed (the task is dropped from
// the queue) or the run handed it to another node.
func (n *Node) settle(rt *runningTask, task actors.ChildTask, res actors.AgentResult, d *delivery, rel *eventRelay, log zerolog.Logger) {
	if rt.revoked.Load() {
		// Another node may have the task now: this copy's result would be
		// refused, and its ack (or term) would settle the other node's
		// delivery.
		n.stats.revoked.Add(1)
		log.Info().Msg("the task is no longer this node's (claim revoked or given up): its result is dropped")
		if rt.fenced.Load() {
			n.releaseLater(task, d)
		}
		return
	}
	if rt.lapsed.Load() {
		n.stats.lapsed.Add(1)
		log.Info().Msg("the run's lease lapsed: the agent was stopped and its task dropped")
		rt.quiet()
		_ = rt.latest().TermWithReason("the run's lease lapsed: its orchestrator is gone")
		return
	}
	// The task's events reach its requester before its result does: it
	// has queued them on its publisher, which stores them in order, so a
	// watcher that stops at the run's end has seen them all, however long
	// a lost server held them back.
	ctx, cancel := context.WithTimeout(n.ctx, relayDrain)
	began := time.Now()
	rel.flush(ctx)
	if d := time.Since(began); d > time.Second {
		log.Info().Dur("waited", d).Msg("the task's events reached its requester: its result goes")
	}
	cancel()
	if err := n.publishResult(task, res, d); err != nil {
		// No ack: the task is redelivered and the result published then.
		log.Error().Err(err).Msg("publish result")
		return
	}
	// The result is stored: a plain ack will do. Should it be lost, the
	// redelivery finds the result and is acked without a rerun.
	n.stats.completed.Add(1)
	rt.quiet()
	n.ack(rt.latest(), log)
}

// ack acks m and waits for the server to confirm it, sending it again
// while a lost server or an election keeps the confirmation away: an ack
// lost with the consumer's leader would have the queue deliver the task
// again.
func (n *Node) ack(m jetstream.Msg, log zerolog.Logger) {
	ctx, cancel := context.WithTimeout(n.ctx, publishFor)
	defer cancel()
	if err := bus.Await(ctx, log, "ack the task", func(ctx context.Context) error {
		tctx, cancel := context.WithTimeout(ctx, publishTry)
		defer cancel()
		return m.DoubleAck(tctx)
	}); err != nil {
		log.Warn().Err(err).Msg("ack task (the result is published; a redelivery will find it)")
	}
}

// runAgent runs the task's agent to its end while keeping the task alive
// in the queue and answering control messages.
func (n *Node) runAgent(rt *runningTask, task actors.ChildTask, d *delivery, rel *eventRelay) (actors.AgentResult, bool) {
	arts := n.o.Bus.Artifacts(task.Run)
	defer arts.Close()
	// The agent's span goes under its parent's delegate call, whose
	// trace context the orchestrator put in the task's headers.
	parent := telemetry.Extract(context.Background(), rt.latest().Headers())
	bc := NewBudgetClient(n.o.Bus.NATS(), n.o.Bus.Prefix(), task.Run, n.o.ID).WithTimeout(n.o.BudgetTimeout).withDelivery(d).until(rt.gone)
	if n.o.beforeSetUp != nil {
		n.o.beforeSetUp(task)
	}
	h, end, err := n.startIn(parent, task, bc, arts, rel)
	if err != nil {
		n.o.Log.Warn().Err(err).Str("run", task.Run).Str("agent", task.ID).Msg("could not start the agent: its task fails")
		return actors.AgentResult{Agent: task.ID, Kind: task.Kind, Status: actors.StatusFailed, Reason: actors.ReasonError,
			Err: fmt.Sprintf("node %s could not start the agent: %v", n.o.Name, err)}, false
	}
	n.mu.Lock()
	rt.h = h
	n.mu.Unlock()
	if n.gone.has(task.Run, task.ID) { // cancelled while it was starting
		h.Cancel("cancelled by the orchestrator")
	}
	if rt.revoked.Load() {
		h.Cancel("claim revoked: the task was handed to another node")
	}
	if !task.Claims { // an older run: told once the agent started (claimed tells a newer one before)
		n.notify(task, d, messages.StartNotice{Node: n.o.ID, Name: n.o.Name, Attempt: task.Attempt})
	}
	<-h.Done() // the claim is kept alive meanwhile (node_alive.go)
	// The agent's outputs are stored before its result says where (its
	// events reach the requester before its result, settle).
	ctx, cancel := context.WithTimeout(n.ctx, artifactFlushTimeout)
	_ = arts.Flush(ctx)
	cancel()
	res := h.Wait(context.Background())
	end(&res)                // its changes, when it worked in a snapshot
	n.packNested(task, &res) // its descendants' that did not merge
	if n.o.beforeResult != nil {
		n.o.beforeResult(task, &res)
	}
	return res, rt.handBack.Load()
}

// artifactFlushTimeout bounds how long a task's result waits for its
// agent's spilled outputs to reach the store.
const artifactFlushTimeout = 10 * time.Second

// refuse tells the task's orchestrator why this node did not run it.
func (n *Node) refuse(task actors.ChildTask, d *delivery, why string) {
	n.notify(task, d, messages.StartNotice{Node: n.o.ID, Name: n.o.Name, Attempt: task.Attempt, Refused: why})
}

// notify tells the task's run of a start, refusal or release notice,
// proving the delivery d (announce).
func (n *Node) notify(task actors.ChildTask, d *delivery, notice messages.StartNotice) {
	n.announce(task, d, notice, n.o.Log.With().Str("run", task.Run).Str("agent", task.ID).Logger())
}

func (n *Node) publishResult(task actors.ChildTask, res actors.AgentResult, d *delivery) error {
	w := res.Wire(task.Run, n.o.ID, task.Attempt)
	w.RelayEnds = d != nil // the task's relay ends with an end marker (relay_node.go)
	b, err := json.Marshal(w)
	if err != nil {
		return err
	}
	// One result per delivery: a retried publish is a duplicate, another
	// attempt's result (after a claim was revoked) is not, nor the result
	// of the task queued again (a resumed run, a run named again: another
	// secret), so the ID carries the delivery's tag. It is sent again
	// across a lost server or an election.
	tag := resultTag(task.Secret, task.Attempt)
	id := fmt.Sprintf("%s.%s.result.%d", task.Run, task.ID, task.Attempt)
	if task.Secret != "" {
		id = fmt.Sprintf("%s.%s.result.%s", task.Run, task.ID, tag)
	}
	h := d.sign(nats.Header{jetstream.MsgIDHeader: []string{id}}, b)
	// Its own subject (result_subject.go): the stream refuses a second
	// message there, so nothing published later replaces it.
	subj := bus.ResultSubject(n.o.Bus.Prefix(), task.Run, task.ID, tag)
	_, err = publishRetried(n.ctx, n.o.Bus, n.o.Log, "publish the result of "+task.ID, &nats.Msg{Subject: subj, Data: b, Header: h})
	return err
}

// resultExists reports whether the task's result is in the results
// stream already (an earlier attempt of this queueing published it and
// died before acking). Only a result on an earlier attempt's subject that
// proves that delivery counts: not a revoked claim's (another secret),
// nor a forgery.
func (n *Node) resultExists(task actors.ChildTask) bool {
	ctx, cancel := context.WithTimeout(n.ctx, 5*time.Second)
	defer cancel()
	if task.Secret == "" {
		s, err := n.o.Bus.JetStream().Stream(ctx, n.o.Bus.Names().Results)
		if err != nil {
			return false
		}
		_, err = s.GetLastMsgForSubject(ctx, bus.ResultSubject(n.o.Bus.Prefix(), task.Run, task.ID, unsignedTag))
		return err == nil
	}
	_, ok := storedResult(ctx, n.o.Bus, task.Run, task.ID, task.Secret, task.Prior+1, task.Attempt-1)
	return ok
}
