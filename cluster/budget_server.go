package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/budget"
	"github.com/troupe-ai/troupe/bus"
	"github.com/troupe-ai/troupe/messages"
)

// maxRequestBytes bounds a request read from the wire.
const maxRequestBytes = 64 << 10

// BudgetServer serves a run's budget on <prefix>.budget.<run>.<op> to
// agents on other machines: acquire, usage, release and snapshot, each a
// request with a JSON reply. Bad requests get an error reply (bad_request)
// and are counted; nothing from the wire can crash it.
type BudgetServer struct {
	mu       sync.Mutex
	byNode   map[string]map[string]bool // node → agents whose leases it acquired
	sub      *nats.Subscription
	svc      budget.Service
	log      zerolog.Logger
	wg       sync.WaitGroup
	ctx      context.Context
	cancel   context.CancelFunc
	rejected atomic.Uint64
	refused  atomic.Uint64
	busy     atomic.Uint64
	// verify, when set, checks that a request proves the delivery of the
	// task its headers name (acquire, usage and release; a snapshot only
	// reads); owner maps each agent a task's agents acquired to that task.
	verify   func(task string, h nats.Header, data []byte) error
	owner    map[string]string
	acquires chan *nats.Msg // for the acquire workers (an acquire may wait its turn)
	quick    chan *nats.Msg // usage, release, snapshot: never wait on another request
	replies  *replies       // each request answered once, however often it came
}

// The budget server answers with a fixed pool of workers: acquires, which
// may wait for tokens or a slot, have their own so that the usage and
// releases that free what they wait for are never stuck behind them. A
// request that finds its queue full is answered unavailable at once.
const (
	budgetAcquireWorkers = 64
	budgetQuickWorkers   = 8
	budgetQueue          = 1024
)

// StartBudgetServer starts serving svc, the budget of run, on conn (a
// run with a Remote calls Remote.ServeBudget instead).
func StartBudgetServer(conn *bus.Conn, run string, svc budget.Service, log zerolog.Logger) (*BudgetServer, error) {
	return startBudgetServer(conn, run, svc, nil, log)
}

// startBudgetServer is StartBudgetServer whose requests must prove a
// task's delivery when verify is set.
func startBudgetServer(conn *bus.Conn, run string, svc budget.Service, verify func(string, nats.Header, []byte) error,
	log zerolog.Logger) (*BudgetServer, error) {
	nc, prefix := conn.NATS(), conn.Prefix()
	if err := bus.CheckToken("run", run); err != nil {
		return nil, err
	}
	s := &BudgetServer{svc: svc, byNode: map[string]map[string]bool{}, verify: verify, owner: map[string]string{}, replies: newReplies(),
		log: log.With().Str("component", "budget-server").Str("run", run).Logger()}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.acquires, s.quick = make(chan *nats.Msg, budgetQueue), make(chan *nats.Msg, budgetQueue)
	for i := range budgetAcquireWorkers + budgetQuickWorkers {
		q := s.quick
		if i < budgetAcquireWorkers {
			q = s.acquires
		}
		s.wg.Add(1)
		go s.work(q)
	}
	sub, err := nc.Subscribe(bus.BudgetSubject(prefix, run, "*"), s.handle)
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("serve budget of %s: %w", run, err)
	}
	if err := nc.Flush(); err != nil {
		sub.Unsubscribe()
		s.Close()
		return nil, fmt.Errorf("serve budget of %s: %w", run, err)
	}
	s.sub = sub
	return s, nil
}

// Busy counts the requests answered unavailable because their queue was
// full.
func (s *BudgetServer) Busy() uint64 { return s.busy.Load() }

// Rejected counts the requests refused as malformed.
func (s *BudgetServer) Rejected() uint64 { return s.rejected.Load() }

// Refused counts the requests refused as not proven by a task's current
// delivery, or for an agent outside the task's own.
func (s *BudgetServer) Refused() uint64 { return s.refused.Load() }

