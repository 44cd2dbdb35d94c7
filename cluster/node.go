package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/bus"
	"github.com/troupe-ai/troupe/changes"
	"github.com/troupe-ai/troupe/messages"
)

// NodeOptions configure a worker node.
type NodeOptions struct {
	// Bus is the connection to NATS, with JetStream and the subject
	// prefix (required).
	Bus *bus.Conn
	// ID is unique per node process (default: the node's name when its
	// credentials are its own, else a new UUID); Name is for people
	// (default the host name).
	ID, Name string
	// Kinds are the agent kinds this node runs (default explore).
	Kinds []string
	// Slots bounds the tasks run at once (default 4).
	Slots int
	// Agent is what every agent of this node shares: workspace, model
	// client and routing, kinds, settings, tool config, approver, log.
	// Its Events, Node and Run are set by the node.
	Agent actors.Options
	// Events receives, in this process, the node's events and its
	// agents' (its metrics, a log; nil: none), as they are emitted. Give
	// it no publisher: on NATS, a run's events go to the run's requester,
	// which checks and publishes them (relay_node.go), and the node
	// publishes its own lifecycle events (run NodesRun) itself.
	Events actors.Emitter
	// AckWait is how long a task may go without a sign of life before it
	// is redelivered (default DefaultAckWait, ReplicatedAckWait when the
	// task queue has replicas; the node signals every AckWait/3);
	// MaxDeliver bounds the attempts (default 3).
	AckWait    time.Duration
	MaxDeliver int
	// Heartbeat is the registry refresh period (default 2s): a node silent
	// for two of them counts as lost, and its tasks go to other nodes.
	Heartbeat time.Duration
	// DrainTimeout bounds how long Drain lets running tasks finish before
	// it hands them back to the queue (default 30s).
	DrainTimeout time.Duration
	// BudgetTimeout is how long a run's budget may go unanswered before
	// the node's agent of that run stops at its next model call (default
	// DefaultBudgetTimeout; node.budget_timeout).
	BudgetTimeout time.Duration
	// Version is the node program's version, shown in the registry.
	Version string
	// Protocol is the task protocol version the node takes tasks of
	// (default messages.ProtocolVersion); each version has its own
	// subject, so a node never receives tasks of another version.
	Protocol int
	// WorkspaceKey names the repository the node serves (default
	// WorkspaceKey(Agent.Workspace)); a task for another repository is
	// refused. "" refuses nothing.
	WorkspaceKey string
	Log          zerolog.Logger

	// beforeSetUp, in tests, runs when a claimed task's agent is about to
	// be set up (its snapshot fetched and checked out): a slow set-up.
	beforeSetUp func(actors.ChildTask)
	// beforeResult, in tests, runs when a task's result is complete (its
	// changes captured and stored), before it is published.
	beforeResult func(actors.ChildTask, *actors.AgentResult)
}

func (o *NodeOptions) defaults() {
	if o.ID == "" {
		o.ID = o.Bus.Identity().Node // a node of its own identity
	}
	if o.ID == "" {
		o.ID = "node-" + uuid.NewString()[:8]
	}
	if o.Name == "" {
		o.Name, _ = os.Hostname()
	}
	if len(o.Kinds) == 0 {
		o.Kinds = []string{actors.KindExplore}
	}
	if o.Slots <= 0 {
		o.Slots = 4
	}
	if o.MaxDeliver <= 0 {
		o.MaxDeliver = 3
	}
	if o.Heartbeat <= 0 {
		o.Heartbeat = DefaultHeartbeat
	}
	if o.DrainTimeout <= 0 {
		o.DrainTimeout = 30 * time.Second
	}
	if o.Events == nil {
		o.Events = actors.Emitters{}
	}
	if o.Protocol == 0 {
		o.Protocol = messages.ProtocolVersion
	}
	if o.WorkspaceKey == "" {
		o.WorkspaceKey = WorkspaceKey(o.Agent.Workspace)
	}
}

