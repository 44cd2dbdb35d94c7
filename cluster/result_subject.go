package cluster

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"strconv"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/troupe-ai/troupe/bus"
)

// A delivery's result goes to a subject of its own,
// <prefix>.result.<run>.<agent>.<tag>, whose tag is derived from the
// task's secret and the delivery's attempt; and the results stream keeps
// the first message of each subject, refusing the next. So a result once
// stored cannot be replaced: a message published later on its subject is
// refused by the server, and one published on any other subject (the
// untagged subject of older troupes, a guessed tag) is one the run refuses
// without it touching the real result. Naming the subject before the
// result is stored takes the task's secret, which only the run and the
// nodes that got the task from the queue see.

// unsignedTag is the tag of a task without a secret (one the run did not
// publish: nothing of its result can be proven).
const unsignedTag = "unsigned"

// resumeAttempts bounds the attempts of one queueing of a task whose
// stored results a resumed run looks for (a node delivers a task at most
// max_deliver times, 3 by default).
const resumeAttempts = 1000

// resultTag is the tag of the result subject of the task's delivery at
// attempt: 128 bits of an HMAC under the task's secret, in hex.
func resultTag(secret string, attempt int) string {
	if secret == "" {
		return unsignedTag
	}
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte("result\x00" + strconv.Itoa(attempt)))
	return hex.EncodeToString(m.Sum(nil)[:16])
}

// storedResult looks in the results stream for a result of the task
// (run, agent) whose secret is secret, of an attempt from first to last,
// that proves its delivery. Messages on other subjects under the task's
// (forgeries, other secrets') are never read.
func storedResult(ctx context.Context, b *bus.Conn, run, agent, secret string, first, last int) (*jetstream.RawStreamMsg, bool) {
	if secret == "" || first > last {
		return nil, false
	}
	s, err := b.JetStream().Stream(ctx, b.Names().Results)
	if err != nil {
		return nil, false
	}
	info, err := s.Info(ctx, jetstream.WithSubjectFilter(bus.ResultSubject(b.Prefix(), run, agent, "*")))
	if err != nil || len(info.State.Subjects) == 0 {
		return nil, false
	}
	attempts := make(map[string]int, last-first+1)
	for a := first; a <= last; a++ {
		attempts[resultTag(secret, a)] = a
	}
	for subj := range info.State.Subjects {
		_, _, tag, err := bus.ParseResultSubject(b.Prefix(), subj)
		a, ok := attempts[tag]
		if err != nil || !ok {
			continue
		}
		m, err := s.GetLastMsgForSubject(ctx, subj)
		if err != nil {
			continue
		}
		if at, _ := signedBy(m.Header); at == a && provenResult(secret, m) {
			return m, true
		}
	}
	return nil, false
}

// resultTag is the tag of the task's result subject at attempt, under its
// current secret.
func (c *remoteChild) resultTag(attempt int) string {
	c.mu.Lock()
	secret := c.secret
	c.mu.Unlock()
	return resultTag(secret, attempt)
}