// Close stops serving: no new requests; requests still being answered
// (an acquire waiting its turn) are withdrawn.
func (s *BudgetServer) Close() {
	if s.sub != nil {
		_ = s.sub.Unsubscribe()
	}
	s.cancel()
	s.wg.Wait()
	for _, q := range []chan *nats.Msg{s.acquires, s.quick} { // queued, never served
		for len(q) > 0 {
			b, _ := json.Marshal(messages.ErrorReply{V: messages.ProtocolVersion,
				Error: &messages.Error{Code: messages.CodeUnavailable, Message: "the budget server stopped"}})
			_ = s.replies.answer(<-q, b)
		}
	}
}

func (s *BudgetServer) handle(m *nats.Msg) {
	op := m.Subject[strings.LastIndexByte(m.Subject, '.')+1:]
	if m.Reply == "" || fromStream(m) {
		// A stream's message redirected here: answering would ack it.
		m.Reply = ""
		s.reject(m, "no reply subject, or delivered from a stream")
		return
	}
	if len(m.Data) > maxRequestBytes {
		s.reject(m, fmt.Sprintf("request of %d bytes is over the limit of %d", len(m.Data), maxRequestBytes))
		return
	}
	if !s.replies.admit(m) {
		return // a copy of a request answered, or being answered
	}
	q := s.quick
	if op == opAcquire {
		q = s.acquires
	}
	select {
	case q <- m:
		return
	case <-s.ctx.Done():
	default:
		s.busy.Add(1)
	}
	b, _ := json.Marshal(messages.ErrorReply{V: messages.ProtocolVersion,
		Error: &messages.Error{Code: messages.CodeUnavailable, Message: "the budget server is busy or stopped"}})
	_ = s.replies.answer(m, b)
}

// work answers the requests of q until the server closes.
func (s *BudgetServer) work(q <-chan *nats.Msg) {
	defer s.wg.Done()
	for {
		select {
		case <-s.ctx.Done():
			return
		case m := <-q:
			s.serve(m)
		}
	}
}

func (s *BudgetServer) serve(m *nats.Msg) {
	op := m.Subject[strings.LastIndexByte(m.Subject, '.')+1:]
	task := ""
	if s.verify != nil && op != opSnapshot {
		task = m.Header.Get(taskHeader)
		if err := s.verify(task, m.Header, m.Data); err != nil {
			s.refuse(m, err.Error())
			return
		}
	}
	reply, bad := s.answer(op, task, m.Data)
	if bad != "" {
		s.reject(m, bad)
		return
	}
	b, _ := json.Marshal(reply)
	if err := s.replies.answer(m, b); err != nil {
		s.log.Debug().Err(err).Str("subject", m.Subject).Msg("budget reply")
	}
}

// answer runs one request for task's agents ("" when unchecked); bad is
// set when the request itself is malformed or not task's to make.
func (s *BudgetServer) answer(op, task string, data []byte) (reply any, bad string) {
	ctx, cancel := context.WithTimeout(s.ctx, budget.DefaultRequestTimeout)
	defer cancel()
	switch op {
	case opAcquire:
		r, err := messages.Decode[messages.BudgetAcquireRequest](data, maxRequestBytes)
		if err != nil {
			return nil, err.Error()
		}
		if !s.holds(task, r.Parent) {
			return s.notTasks(task, r.Parent), ""
		}
		actx, acancel := context.WithCancel(s.ctx) // waits its turn; the deadline is the request's
		defer acancel()
		if r.DeadlineUnixMS > 0 {
			actx, acancel = context.WithDeadline(actx, time.UnixMilli(r.DeadlineUnixMS))
			defer acancel()
		}
		lease, err := s.svc.Acquire(actx, acquireToBudget(r), nil)
		if err != nil {
			return messages.BudgetAcquireReply{V: 1, Error: toWireError(err)}, ""
		}
		if task != "" {
			s.mu.Lock()
			s.owner[r.Agent] = task
			s.mu.Unlock()
		}
		if r.Node != "" {
			s.mu.Lock()
			if s.byNode[r.Node] == nil {
				s.byNode[r.Node] = map[string]bool{}
			}
			s.byNode[r.Node][r.Agent] = true
			s.mu.Unlock()
		}
		return messages.BudgetAcquireReply{V: 1, Grant: grantToWire(lease)}, ""
	case opUsage:
		r, err := messages.Decode[messages.BudgetReport](data, maxRequestBytes)
		if err != nil {
			return nil, err.Error()
		}
		if !s.holds(task, r.Agent) {
			return s.notTasks(task, r.Agent), ""
		}
		u, err := s.svc.Usage(ctx, budget.Usage{Agent: r.Agent, Tokens: r.Tokens, Cost: r.CostUSD, ToolCalls: r.ToolCalls, TopUp: r.TopUp})
		if err == nil {
			err = u.Err
		}
		return messages.BudgetReportReply{V: 1, State: u.State, Remaining: u.Remaining, Used: u.Used, Granted: u.Granted,
			Lent: u.Lent, ToppedUp: u.ToppedUp, Error: toWireError(err)}, ""
	case opRelease:
		r, err := messages.Decode[messages.BudgetRelease](data, maxRequestBytes)
		if err != nil {
			return nil, err.Error()
		}
		if !s.holds(task, r.Agent) {
			return s.notTasks(task, r.Agent), ""
		}
		s.mu.Lock()
		for _, agents := range s.byNode {
			delete(agents, r.Agent)
		}
		s.mu.Unlock()
		rel, err := s.svc.Release(ctx, budget.Release{Agent: r.Agent, Used: r.Used})
		if err == nil {
			err = rel.Err
		}
		return messages.BudgetReleaseReply{V: 1, Agent: rel.Agent, Used: rel.Used, Returned: rel.Returned, Already: rel.Already,
			Error: toWireError(err)}, ""
	case opSnapshot:
		if _, err := messages.Decode[messages.BudgetSnapshotRequest](data, maxRequestBytes); err != nil {
			return nil, err.Error()
		}
		snap, err := s.svc.Snapshot(ctx)
		if err != nil {
			return messages.BudgetSnapshotReply{V: 1, Error: toWireError(err)}, ""
		}
		return messages.BudgetSnapshotReply{V: 1, Snapshot: &snap}, ""
	}
	return nil, fmt.Sprintf("unknown budget operation %q", op)
}