// NodeStats count what a node did and refused.
type NodeStats struct {
	Taken       uint64 // tasks started
	Completed   uint64 // results published (and acked, or their ack being confirmed)
	Redelivered uint64 // tasks this node got on a second or later attempt
	AlreadyDone uint64 // redelivered tasks whose result existed: acked, not rerun
	HandedBack  uint64 // tasks given back (Nak) when a drain timed out
	Malformed   uint64 // task messages that could not be decoded (terminated)
	WrongKind   uint64 // tasks of a kind this node does not serve (terminated)
	Version     uint64 // tasks of another protocol version on this version's subject (terminated)
	Workspace   uint64 // tasks for another repository (handed back)
	Cancelled   uint64 // tasks whose run or agent was cancelled before they started (acked with a cancelled result)
	// ControlDropped counts cancel, input and status messages the node's
	// control subscriptions dropped because it fell behind (the client's
	// slow-consumer drops, which the connection's error handler only
	// logs). A dropped cancel leaves its agent running.
	ControlDropped uint64
	// Restored counts the times the node created its task consumer or
	// registry bucket again because the server had lost them (a server
	// restarted without its store).
	Restored uint64
	// Duplicates counts deliveries of a task this node was running already
	// (the running copy keeps the task); Progress the progress acks sent
	// to keep claimed tasks alive, and ProgressLost those that failed.
	Duplicates, Progress, ProgressLost uint64
	// Revoked counts tasks whose claim the run revoked (it found this
	// node lost and handed them on, or queued them again: a later
	// queueing's delivery reached this node), or that the node gave up
	// (Fenced): stopped, their results dropped.
	Revoked uint64
	// Lapsed counts tasks dropped because their run's lease lapsed (its
	// orchestrator gone): agents stopped, or tasks never started.
	Lapsed uint64
	// Fenced counts tasks this node stopped (or did not start) because
	// its heartbeats had not got through for most of the time after
	// which the run hands them to another node.
	Fenced uint64
	// EventsRelayed counts its agents' events the runs' requesters took
	// (and published); EventsDropped those that never reached one (no
	// requester answered for relayRetryFor: it is gone; or a relay's
	// buffer was full); EventsRefused those a requester refused;
	// BatchesResent the batches of events sent again, unanswered.
	EventsRelayed, EventsDropped, EventsRefused, BatchesResent uint64
	// Disowned counts deliveries the run said were no longer the task's
	// (it had queued the task again, or taken another delivery): dropped
	// unrun.
	Disowned uint64
}

// Node pulls agent tasks of its kinds from the queue and runs them.
type Node struct {
	o      NodeOptions
	kv     jetstream.KeyValue
	info   messages.NodeInfo
	events *nodeEvents
	pub    *bus.Publisher // the node's lifecycle events (run NodesRun)
	relays relayCounts    // what its tasks' relays did with their events
	slots  chan struct{}
	host   *actors.Host // one actor system and tool set for every task
	ctlMu  sync.Mutex
	ctl    []*nats.Subscription // under ctlMu
	ctlOff uint64               // under ctlMu: messages the ended control subscriptions dropped
	kicks  chan struct{}        // a task started or ended: beat soon (the free slots changed)
	// registers asks keepRegistry to rewrite the bucket entry.
	registers chan struct{}
	gone      *cancelMemory
	runs      *runLeases // the run leases heard

	ctx      context.Context // ends when the node stops for good
	cancel   context.CancelFunc
	fetching context.Context // ends when the node stops taking tasks
	stopTake context.CancelFunc
	pulling  sync.WaitGroup // the take loops and their open pull requests
	loops    sync.WaitGroup
	tasks    sync.WaitGroup

	kvMu sync.Mutex // guards kv, which restore replaces

	snaps *changes.Node // the requesters' snapshots its tasks work in

	mu      sync.Mutex
	running map[string]*runningTask // by run + "." + agent
	stats   struct {
		taken, completed, redelivered, alreadyDone, handedBack, malformed, wrongKind, version, workspace, cancelled atomic.Uint64
		restored, duplicate, progress, progressLost, revoked, lapsed, fenced, disowned                              atomic.Uint64
	}
	beatSent atomic.Int64 // unix nanoseconds: when the last heartbeat that got through was sent
	relMu    sync.Mutex
	released []releasedTask // given up, the run not told yet
}

