package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/bus"
	"github.com/troupe-ai/troupe/messages"
)

// runningTask is a task a node is running.
type runningTask struct {
	h        *actors.AgentHandle
	handBack atomic.Bool // drain timed out: Nak instead of a result
}

// run handles one delivered task: checks it, runs its agent, publishes the
// result and acks. Whatever goes wrong, the message is settled (acked,
// nak'ed or terminated) and the slot freed.
func (n *Node) run(kind string, m jetstream.Msg) {
	defer n.tasks.Done()
	defer func() { <-n.slots }()
	log := n.o.Log.With().Str("subject", m.Subject()).Logger()
	md, err := m.Metadata()
	if err != nil {
		n.stats.malformed.Add(1)
		log.Warn().Err(err).Msg("task without metadata terminated")
		_ = m.Term()
		return
	}
	task, err := DecodeTask(m.Data())
	switch {
	case errors.Is(err, messages.ErrVersion):
		n.stats.version.Add(1)
		log.Warn().Err(err).Msg("task of another protocol version handed back; run nodes of the orchestrator's version")
		_ = m.NakWithDelay(time.Second)
		return
	case err != nil:
		n.stats.malformed.Add(1)
		log.Warn().Err(err).Msg("malformed task terminated")
		_ = m.TermWithReason("malformed task")
		return
	case task.Kind != kind:
		n.stats.wrongKind.Add(1)
		log.Warn().Str("kind", task.Kind).Msg("task of another kind on this kind's subject terminated")
		_ = m.TermWithReason("kind does not match subject")
		return
	}
	task.Attempt = int(md.NumDelivered)
	log = log.With().Str("run", task.Run).Str("agent", task.ID).Int("attempt", task.Attempt).Logger()
	if task.Attempt > 1 {
		n.stats.redelivered.Add(1)
		n.events.emit(task.Run, messages.EvtTaskRedelivered, messages.TaskRedelivered{Agent: task.ID, Kind: task.Kind,
			Attempt: task.Attempt, Node: n.o.ID})
		if n.resultExists(task) {
			n.stats.alreadyDone.Add(1)
			log.Info().Msg("redelivered task already has a result; acked without rerunning it")
			_ = m.Ack()
			return
		}
	}
	n.stats.taken.Add(1)
	res, handedBack := n.runAgent(m, task)
	if handedBack {
		n.stats.handedBack.Add(1)
		log.Info().Msg("task handed back to the queue (drain timeout)")
		_ = m.Nak()
		return
	}
	if err := n.publishResult(task, res); err != nil {
		// No ack: the task is redelivered and the result published then.
		log.Error().Err(err).Msg("publish result")
		return
	}
	ctx, cancel := context.WithTimeout(n.ctx, 10*time.Second)
	defer cancel()
	if err := m.DoubleAck(ctx); err != nil {
		log.Warn().Err(err).Msg("ack task (the result is published; a redelivery will find it)")
	}
	n.stats.completed.Add(1)
}

// runAgent runs the task's agent to its end while keeping the task alive
// in the queue and answering control messages.
func (n *Node) runAgent(m jetstream.Msg, task actors.ChildTask) (actors.AgentResult, bool) {
	o := n.o.Agent
	o.Node, o.Events, o.Log = n.o.ID, n.o.Events, n.o.Log.With().Str("run", task.Run).Logger()
	o.Artifacts = bus.NewArtifacts(n.o.JS, task.Run)
	h, err := actors.StartAgent(n.ctx, o, task, NewBudgetClient(n.o.NC, n.o.Prefix, task.Run, n.o.ID))
	if err != nil {
		return actors.AgentResult{Agent: task.ID, Kind: task.Kind, Status: actors.StatusFailed, Reason: actors.ReasonError,
			Err: fmt.Sprintf("node %s could not start the agent: %v", n.o.Name, err)}, false
	}
	rt := &runningTask{h: h}
	key := task.Run + "." + task.ID
	n.mu.Lock()
	n.running[key] = rt
	n.mu.Unlock()
	_ = n.beat(n.ctx)
	defer func() {
		n.mu.Lock()
		delete(n.running, key)
		n.mu.Unlock()
		_ = n.beat(n.ctx)
	}()
	subs := n.control(task, h)
	defer func() {
		for _, s := range subs {
			_ = s.Unsubscribe()
		}
	}()
	_ = n.o.NC.Publish(bus.CtlSubject(n.o.Prefix, task.Run, task.ID, ctlStarted), []byte(n.o.ID))
	alive := time.NewTicker(n.o.AckWait / 3)
	defer alive.Stop()
	for {
		select {
		case <-h.Done():
			return h.Wait(context.Background()), rt.handBack.Load()
		case <-alive.C:
			_ = m.InProgress()
		}
	}
}

// control subscribes to the run's and the agent's control subjects.
func (n *Node) control(task actors.ChildTask, h *actors.AgentHandle) []*nats.Subscription {
	p := n.o.Prefix
	var subs []*nats.Subscription
	add := func(subj string, fn nats.MsgHandler) {
		if s, err := n.o.NC.Subscribe(subj, fn); err == nil {
			subs = append(subs, s)
		} else {
			n.o.Log.Warn().Err(err).Str("subject", subj).Msg("subscribe control")
		}
	}
	cancel := func(m *nats.Msg) {
		reason := "cancelled by the orchestrator"
		if c, err := messages.Decode[messages.Cancel](m.Data, maxRequestBytes); err == nil && c.Reason != "" {
			reason += ": " + c.Reason
		}
		h.Cancel(reason)
	}
	add(bus.CtlSubject(p, task.Run, "", ctlCancel), cancel)
	add(bus.CtlSubject(p, task.Run, task.ID, ctlCancel), cancel)
	add(bus.CtlSubject(p, task.Run, task.ID, ctlInput), func(m *nats.Msg) {
		if m.Reply == "" {
			return
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
			ok, _ := h.SendInput(ctx, steer.Message)
			b, _ := json.Marshal(messages.SteerReply{Accepted: ok})
			_ = m.Respond(b)
		}()
	})
	add(bus.CtlSubject(p, task.Run, task.ID, ctlStatus), func(m *nats.Msg) {
		if m.Reply == "" {
			return
		}
		go func() {
			ctx, c := context.WithTimeout(n.ctx, 5*time.Second)
			defer c()
			st, err := h.Status(ctx)
			if err != nil {
				return
			}
			b, _ := json.Marshal(st.Wire())
			_ = m.Respond(b)
		}()
	})
	_ = n.o.NC.Flush()
	return subs
}

func (n *Node) publishResult(task actors.ChildTask, res actors.AgentResult) error {
	b, err := json.Marshal(res.Wire(task.Run, n.o.ID, task.Attempt))
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(n.ctx, 30*time.Second)
	defer cancel()
	_, err = n.o.JS.PublishMsg(ctx, &nats.Msg{Subject: bus.ResultSubject(n.o.Prefix, task.Run, task.ID), Data: b,
		Header: nats.Header{jetstream.MsgIDHeader: []string{task.Run + "." + task.ID + ".result"}}})
	return err
}

// resultExists reports whether the task's result is in the results
// stream already (an earlier attempt published it and died before acking).
func (n *Node) resultExists(task actors.ChildTask) bool {
	ctx, cancel := context.WithTimeout(n.ctx, 5*time.Second)
	defer cancel()
	s, err := n.o.JS.Stream(ctx, bus.ResultsStream)
	if err != nil {
		return false
	}
	_, err = s.GetLastMsgForSubject(ctx, bus.ResultSubject(n.o.Prefix, task.Run, task.ID))
	return err == nil
}