// ReleaseNode returns every lease that node acquired and still holds (it
// stopped heartbeating: nobody will release them). It returns how many.
func (s *BudgetServer) ReleaseNode(ctx context.Context, node string) int {
	s.mu.Lock()
	agents := s.byNode[node]
	delete(s.byNode, node)
	s.mu.Unlock()
	n := 0
	for agent := range agents {
		if _, err := s.svc.Release(ctx, budget.Release{Agent: agent}); err == nil {
			n++
		}
	}
	if n > 0 {
		s.log.Warn().Str("node", node).Int("leases", n).Msg("node stopped heartbeating; its leases are returned")
	}
	return n
}

// holds says whether agent is task's own (the task's agent, or one its
// agents acquired a lease for); every agent is when task is "".
func (s *BudgetServer) holds(task, agent string) bool {
	if task == "" || agent == task {
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.owner[agent] == task
}

// notTasks counts a request for an agent outside task's agents as
// refused, and is its reply.
func (s *BudgetServer) notTasks(task, agent string) messages.ErrorReply {
	s.refused.Add(1)
	why := fmt.Sprintf("refused: agent %s is not one of task %s's agents", agent, task)
	s.log.Warn().Str("task", task).Msg("budget request " + why)
	return messages.ErrorReply{V: messages.ProtocolVersion, Error: &messages.Error{Code: messages.CodeBadRequest, Message: why}}
}

// refuse answers a request that does not prove its task's delivery.
func (s *BudgetServer) refuse(m *nats.Msg, why string) {
	s.refused.Add(1)
	s.log.Warn().Str("subject", m.Subject).Msg("budget request refused: " + why)
	if m.Reply != "" {
		b, _ := json.Marshal(messages.ErrorReply{V: messages.ProtocolVersion,
			Error: &messages.Error{Code: messages.CodeBadRequest, Message: "refused: " + why}})
		_ = s.replies.answer(m, b)
	}
}

func (s *BudgetServer) reject(m *nats.Msg, why string) {
	s.rejected.Add(1)
	s.log.Warn().Str("subject", m.Subject).Int("bytes", len(m.Data)).Msg("budget request rejected: " + why)
	if m.Reply != "" {
		b, _ := json.Marshal(messages.ErrorReply{V: messages.ProtocolVersion,
			Error: &messages.Error{Code: messages.CodeBadRequest, Message: why}})
		_ = s.replies.answer(m, b)
	}
}