// StartNode registers the node and starts taking tasks.
func StartNode(ctx context.Context, o NodeOptions) (*Node, error) {
	if o.Bus == nil {
		return nil, errors.New("start node: NodeOptions.Bus is nil")
	}
	o.defaults()
	if err := o.identify(); err != nil {
		return nil, err
	}
	for _, k := range o.Kinds {
		if err := bus.CheckToken("kind", k); err != nil {
			return nil, err
		}
	}
	// A requester or serve makes the streams; a node's credentials may not.
	if err := o.Bus.AwaitStreams(ctx, o.Log); err != nil {
		return nil, err
	}
	kv, err := openBucket(ctx, o.Bus, o.Log, o.Bus.Names().Nodes)
	if err != nil {
		return nil, err
	}
	if err := checkHeartbeat(ctx, kv, o.Heartbeat); err != nil {
		return nil, err
	}
	if o.AckWait <= 0 {
		o.AckWait = queueAckWait(ctx, o.Bus, o.Log)
	}
	host, _ := os.Hostname()
	n := &Node{o: o, kv: kv, slots: make(chan struct{}, o.Slots), running: map[string]*runningTask{},
		kicks: make(chan struct{}, 1), registers: make(chan struct{}, 1), gone: newCancelMemory(), runs: newRunLeases(), events: newNodeEvents(o.Events, o.ID, o.Log), snaps: newSnapshotStore(o)}
	n.info = messages.NodeInfo{ID: o.ID, Name: o.Name, Host: host, Kinds: slices.Clone(o.Kinds), Slots: o.Slots, Free: o.Slots,
		Version: o.Version, Protocol: o.Protocol, Workspace: o.WorkspaceKey, Started: time.Now().UTC(), BeatMS: o.Heartbeat.Milliseconds()}
	n.ctx, n.cancel = context.WithCancel(context.WithoutCancel(ctx))
	n.fetching, n.stopTake = context.WithCancel(n.ctx)
	fail := func(err error) (*Node, error) {
		n.stopControl()
		if n.host != nil {
			n.host.Close()
		}
		if n.pub != nil {
			_ = n.pub.Close(context.Background())
		}
		n.cancel()
		return nil, err
	}
	if n.pub, err = o.Bus.NewPublisher(bus.PublisherOptions{Queue: 256, Log: o.Log}); err != nil {
		return fail(fmt.Errorf("node %s: %w", o.ID, err))
	}
	agent := o.Agent
	agent.Node, agent.Events = o.ID, o.Events
	if n.host, err = actors.NewHost(n.ctx, agent); err != nil {
		return fail(fmt.Errorf("node %s: %w", o.ID, err))
	}
	consumers := make([]jetstream.Consumer, 0, len(o.Kinds))
	for _, k := range o.Kinds {
		var c jetstream.Consumer
		if err := awaitStart(ctx, o.Log, "the consumer of "+k+" tasks", func(ctx context.Context) (err error) {
			c, err = n.consumer(ctx, k)
			return err
		}); err != nil {
			return fail(err)
		}
		consumers = append(consumers, c)
	}
	if err := n.subscribeControl(); err != nil {
		return fail(err)
	}
	if err := n.followRuns(ctx); err != nil {
		return fail(err)
	}
	if err := n.claimKey(ctx); err != nil {
		return fail(err)
	}
	sent := time.Now()
	if err := awaitStart(ctx, o.Log, "register node "+o.ID, n.writeRegistry); err != nil {
		return fail(fmt.Errorf("register node %s: %w", o.ID, err))
	}
	if err := n.beat(); err != nil {
		return fail(fmt.Errorf("node %s's first heartbeat: %w", o.ID, err))
	}
	n.beatSent.Store(sent.UnixNano())
	n.events.emitAlso(n.pub, NodesRun, o.ID, messages.EvtNodeJoined, messages.NodeJoined{Node: o.ID, Name: o.Name, Host: host, Kinds: o.Kinds,
		Slots: o.Slots, Version: o.Version})
	n.snaps.KeepKilled(ctx) // what a killed node's agents wrote, before its first task
	n.loops.Add(4)
	go n.heartbeat()
	go n.keepRegistry()
	go n.sweepRuns()
	go n.fence()
	for i, c := range consumers {
		n.pulling.Add(1)
		go n.take(o.Kinds[i], c)
	}
	return n, nil
}

