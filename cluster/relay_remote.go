package cluster

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/troupe-ai/troupe/bus"
	"github.com/troupe-ai/troupe/messages"
)

// The requester's side of the events nodes relay (relay_node.go). Only a
// run's requester publishes on the run's events subjects; an event about
// one of the run's agents that ran on a node enters the events stream only
// when this run vouches for it:
//
//   - its batch came on <prefix>.ctl.<run>.<task>.events and proves the
//     current delivery of task, a task of this run (one still waiting,
//     or one of the last relayEndedKeep that ended: the last events of a
//     task may trail its result);
//   - the event is well formed, of this run, emitted on the node that
//     holds that delivery, no run.* event, and about the task's agent, an
//     agent the task's agents started (they acquired its lease from the
//     run's budget, which owns the proof), or the node itself (kind node,
//     task.redelivered).
//
// A node numbers its own events in a run across the relays of all its
// tasks, whose batches arrive in any order; the run numbers those as it
// publishes them, so every agent's sequence in the stream stays whole.
//
// Everything else is refused and counted (RemoteStats.Events): it never
// reaches the stream, so no watcher, web view or metric ever counts it.

// relayEndedKeep bounds the ended tasks whose trailing events are taken.
const relayEndedKeep = 1024

// relayMaxBytes bounds a batch read from the wire (the server's payload
// limit is lower).
const relayMaxBytes = 8 << 20

// onEvents takes a node's batch of a task's events and answers it.
func (r *Remote) onEvents(m *nats.Msg) {
	if fromStream(m) {
		// A stream's message redirected here: answering would ack it.
		r.refuseEvents(1, fmt.Errorf("%w: delivered from a stream (reply %s)", ErrUnproven, m.Reply), m.Subject)
		return
	}
	task := strings.TrimSuffix(strings.TrimPrefix(m.Subject, bus.CtlSubject(r.o.Bus.Prefix(), r.o.Run, "", "")), "."+ctlEvents)
	r.intake.RLock()
	var rep messages.EventBatchReply
	switch {
	case r.sealed:
		rep = r.refuseSealed(m)
	case m.Header.Get(messages.RelayEndHeader) != "" && len(m.Data) == 0:
		rep = r.relayEnd(m, task)
	default:
		rep = r.relayed(m, task)
	}
	r.intake.RUnlock()
	if m.Reply != "" {
		b, _ := json.Marshal(rep)
		_ = m.Respond(b)
	}
}

// relayed checks a batch of task's events (JSON Lines) and publishes
// those it vouches for; its reply says how many.
func (r *Remote) relayed(m *nats.Msg, task string) messages.EventBatchReply {
	rep := messages.EventBatchReply{V: messages.ProtocolVersion}
	data := bytes.TrimSuffix(m.Data, []byte("\n"))
	n := bytes.Count(data, []byte("\n")) + 1
	var err error
	switch c := r.child(task); {
	case len(m.Data) > relayMaxBytes || n > messages.MaxEventBatch:
		err = fmt.Errorf("%w: a batch of %d bytes, %d lines (at most %d events)", messages.ErrBadMessage, len(m.Data), n, messages.MaxEventBatch)
	case c == nil:
		err = fmt.Errorf("%w: task %q is not one of this run's", ErrUnproven, task)
	default:
		err = c.verify(m.Header, m.Data)
		if err == nil {
			_, node := signedBy(m.Header)
			for _, line := range bytes.Split(data, []byte("\n")) {
				if r.relayOne(c, node, line) {
					rep.Accepted++
				} else {
					rep.Refused++
				}
			}
			return rep
		}
	}
	rep.Refused = n
	rep.Error = &messages.Error{Code: messages.CodeBadRequest, Message: "refused: " + err.Error()}
	r.refuseEvents(n, err, m.Subject)
	return rep
}

