package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/budget"
	"github.com/troupe-ai/troupe/bus"
	"github.com/troupe-ai/troupe/messages"
	"github.com/troupe-ai/troupe/telemetry"
)

// Placements of a kind.
const (
	PlaceLocal  = "local"
	PlaceRemote = "remote"
	PlaceAuto   = "auto" // remote when a live node of the kind has a free slot
)

// RemoteOptions configure the orchestrator side of a run whose children
// may run on nodes.
type RemoteOptions struct {
	// Bus is the connection to NATS, with JetStream and the subject
	// prefix (required).
	Bus *bus.Conn
	Run string
	// Placement maps a kind to PlaceLocal, PlaceRemote or PlaceAuto;
	// kinds not named run locally.
	Placement map[string]string
	// CancelWait bounds how long a cancelled remote child's own result is
	// awaited before it is reported cancelled (default 10s).
	CancelWait time.Duration
	// LeaseTimeout is how long a node may go without a heartbeat before
	// it counts as lost: node.left (reason lost) is emitted, the run's
	// tasks it held are handed to other nodes and the leases it acquired
	// are returned (default 0: two of the node's own heartbeats).
	LeaseTimeout time.Duration
	// PlacementTimeout bounds how long a remote task waits, not yet
	// started, while no live node serves its kind: then it fails with a
	// sentence naming the kind (default 10s; node.placement_timeout).
	PlacementTimeout time.Duration
	// Events receives the run's events about nodes (pass the run's
	// emitter, actors.Options.Events): node.left with reason lost for a
	// node that stopped heartbeating, node.joined for a lost node heard
	// from again. They are the run's, as agent NodesAgent; nil emits none.
	Events actors.Emitter
	// Relay receives the events nodes relay for the run's agents, once
	// the run has checked them (relay_remote.go): pass the run's NATS
	// publisher, so that they enter the events stream, where the run's
	// own live view and every watcher read them. nil: they are checked
	// and counted, and go nowhere.
	Relay actors.Emitter
	// RunLease is the run's lease (RunLease.Lease; 0: the run has none):
	// tasks carry it, and nodes stop them once it lapses.
	RunLease time.Duration
	// Records is the file of the run's durable task records (RecordsPath;
	// "" keeps none): a resumed run takes up the results of the tasks it
	// had queued instead of running them again.
	Records string
	// Workspace is the orchestrator's workspace directory: tasks carry its
	// WorkspaceKey, and nodes serving another repository refuse them.
	Workspace string
	// DataDir is where the workspace's snapshots are prepared (default
	// <Workspace>/.troupe). With a Workspace, every task carries a
	// snapshot of it (snapshot_send.go).
	DataDir string
	Log     zerolog.Logger
}

// Remote is the orchestrator side of a run with remote agents: its Placer
// publishes tasks, a results consumer hands each task's first result to
// its parent, the run's budget is served to the nodes, and nodes that
// stop heartbeating are reported lost.
type Remote struct {
	o       RemoteOptions
	ctx     context.Context
	cancel  context.CancelFunc
	nodes   *registry
	nodeEv  *nodeEvents // the run's events about nodes
	sweeper sync.WaitGroup
	// publishing is held (read) by each task's queueing, so that Close
	// closes the task records only once every queued task's record, its
	// queue place included, is written.
	publishing sync.RWMutex
	budget     *BudgetServer
	results    *bus.Following
	subs       []*nats.Subscription // advisories and start notices
	origin     string
	// life names this process's life of the run (random): the message ID
	// of every task it queues carries it, so that a task queued again by a
	// later life (a resumed run, a requester naming the run again) is a
	// new message, never taken by the queue for a duplicate of an earlier
	// life's (the stream remembers IDs for its duplicate window).
	life  string
	wsKey string
	snaps *snapshotSender // nil without a workspace

	mu         sync.Mutex
	waiting    map[string]*remoteChild // by agent ID
	bySeq      map[uint64]string       // task stream sequence → agent ID
	endedTasks map[string]*remoteChild // tasks ended lately, by agent ID (their events may trail)
	endedOrder []string                // the keys of endedTasks, oldest first
	// nodeSeqs numbers the relayed events about nodes (kind node), by
	// node: a node emits them through the relays of several tasks, whose
	// batches arrive in any order, so the run numbers them as it
	// publishes them (one per node that held a task of this run).
	nodeSeqs nodeNumbers
	// relaysOpen are the tasks whose result the run took and whose
	// delivery's relay has not sent its end marker yet: the attempt
	// (relay_seal.go). relayWake gets a token when one ends.
	relaysOpen map[string]int
	relayWake  chan struct{}
	// intake is held (read) while a batch of events is taken; sealed,
	// set under it, refuses every batch from then on.
	intake sync.RWMutex
	sealed bool
	ending atomic.Bool // the run's root has ended: its relays are awaited

	duplicates     atomic.Uint64
	forged         atomic.Uint64
	refusedNotices atomic.Uint64
	failedMax      atomic.Uint64
	terminated     atomic.Uint64
	deleted        atomic.Uint64
	unplaced       atomic.Uint64
	reissued       atomic.Uint64
	lost           atomic.Uint64
	reattached     atomic.Uint64
	refusedChanges atomic.Uint64
	refusedEvents  atomic.Uint64
	recs           *records    // nil: none kept
	ended          atomic.Bool // the run ended for good: Close deletes the records
}

