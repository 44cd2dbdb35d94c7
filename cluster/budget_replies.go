package cluster

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
)

// Budget requests sent again. A request, or its reply, can be lost with a
// server (its client's or the run's) and the reconnect to another; the
// client asks again after budgetTry, under the request's ID
// (budgetRequestHeader). The server answers every copy of a request with
// the one reply it made: a usage sent twice is charged once, an acquire
// granted once.

// budgetRequestHeader carries a budget request's ID.
const budgetRequestHeader = "Troupe-Budget-Request"

// budgetTry is how long one try of a budget request waits for its reply
// before it is sent again.
const budgetTry = 2 * time.Second

// newRequestID is a budget request's ID.
func newRequestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// The server remembers the replies of at most repliesMax requests, each
// for repliesKeep (a client gives up long before).
const (
	repliesMax  = 4096
	repliesKeep = 2 * time.Minute
	// maxWaiting bounds the copies of one request kept waiting for its
	// reply (an acquire waiting its turn is asked again every budgetTry).
	maxWaiting = 4
)

// replies are the budget server's answered (and being answered) requests
// by ID. Those being answered are as many as the server's queues and
// workers hold; the answered ones are listed in the order they were
// answered, and forgotten oldest first.
type replies struct {
	mu    sync.Mutex
	byID  map[string]*served
	order []string // answered, oldest first
}

// served is one request: the same ID with other content is another
// request, refused.
type served struct {
	sum     [32]byte
	at      time.Time
	done    bool
	reply   []byte
	waiting []*nats.Msg // copies that came while it was being answered
}

func newReplies() *replies { return &replies{byID: map[string]*served{}} }

// admit reports whether m is to be answered: not when it is a copy of a
// request answered (the reply is sent again now) or being answered (it
// gets the reply too, once made). A request without an ID is always
// answered.
func (r *replies) admit(m *nats.Msg) bool {
	id := m.Header.Get(budgetRequestHeader)
	if id == "" {
		return true
	}
	sum := sha256.Sum256(append([]byte(m.Subject+"\x00"), m.Data...))
	r.mu.Lock()
	defer r.mu.Unlock()
	r.forget(time.Now())
	s := r.byID[id]
	switch {
	case s == nil:
		r.byID[id] = &served{sum: sum}
		return true
	case s.sum != sum:
		return true // another request under a reused ID: answered on its own, not remembered
	case s.done:
		_ = m.Respond(s.reply)
	default: // only the latest copies' askers still wait
		if len(s.waiting) == maxWaiting {
			s.waiting = append(s.waiting[:0], s.waiting[1:]...)
		}
		s.waiting = append(s.waiting, m)
	}
	return false
}

// answer sends reply to m and to the copies of its request that waited,
// and remembers it for the copies to come.
func (r *replies) answer(m *nats.Msg, reply []byte) error {
	err := m.Respond(reply)
	id := m.Header.Get(budgetRequestHeader)
	if id == "" {
		return err
	}
	r.mu.Lock()
	s := r.byID[id]
	var waiting []*nats.Msg
	if s != nil && !s.done {
		s.done, s.reply, s.at, waiting, s.waiting = true, reply, time.Now(), s.waiting, nil
		r.order = append(r.order, id)
		r.forget(s.at)
	}
	r.mu.Unlock()
	for _, w := range waiting {
		_ = w.Respond(reply)
	}
	return err
}

// forget drops the answered requests older than repliesKeep, and the
// oldest beyond repliesMax. r.mu is held.
func (r *replies) forget(now time.Time) {
	n := 0
	for ; n < len(r.order); n++ {
		s := r.byID[r.order[n]]
		if len(r.order)-n <= repliesMax && now.Sub(s.at) <= repliesKeep {
			break
		}
		delete(r.byID, r.order[n])
	}
	if n > 0 {
		r.order = append(r.order[:0:0], r.order[n:]...)
	}
}

// size is how many requests are remembered.
func (r *replies) size() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.byID)
}
