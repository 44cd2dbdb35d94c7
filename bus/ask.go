package bus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/messages"
)

// Approver asks questions over NATS: each AskRequest is a request on
// <prefix>.ask.<run>.<agent> that any watcher (orchestrator watch
// --interactive) may answer. It has the shape of actors.Approver. An
// answer that is malformed, or answers another question, is counted,
// logged at warn with its subject and ignored: the question waits for a
// proper answer until its deadline.
type Approver struct {
	c        *Conn
	log      zerolog.Logger
	rejected atomic.Uint64
}

// NewApprover returns an approver over c that logs rejected answers to log.
func (c *Conn) NewApprover(log zerolog.Logger) *Approver { return &Approver{c: c, log: log} }

// ErrNobodyAnswering means no watcher listens for questions.
var ErrNobodyAnswering = errors.New("nobody is answering questions (start: orchestrator watch --interactive)")

// Rejected counts the answers refused: malformed, or for a question this
// approver never asked.
func (a *Approver) Rejected() uint64 { return a.rejected.Load() }

// Approve asks req and waits for the answer until ctx ends (its deadline
// is the question's).
func (a *Approver) Approve(ctx context.Context, req messages.AskRequest) (bool, error) {
	ans, err := a.Ask(ctx, req)
	if err != nil {
		return false, err
	}
	return ans.Approved, nil
}

// Ask asks req (an approval, or an open question with Choices) and returns
// the first valid answer to it.
func (a *Approver) Ask(ctx context.Context, req messages.AskRequest) (messages.AskAnswer, error) {
	if dl, ok := ctx.Deadline(); ok {
		req.DeadlineUnixMS = dl.UnixMilli()
	}
	data, err := json.Marshal(req)
	if err != nil {
		return messages.AskAnswer{}, err
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Minute)
		defer cancel()
	}
	nc := a.c.nc
	subj := AskSubject(a.c.prefix, token(req.Run), token(req.Agent))
	inbox := nc.NewRespInbox()
	sub, err := nc.SubscribeSync(inbox)
	if err != nil {
		return messages.AskAnswer{}, err
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := nc.PublishRequest(subj, inbox, data); err != nil {
		return messages.AskAnswer{}, err
	}
	for {
		m, err := sub.NextMsgWithContext(ctx)
		if errors.Is(err, nats.ErrNoResponders) {
			// Nobody listens yet: a watcher may start; ask again until the
			// question's time is up, then the default (no) applies.
			select {
			case <-ctx.Done():
				return messages.AskAnswer{}, ErrNobodyAnswering
			case <-time.After(250 * time.Millisecond):
			}
			if err := nc.PublishRequest(subj, inbox, data); err != nil {
				return messages.AskAnswer{}, err
			}
			continue
		}
		if err != nil {
			return messages.AskAnswer{}, err
		}
		ans, err := messages.Decode[messages.AskAnswer](m.Data, 64<<10)
		if err == nil && ans.ID != req.ID {
			err = fmt.Errorf("answer for question %q, which was not asked here (asked %s)", ans.ID, req.ID)
		}
		if err != nil {
			a.rejected.Add(1)
			a.log.Warn().Err(err).Str("subject", subj).Str("reply_subject", m.Subject).Msg("answer rejected")
			continue
		}
		return ans, nil
	}
}

// Question is a question received by an Answerer, with the way to answer
// it once.
type Question struct {
	Req     messages.AskRequest
	Subject string
	msg     *nats.Msg
	done    atomic.Bool
}

// Answer replies yes or no to an approval (once; later calls do nothing).
func (q *Question) Answer(approved bool, by string) error {
	return q.reply(messages.AskAnswer{V: messages.ProtocolVersion, ID: q.Req.ID, Approved: approved, AnsweredBy: by})
}

// Reply answers an open question with text (once).
func (q *Question) Reply(text, by string) error {
	return q.reply(messages.AskAnswer{V: messages.ProtocolVersion, ID: q.Req.ID, Text: text, AnsweredBy: by})
}

func (q *Question) reply(a messages.AskAnswer) error {
	if !q.done.CompareAndSwap(false, true) {
		return nil
	}
	b, _ := json.Marshal(a)
	return q.msg.Respond(b)
}

// Answerer receives questions (of one run, or all runs) for someone to
// answer. Malformed questions are counted, logged and dropped.
type Answerer struct {
	C        <-chan *Question
	sub      *nats.Subscription
	rejected atomic.Uint64
}

// Answer subscribes to the questions of run ("" = every run).
func (c *Conn) Answer(run string, log zerolog.Logger) (*Answerer, error) {
	subj := c.prefix + ".ask.>"
	if run != "" {
		subj = c.prefix + ".ask." + run + ".>"
	}
	ch := make(chan *Question, 64)
	a := &Answerer{C: ch}
	sub, err := c.nc.Subscribe(subj, func(m *nats.Msg) {
		req, err := messages.Decode[messages.AskRequest](m.Data, 64<<10)
		if err == nil && m.Subject != AskSubject(c.prefix, token(req.Run), token(req.Agent)) {
			err = fmt.Errorf("asked on %s for %s/%s", m.Subject, req.Run, req.Agent)
		}
		if err != nil || m.Reply == "" {
			a.rejected.Add(1)
			log.Warn().Err(err).Str("subject", m.Subject).Msg("question rejected")
			return
		}
		select {
		case ch <- &Question{Req: req, Subject: m.Subject, msg: m}:
		default:
			a.rejected.Add(1)
			log.Warn().Str("subject", m.Subject).Msg("too many questions waiting; this one goes unanswered")
		}
	})
	if err != nil {
		return nil, err
	}
	if err := c.nc.Flush(); err != nil {
		sub.Unsubscribe()
		return nil, err
	}
	a.sub = sub
	return a, nil
}

// Rejected counts the malformed questions dropped.
func (a *Answerer) Rejected() uint64 { return a.rejected.Load() }

// Stop unsubscribes.
func (a *Answerer) Stop() { _ = a.sub.Unsubscribe() }