// StartRemote starts the orchestrator side of run.
func StartRemote(ctx context.Context, o RemoteOptions) (*Remote, error) {
	if o.Bus == nil {
		return nil, errors.New("start remote: RemoteOptions.Bus is nil")
	}
	if o.CancelWait == 0 {
		o.CancelWait = 10 * time.Second
	}
	if o.PlacementTimeout <= 0 {
		o.PlacementTimeout = 10 * time.Second
	}
	if err := bus.CheckToken("run", o.Run); err != nil {
		return nil, err
	}
	for kind, p := range o.Placement {
		if p != PlaceLocal && p != PlaceRemote && p != PlaceAuto {
			return nil, fmt.Errorf("placement.%s: want local, remote or auto, got %q", kind, p)
		}
	}
	if err := o.Bus.EnsureStreams(ctx, bus.StreamLimits{}); err != nil {
		return nil, err
	}
	host, _ := os.Hostname()
	r := &Remote{o: o, waiting: map[string]*remoteChild{}, bySeq: map[uint64]string{}, endedTasks: map[string]*remoteChild{},
		relaysOpen: map[string]int{}, relayWake: make(chan struct{}, 1),
		origin: fmt.Sprintf("%s/%d", host, os.Getpid()), life: uuid.NewString()[:8], wsKey: WorkspaceKey(o.Workspace)}
	r.ctx, r.cancel = context.WithCancel(context.WithoutCancel(ctx))
	var err error
	if o.Records != "" {
		if r.recs, err = openRecords(o.Records); err != nil {
			r.cancel()
			return nil, err
		}
	}
	if r.nodes, err = watchRegistry(r.ctx, o.Bus, o.Log); err != nil {
		r.Close()
		return nil, err
	}
	r.nodeEv = newNodeEvents(o.Events, NodesAgent, o.Log)
	if o.Workspace != "" {
		r.snaps = newSnapshotSender(r)
	}
	r.sweeper.Add(2)
	go r.sweepNodes()
	go r.watchDeliveries()
	if err := o.Bus.KeepFirstResults(ctx); err != nil {
		r.Close()
		return nil, err
	}
	// The untagged subjects of older troupes too, to refuse what comes
	// there with a reason (results.go). A consumer a lost server left
	// stalled is replaced (bus.Follow): no result is missed.
	if r.results, err = o.Bus.Follow(r.ctx, bus.FollowConfig{Stream: o.Bus.Names().Results,
		Filters: []string{bus.ResultsFilter(o.Bus.Prefix(), o.Run)}, Policy: jetstream.DeliverAllPolicy,
		What: "the results of run " + o.Run, Log: o.Log}, r.onResult); err != nil {
		r.Close()
		return nil, fmt.Errorf("consume results of %s: %w", o.Run, err)
	}
	for subj, fn := range map[string]nats.MsgHandler{
		bus.NodeBeatSubject(o.Bus.Prefix(), "*"):                                   r.onNodeBeat,
		"$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES." + o.Bus.Names().Tasks + ".*": r.onMaxDeliveries,
		"$JS.EVENT.ADVISORY.CONSUMER.MSG_TERMINATED." + o.Bus.Names().Tasks + ".*": r.onTerminated,
		bus.CtlSubject(o.Bus.Prefix(), o.Run, "*", ctlStarted):                     r.onStarted,
		bus.CtlSubject(o.Bus.Prefix(), o.Run, "*", ctlSnapshot):                    r.onSnapshotRequest,
		bus.CtlSubject(o.Bus.Prefix(), o.Run, "*", ctlEvents):                      r.onEvents,
	} {
		sub, err := o.Bus.NATS().Subscribe(subj, fn)
		if err != nil {
			r.Close()
			return nil, fmt.Errorf("subscribe to %s: %w", subj, err)
		}
		r.subs = append(r.subs, sub)
	}
	if err := o.Bus.NATS().Flush(); err != nil {
		r.Close()
		return nil, fmt.Errorf("start remote placement: %w", err)
	}
	return r, nil
}

