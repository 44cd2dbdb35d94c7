package tools

import (
	"errors"
	"io"
	"sync"
)

// A tool package keeps what it needs per session (the shell's sessions
// and jobs, the web tools' configuration and page cache, the delegation
// tools' Delegator) in the Session under a key of its own, an unexported
// type nobody else can name, so the framework knows none of them:
//
//	type stateKey struct{}
//	st, err := tools.State(s, stateKey{}, newShellState)
//
// State is the session's own value, made on first use and closed with
// the session; Attach hands the session a value someone else owns (a
// cache the agents of a run share, an interface the agent implements).

// MutationHook is implemented by session values (attached or owned) that
// go stale when a call may have changed something: after every call whose
// Spec.Mutates, the executor calls AfterMutation on each of them (the web
// cache then forgets the pages of private addresses, which a local server
// may now serve differently).
type MutationHook interface {
	AfterMutation()
}

// sessionState is a session's per-package values.
type sessionState struct {
	mu     sync.Mutex
	values map[any]stateValue
	order  []any // keys in the order they came, so hooks run in a stable order
	closed bool
}

// stateValue is one value and whether the session owns it.
type stateValue struct {
	v     any
	owned bool
}

// Attach keeps v in the session under key, for the tool package that owns
// key to find with Attached. The session does not own v: Close leaves it
// alone. Attach replaces what key held; a nil v removes it.
func (s *Session) Attach(key, v any) {
	st := &s.state
	st.mu.Lock()
	defer st.mu.Unlock()
	if v == nil {
		if _, ok := st.values[key]; ok {
			delete(st.values, key)
			st.order = deleteKey(st.order, key)
		}
		return
	}
	st.put(key, stateValue{v: v})
}

// Attached returns what Attach (or State) keeps under key, or nil.
func (s *Session) Attached(key any) any {
	st := &s.state
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.values[key].v
}

// State returns the session's own value under key, made by mk on first
// use. The session owns it: Close closes it when it is an io.Closer. Once
// the session is closed, a key that holds nothing yet gets no value and
// ErrSessionClosed instead (a value made earlier is still returned, for
// its own checks).
func State[T any](s *Session, key any, mk func() T) (T, error) {
	st := &s.state
	st.mu.Lock()
	defer st.mu.Unlock()
	if sv, ok := st.values[key]; ok {
		if v, ok := sv.v.(T); ok {
			return v, nil
		}
	}
	var zero T
	if st.closed {
		return zero, ErrSessionClosed
	}
	v := mk()
	st.put(key, stateValue{v: v, owned: true})
	return v, nil
}

// put stores sv under key; st.mu is held.
func (st *sessionState) put(key any, sv stateValue) {
	if st.values == nil {
		st.values = map[any]stateValue{}
	}
	if _, ok := st.values[key]; !ok {
		st.order = append(st.order, key)
	}
	st.values[key] = sv
}

// afterMutation calls every MutationHook the session holds.
func (s *Session) afterMutation() {
	st := &s.state
	st.mu.Lock()
	var hooks []MutationHook
	for _, k := range st.order {
		if h, ok := st.values[k].v.(MutationHook); ok {
			hooks = append(hooks, h)
		}
	}
	st.mu.Unlock()
	for _, h := range hooks {
		h.AfterMutation()
	}
}

// Close ends what the agent's tools left running: every value the session
// owns (State) that is an io.Closer is closed, all at once, such as the
// shell's sessions and background jobs; a second Close closes nothing. Call it once the agent has ended;
// values asked for afterwards are refused (ErrSessionClosed). It is safe
// to call more than once and concurrently with a running call.
func (s *Session) Close() error {
	st := &s.state
	st.mu.Lock()
	first := !st.closed
	st.closed = true
	var closers []io.Closer
	for _, k := range st.order {
		if sv := st.values[k]; sv.owned && first {
			if c, ok := sv.v.(io.Closer); ok {
				closers = append(closers, c)
			}
		}
	}
	st.mu.Unlock()
	errs := make([]error, len(closers))
	var wg sync.WaitGroup
	for i, c := range closers {
		wg.Go(func() { errs[i] = c.Close() })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// deleteKey returns keys without key.
func deleteKey(keys []any, key any) []any {
	for i, k := range keys {
		if k == key {
			return append(keys[:i:i], keys[i+1:]...)
		}
	}
	return keys
}