// relayOne publishes one event of a batch of c's delivery on node when
// the run vouches for it. An event in the form json.Marshal gives it is
// checked without decoding its data and published as it came; any other
// is decoded and published as json.Marshal writes it.
func (r *Remote) relayOne(c *remoteChild, node string, line []byte) bool {
	ev, fast := messages.ScanEvent(line)
	if !fast {
		ev = messages.Event{}
		if err := json.Unmarshal(line, &ev); err != nil {
			r.refuseEvents(1, fmt.Errorf("%w: %v", messages.ErrBadMessage, err), "")
			return false
		}
	}
	if err := r.vouch(c, node, &ev); err != nil {
		r.refuseEvents(1, err, "")
		return false
	}
	if ev.Kind == "node" {
		r.mu.Lock()
		ev.Seq = r.nodeSeqs.number(ev.Agent, ev.ID)
		r.mu.Unlock()
		fast = false
	}
	switch out := r.o.Relay.(type) {
	case nil:
	case encodedEmitter:
		if fast {
			out.EmitEncoded(ev, line)
		} else {
			out.Emit(ev)
		}
	default:
		out.Emit(ev)
	}
	return true
}

// nodeNumbers numbers the events about nodes a run relays, by node. An
// event that comes again (its batch sent again: the answer to the first
// was lost) keeps the number it had, so the stream, which stores it once
// by its ID, has no gap in the node's sequence. It remembers the numbers
// of the last relayEndedKeep events; its zero value is ready.
type nodeNumbers struct {
	last  map[string]uint64 // by node
	given map[string]uint64 // by event ID
	order []string          // the keys of given, oldest first
}

// number is the seq of node's event id.
func (n *nodeNumbers) number(node, id string) uint64 {
	if seq, ok := n.given[id]; ok {
		return seq
	}
	if n.last == nil {
		n.last, n.given = map[string]uint64{}, map[string]uint64{}
	}
	n.last[node]++
	seq := n.last[node]
	n.given[id] = seq
	n.order = append(n.order, id)
	if len(n.order) > relayEndedKeep {
		delete(n.given, n.order[0])
		n.order = n.order[1:]
	}
	return seq
}

// encodedEmitter publishes events whose JSON it is given (bus.Publisher).
type encodedEmitter interface {
	Emit(messages.Event)
	EmitEncoded(messages.Event, []byte)
}

// vouch checks that ev may enter the run's events as an event of c's
// delivery on node.
func (r *Remote) vouch(c *remoteChild, node string, ev *messages.Event) error {
	if err := ev.Validate(); err != nil {
		return fmt.Errorf("%w: %v", ErrUnproven, err)
	}
	task := c.task.ID
	switch {
	case ev.Run != r.o.Run:
		return fmt.Errorf("%w: an event of run %q in a batch of run %s", ErrUnproven, ev.Run, r.o.Run)
	case ev.Node != node:
		return fmt.Errorf("%w: an event emitted on node %q, and node %s holds task %s", ErrUnproven, ev.Node, node, task)
	case strings.HasPrefix(ev.Type, "run."):
		return fmt.Errorf("%w: %s is the requester's to say", ErrUnproven, ev.Type)
	case ev.Agent == task:
		return nil
	case ev.Agent == node && ev.Kind == "node" && ev.Type == messages.EvtTaskRedelivered:
		return nil
	}
	r.mu.Lock()
	b := r.budget
	r.mu.Unlock()
	if b != nil && b.holds(task, ev.Agent) {
		return nil
	}
	return fmt.Errorf("%w: an event about agent %q, which is neither task %s's agent nor one its agents started", ErrUnproven, ev.Agent, task)
}

// child is the task of this run named task: waiting, or ended lately.
func (r *Remote) child(task string) *remoteChild {
	r.mu.Lock()
	defer r.mu.Unlock()
	if c := r.waiting[task]; c != nil {
		return c
	}
	return r.endedTasks[task]
}

// endedChild keeps c (its task has ended) for its trailing events, the
// last relayEndedKeep of them. Called with r.mu held.
func (r *Remote) endedChild(c *remoteChild) {
	if _, ok := r.endedTasks[c.task.ID]; !ok {
		r.endedOrder = append(r.endedOrder, c.task.ID)
	}
	r.endedTasks[c.task.ID] = c
	for len(r.endedOrder) > relayEndedKeep {
		delete(r.endedTasks, r.endedOrder[0])
		r.endedOrder = r.endedOrder[1:]
	}
}

// refuseEvents counts n events refused and logs why (the first few, then
// one in a thousand: a forger sends many).
func (r *Remote) refuseEvents(n int, err error, subject string) {
	total := r.refusedEvents.Add(uint64(n))
	if total <= 10 || total/1000 != (total-uint64(n))/1000 {
		r.o.Log.Warn().Err(err).Str("subject", subject).Uint64("refused", total).Msg("events from a node refused")
	}
}