// ServeBudget serves the run's budget to the nodes' agents; pass it as
// actors.Options.OnBudget so it is served before any agent starts.
func (r *Remote) ServeBudget(svc budget.Service) error {
	s, err := startBudgetServer(r.o.Bus, r.o.Run, svc, r.verifyBudget, r.o.Log)
	if err != nil {
		return err
	}
	r.mu.Lock()
	r.budget = s
	r.mu.Unlock()
	return nil
}

// Close stops consuming results and serving the budget. Remote children
// still waiting get a failed result.
func (r *Remote) Close() {
	if r.results != nil {
		r.results.Stop()
	}
	for _, s := range r.subs {
		_ = s.Unsubscribe()
	}
	if r.budget != nil {
		r.budget.Close()
	}
	r.snaps.close()
	r.cancel()
	r.sweeper.Wait()
	if r.nodes != nil {
		r.nodes.wait()
	}
	r.publishing.Lock()
	if err := r.recs.close(r.ended.Load()); err != nil {
		r.o.Log.Warn().Err(err).Msg("the run ended")
	}
	r.publishing.Unlock()
}

// Ended says the run ended in a way no resume takes up (it finished, and
// its checkpoints are gone): Close then deletes its task records. A run
// that was cancelled, failed or killed keeps them for resume.
func (r *Remote) Ended() { r.ended.Store(true) }

// RemoteStats count what the results path dropped.
type RemoteStats struct {
	Duplicates uint64 // second results of a task (redelivery), dropped
	Forged     uint64 // results not proven by the task's current delivery, or malformed
	// Notices are start notices refused: not proven by the task's delivery.
	Notices uint64
	// Budget are budget requests refused: not proven by the delivery of a
	// task of this run, or for an agent outside that task's agents.
	Budget       uint64
	MaxDelivered uint64 // tasks that failed after MaxDeliver attempts
	Terminated   uint64 // tasks a node refused for good (unreadable, or on the wrong subject)
	// Deleted counts the server's terminations of deliveries whose
	// message left the queue (advisories.go; each replica of a hub's
	// queue may report one): none failed its task.
	Deleted    uint64
	Unplaced   uint64 // tasks failed because no live node served their kind for the placement timeout
	Reissued   uint64 // tasks handed on from a lost node
	Reattached uint64 // tasks of an earlier process of the run whose stored result was taken up
	// Changes are results whose changes were refused (a patch not
	// matching the SHA-256 its result proves, or changes to a snapshot the
	// run did not send): their tasks failed, nothing of them applied.
	Changes uint64
	// Events are events from nodes refused: not proven by the current
	// delivery of a task of this run, or about another run, another
	// node's agents or the run itself. They were never published.
	Events uint64
	// LostDeliveries counts tasks queued again because the queue counted
	// them delivered and no node spoke of them (lost.go): counted in
	// Reissued too.
	LostDeliveries uint64
}

