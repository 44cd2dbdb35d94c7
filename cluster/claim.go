package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/bus"
	"github.com/troupe-ai/troupe/messages"
)

// Claims. A node's start notice is a request the run answers (the task
// says so: Task.Claims): the node sends it before the agent starts, and
// again until an answer comes, so a notice lost with a server costs a
// retry, never the run's view of who holds the task. The answer says
// whether the delivery is still the task's: a run that gave a delivery
// up as lost (it queued the task again under a new key, lost.go) answers
// no when that delivery turns up after all, and the node drops it unrun.
// So a task is never started twice because the run gave up on a delivery
// too soon, and the run may give up on one early.

const (
	// claimWait bounds how long a node asks the run about a delivery:
	// with no answer by then (the run is gone, or older), it goes on as a
	// node did before claims, the run's lease deciding.
	claimWait = 15 * time.Second
	// claimTry bounds one ask: an answer lost with its server is given up
	// on this soon, and the notice sent again.
	claimTry = time.Second
)

// announce tells the task's run of notice (a start, refusal or release of
// delivery d). When the run answers notices (task.Claims) it is a
// request, sent again until answered or claimWait passes; it reports
// whether the delivery is the node's to run: false only when the run
// said no (why says why). Otherwise it is a plain publish.
func (n *Node) announce(task actors.ChildTask, d *delivery, notice messages.StartNotice, log zerolog.Logger) (mine bool, why string) {
	b, _ := json.Marshal(notice)
	m := &nats.Msg{Subject: bus.CtlSubject(n.o.Bus.Prefix(), task.Run, task.ID, ctlStarted), Data: b, Header: d.sign(nil, b)}
	nc := n.o.Bus.NATS()
	if !task.Claims {
		_ = nc.PublishMsg(m)
		return true, ""
	}
	ctx, cancel := context.WithTimeout(n.ctx, claimWait)
	defer cancel()
	pause := 100 * time.Millisecond
	for tries := 1; ; tries++ {
		tctx, tcancel := context.WithTimeout(ctx, claimTry)
		rep, err := nc.RequestMsgWithContext(tctx, m)
		tcancel()
		if err == nil {
			r, err := messages.Decode[messages.StartReply](rep.Data, maxRequestBytes)
			if err == nil {
				if tries > 1 {
					log.Info().Int("tries", tries).Msg("the run answered the task's start notice")
				}
				return r.Mine, r.Why
			}
			log.Warn().Err(err).Msg("the run's answer to a start notice could not be read")
			return true, ""
		}
		if ctx.Err() != nil {
			if n.ctx.Err() == nil {
				log.Warn().Int("tries", tries).Msg("the run did not answer the task's start notice: going on without its word")
			}
			return true, ""
		}
		if errors.Is(err, nats.ErrNoResponders) || errors.Is(err, nats.ErrConnectionClosed) || errors.Is(err, nats.ErrConnectionReconnecting) {
			select { // nobody listens yet (the run reconnects): do not spin
			case <-time.After(pause):
			case <-ctx.Done():
			}
			pause = min(2*pause, claimTry)
		}
		log.Debug().Err(err).Int("tries", tries).Msg("start notice sent again")
	}
}

// claimed asks the run whether delivery d is the task's to run, when the
// run answers notices (the notice tells it the task started here); one
// the run disowns is dropped, unrun and unsettled.
func (n *Node) claimed(task actors.ChildTask, d *delivery, log zerolog.Logger) bool {
	if !task.Claims {
		return true
	}
	mine, why := n.announce(task, d, messages.StartNotice{Node: n.o.ID, Name: n.o.Name, Attempt: task.Attempt}, log)
	if !mine {
		n.stats.disowned.Add(1)
		log.Info().Str("why", why).Msg("the run no longer counts on this delivery of the task: dropped unrun")
	}
	return mine
}

// onStarted records which node took (or refused, or released) a task and,
// when the notice is a request, answers it: whether the delivery is the
// task's. A notice of a task that ended lately in this process (a copy of
// an earlier queueing, or of an earlier life of the run, that a node took
// late) is told no; one of a task this run does not know gets no answer
// (the run may be starting again, not yet waiting for it).
func (r *Remote) onStarted(m *nats.Msg) {
	n, err := messages.Decode[messages.StartNotice](m.Data, maxRequestBytes)
	if err != nil {
		return
	}
	reply := func(mine bool, why string) {
		if m.Reply == "" {
			return
		}
		b, _ := json.Marshal(messages.StartReply{V: messages.ProtocolVersion, Mine: mine, Why: why})
		_ = m.Respond(b)
	}
	agent := strings.TrimSuffix(strings.TrimPrefix(m.Subject, bus.CtlSubject(r.o.Bus.Prefix(), r.o.Run, "", "")), "."+ctlStarted)
	r.mu.Lock()
	c, ended := r.waiting[agent], r.endedTasks[agent] != nil
	r.mu.Unlock()
	if c == nil {
		if ended {
			reply(false, "the task has ended: the run has its result")
		}
		return
	}
	attempt, node := signedBy(m.Header)
	err = c.verifyKey(m.Header, m.Data)
	if err == nil && (attempt != n.Attempt || node != n.Node) {
		err = fmt.Errorf("%w: the notice says attempt %d on %s, its proof attempt %d on %s", ErrUnproven, n.Attempt, n.Node, attempt, node)
	}
	if err != nil {
		r.refusedNotices.Add(1)
		r.o.Log.Warn().Err(err).Str("subject", m.Subject).Str("node", n.Node).Msg("start notice refused")
		reply(false, "the notice does not prove the task's current key: the task was queued again, and this delivery is no longer its")
		return
	}
	reply(c.noticed(n))
}
