package cluster

import (
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/bus"
	"github.com/troupe-ai/troupe/messages"
)

// onResult hands a task's first authentic result to its parent: a result
// of this run, on the subject of its task's current delivery, proving
// that delivery's key (proof.go, result_subject.go). Anything else is
// refused and counted, and the task goes on waiting.
func (r *Remote) onResult(m jetstream.Msg) {
	run, agent, tag, err := bus.ParseResultSubject(r.o.Bus.Prefix(), m.Subject())
	if err == nil && tag == "" {
		r.onUntaggedResult(m, agent)
		return
	}
	res, derr := DecodeResult(m.Data())
	if err == nil {
		err = derr
	}
	if err != nil || res.Run != r.o.Run || run != res.Run || agent != res.Agent {
		r.forged.Add(1)
		r.o.Log.Warn().Err(err).Str("subject", m.Subject()).Msg("result rejected")
		return
	}
	r.mu.Lock()
	c := r.waiting[res.Agent]
	r.mu.Unlock()
	if c != nil {
		err := c.verifyResult(m, res, tag)
		if err != nil {
			// Not from the node that holds the task's current delivery:
			// refused, and the task still waits for its real result.
			r.forged.Add(1)
			r.o.Log.Warn().Err(err).Str("subject", m.Subject()).Str("node", res.Node).Msg("result refused")
			return
		}
		r.mu.Lock()
		if r.waiting[res.Agent] != c {
			c = nil // another result came first
		} else {
			delete(r.waiting, res.Agent)
		}
		r.mu.Unlock()
	}
	if c == nil {
		r.duplicates.Add(1) // a task this run sent, answered twice, or a forgery
		r.o.Log.Warn().Str("subject", m.Subject()).Str("node", res.Node).Int("attempt", res.Attempt).
			Msg("result for no waiting task dropped (duplicate or unknown)")
		return
	}
	r.relayOpened(c, res)
	c.done <- actors.ResultFromWire(res)
}

// verifyResult checks that res, stored on the subject of tag, proves the
// task's current delivery, names it, and came on that delivery's subject.
func (c *remoteChild) verifyResult(m jetstream.Msg, res messages.Result, tag string) error {
	if err := c.verify(m.Headers(), m.Data()); err != nil {
		return err
	}
	attempt, node := signedBy(m.Headers())
	if attempt != res.Attempt || node != res.Node {
		return fmt.Errorf("%w: the result says attempt %d on %s, its proof attempt %d on %s", ErrUnproven, res.Attempt, res.Node, attempt, node)
	}
	if want := c.resultTag(attempt); tag != want {
		return fmt.Errorf("%w: published on %s, not on the subject of attempt %d", ErrUnproven, m.Subject(), attempt)
	}
	return nil
}

// onUntaggedResult refuses a result on the untagged subject
// <prefix>.result.<run>.<agent>, where troupe published results before
// they had a tag: one that proves the task's current delivery comes from
// a node of an older troupe, and fails the task with a sentence saying so
// (that node acked it: nothing else would end it); any other is counted
// as forged.
func (r *Remote) onUntaggedResult(m jetstream.Msg, agent string) {
	r.forged.Add(1)
	res, err := DecodeResult(m.Data())
	r.mu.Lock()
	c := r.waiting[agent]
	r.mu.Unlock()
	if err == nil && c != nil && res.Agent == agent && res.Run == r.o.Run {
		err = c.verify(m.Headers(), m.Data())
	} else if err == nil {
		err = fmt.Errorf("%w: no task of this run waits for it", ErrUnproven)
	}
	if err != nil {
		r.o.Log.Warn().Err(err).Str("subject", m.Subject()).Msg("result on the untagged subject of an older troupe refused")
		return
	}
	r.mu.Lock()
	if r.waiting[agent] != c {
		c = nil
	} else {
		delete(r.waiting, agent)
	}
	r.mu.Unlock()
	if c == nil {
		return
	}
	why := fmt.Sprintf("%v: node %s published the result of task %s on %s, the untagged result subject of an older troupe; this run reads results only on <prefix>.result.<run>.<agent>.<tag> (docs/wire.md): upgrade the node",
		ErrUntaggedResult, res.Node, agent, m.Subject())
	r.o.Log.Error().Str("subject", m.Subject()).Str("node", res.Node).Msg(why)
	c.done <- actors.AgentResult{Status: actors.StatusFailed, Reason: actors.ReasonError, Err: why}
}