// Stats reports the dropped results so far.
func (r *Remote) Stats() RemoteStats {
	var refusedBudget uint64
	r.mu.Lock()
	if r.budget != nil {
		refusedBudget = r.budget.Refused()
	}
	r.mu.Unlock()
	return RemoteStats{Duplicates: r.duplicates.Load(), Forged: r.forged.Load(), Notices: r.refusedNotices.Load(), Budget: refusedBudget,
		MaxDelivered: r.failedMax.Load(), Terminated: r.terminated.Load(), Deleted: r.deleted.Load(), Unplaced: r.unplaced.Load(),
		Reissued: r.reissued.Load(), Reattached: r.reattached.Load(), Changes: r.refusedChanges.Load(), Events: r.refusedEvents.Load(),
		LostDeliveries: r.lost.Load()}
}

// Nodes lists the live nodes as the registry shows them.
func (r *Remote) Nodes() []messages.NodeInfo { return r.nodes.list() }

// Placer is the placement seam's remote implementation for this run.
func (r *Remote) Placer() actors.Placer { return remotePlacer{r} }

type remotePlacer struct{ r *Remote }

// Place answers remote for kinds placed remote, and for auto kinds when
// a live node of the kind has a free slot; local otherwise.
func (p remotePlacer) Place(ctx context.Context, task actors.ChildTask) (actors.RemoteChild, error) {
	switch p.r.o.Placement[task.Kind] {
	case PlaceRemote:
	case PlaceAuto:
		if !p.r.nodes.hasFreeSlot(task.Kind) {
			return nil, nil
		}
	default:
		return nil, nil
	}
	c := &remoteChild{r: p.r, task: task, done: make(chan actors.AgentResult, 1), secret: newSecret(),
		header: nats.Header{}}
	// The delegate call's span context rides in the task's headers
	// (traceparent), so the node's agent joins the parent's trace.
	telemetry.Inject(ctx, c.header)
	return c, nil
}

// EndRun is called once the run's root has ended, before run.finished
// (actors.RunEnder): the run's events about its nodes end here, and the
// events its nodes relay once their relays have ended (relay_seal.go), so
// none is stored after its run.finished.
func (p remotePlacer) EndRun() {
	p.r.nodeEv.silence()
	p.r.sealRelays()
}

// CancelRun tells every node at once that the run is cancelled: each
// cancels the run's agents it runs, and runs none of its tasks that it
// takes later (actors.RunCanceller).
func (p remotePlacer) CancelRun(reason string) { p.r.CancelRun(reason) }

// CancelRun publishes the run-wide cancel on <prefix>.ctl.<run>.cancel.
func (r *Remote) CancelRun(reason string) {
	b, _ := json.Marshal(messages.Cancel{V: messages.ProtocolVersion, Reason: reason})
	if err := r.o.Bus.NATS().Publish(bus.CtlSubject(r.o.Bus.Prefix(), r.o.Run, "", ctlCancel), b); err != nil {
		r.o.Log.Warn().Err(err).Msg("publish the run's cancel")
	}
	_ = r.o.Bus.NATS().FlushTimeout(time.Second)
}

// forget drops what the run remembers of a task that ended, once its
// Start returns: a result or advisory for it that comes later finds
// nothing waiting.
func (r *Remote) forget(c *remoteChild, seq uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.bySeq, seq)
	if r.waiting[c.task.ID] == c {
		delete(r.waiting, c.task.ID)
	}
	r.endedChild(c)
}

// pending counts the tasks the run remembers (waiting, by sequence).
func (r *Remote) pending() (waiting, bySeq int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.waiting), len(r.bySeq)
}

// onNodeBeat records a node's heartbeat.
func (r *Remote) onNodeBeat(m *nats.Msg) { r.nodes.heard(m, r.o.Log) }

// verifyBudget checks a budget request that names task in its headers:
// it proves the key of the task's current delivery.
func (r *Remote) verifyBudget(task string, h nats.Header, data []byte) error {
	r.mu.Lock()
	c := r.waiting[task]
	r.mu.Unlock()
	if c == nil {
		return fmt.Errorf("%w: task %q is not waiting for a result in this run", ErrUnproven, task)
	}
	return c.verify(h, data)
}

func (r *Remote) deleteTask(seq uint64) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if s, err := r.o.Bus.JetStream().Stream(ctx, r.o.Bus.Names().Tasks); err == nil {
		_ = s.DeleteMsg(ctx, seq)
	}
}