// ID is the node's ID.
func (n *Node) ID() string { return n.o.ID }

// Stats reports the node's counters.
func (n *Node) Stats() NodeStats {
	s := &n.stats
	return NodeStats{Taken: s.taken.Load(), Completed: s.completed.Load(), Redelivered: s.redelivered.Load(),
		AlreadyDone: s.alreadyDone.Load(), HandedBack: s.handedBack.Load(), Malformed: s.malformed.Load(),
		WrongKind: s.wrongKind.Load(), Version: s.version.Load(), Workspace: s.workspace.Load(), Cancelled: s.cancelled.Load(),
		ControlDropped: n.controlDropped(), Restored: s.restored.Load(),
		Duplicates: s.duplicate.Load(), Progress: s.progress.Load(), ProgressLost: s.progressLost.Load(), Revoked: s.revoked.Load(),
		Lapsed: s.lapsed.Load(), Fenced: s.fenced.Load(),
		EventsRelayed: n.relays.sent.Load(), EventsDropped: n.relays.dropped.Load(), EventsRefused: n.relays.refused.Load(),
		BatchesResent: n.relays.resent.Load(), Disowned: s.disowned.Load()}
}

// Drain stops taking tasks, lets the running ones finish for up to the
// drain timeout (or until ctx ends), hands the rest back to the queue, and
// leaves the registry. The node is stopped when it returns.
func (n *Node) Drain(ctx context.Context) error {
	n.stopTake()
	n.mu.Lock()
	n.info.Draining = true
	n.mu.Unlock()
	if n.o.Bus.NATS().IsConnected() {
		_ = n.beat()
		_ = n.writeRegistry(ctx)
	}
	done := make(chan struct{})
	go func() { n.tasks.Wait(); close(done) }()
	t := time.NewTimer(n.o.DrainTimeout)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	case <-ctx.Done():
	}
	// Hand back only once the node's pull requests have expired: a task
	// handed back earlier could be delivered to one of them, be handed
	// back again and spend another of its attempts.
	n.pulling.Wait()
	n.mu.Lock()
	for _, rt := range n.running {
		rt.handBack.Store(true)
		if rt.h != nil {
			rt.h.Cancel("node draining")
		}
	}
	n.mu.Unlock()
	<-done
	n.cancel()
	n.loops.Wait()
	n.stopControl()
	n.host.Close()
	n.snaps.Close()
	n.events.emitAlso(n.pub, NodesRun, n.o.ID, messages.EvtNodeLeft, messages.NodeLeft{Node: n.o.ID, Name: n.o.Name, Reason: NodeDrained})
	dctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if !n.o.Bus.NATS().IsConnected() {
		// The server is gone: the entry expires with its TTL.
		n.o.Log.Warn().Msg("NATS unreachable: leaving the registry to the entry's TTL")
		cancel() // node.left cannot go out either: counted as dropped
		_ = n.pub.Close(dctx)
		return nil
	}
	_ = n.pub.Close(dctx)
	if err := n.registry().Delete(dctx, n.o.ID); err != nil {
		n.o.Log.Warn().Err(err).Msg("leave registry (the entry expires with its TTL)")
	}
	return nil
}
