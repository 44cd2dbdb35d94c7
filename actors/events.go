package actors

import (
	"sync"

	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/messages"
)

// Emitter receives lifecycle events. Implementations must be safe for
// concurrent use and must not block for long: agents emit from their tool
// goroutines. The NATS publisher, the zerolog sink and the in-memory
// Recorder are emitters.
type Emitter interface {
	Emit(messages.Event)
}

// Emitters fans events out to several emitters in order.
type Emitters []Emitter

// Emit sends ev to every emitter.
func (es Emitters) Emit(ev messages.Event) {
	for _, e := range es {
		if e != nil {
			e.Emit(ev)
		}
	}
}

// Recorder keeps every event in memory, for tests and summaries.
type Recorder struct {
	mu     sync.Mutex
	events []messages.Event
}

// Emit records ev.
func (r *Recorder) Emit(ev messages.Event) {
	r.mu.Lock()
	r.events = append(r.events, ev)
	r.mu.Unlock()
}

// Events returns a copy of the events recorded so far.
func (r *Recorder) Events() []messages.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]messages.Event(nil), r.events...)
}

// OfType returns the recorded events of type typ.
func (r *Recorder) OfType(typ string) []messages.Event {
	var out []messages.Event
	for _, ev := range r.Events() {
		if ev.Type == typ {
			out = append(out, ev)
		}
	}
	return out
}

// LogEmitter writes events to a zerolog logger at debug level (tool and
// round events) or info level (agent and run events).
type LogEmitter struct {
	Log zerolog.Logger
}

// Emit logs ev.
func (l LogEmitter) Emit(ev messages.Event) {
	lvl := zerolog.DebugLevel
	switch ev.Type {
	case messages.EvtAgentStarted, messages.EvtAgentFinished, messages.EvtAgentCancelled,
		messages.EvtRunStarted, messages.EvtRunFinished, messages.EvtAgentSpawned:
		lvl = zerolog.InfoLevel
	case messages.EvtAgentFailed, messages.EvtDoomLoop:
		lvl = zerolog.WarnLevel
	}
	l.Log.WithLevel(lvl).Str("run", ev.Run).Str("agent", ev.Agent).Str("kind", ev.Kind).
		Uint64("seq", ev.Seq).RawJSON("data", rawOrNull(ev.Data)).Msg(ev.Type)
}

func rawOrNull(b []byte) []byte {
	if len(b) == 0 {
		return []byte("null")
	}
	return b
}

// agentEvents stamps one agent's events: envelope fields and a sequence
// number from 1 without gaps. Emission is serialized so that sinks see an
// agent's events in seq order.
type agentEvents struct {
	mu   sync.Mutex
	seq  uint64
	base messages.Event
	out  Emitter
	log  zerolog.Logger
}

func newAgentEvents(out Emitter, run, agent, parent, kind, node string, log zerolog.Logger) *agentEvents {
	return &agentEvents{out: out, log: log,
		base: messages.Event{Run: run, Agent: agent, Parent: parent, Kind: kind, Node: node}}
}

// withAttempt stamps the events with a remote task's delivery attempt.
func (a *agentEvents) withAttempt(n int) *agentEvents {
	a.base.Attempt = n
	return a
}

// emit sends one event of type typ with data as its payload.
func (a *agentEvents) emit(typ string, data any) {
	if a == nil || a.out == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	ev, err := messages.NewEvent(a.base.Run, a.base.Agent, typ, a.seq+1, data)
	if err != nil {
		a.log.Error().Err(err).Str("type", typ).Msg("build event")
		return
	}
	a.seq++
	ev.Parent, ev.Kind, ev.Node, ev.Attempt = a.base.Parent, a.base.Kind, a.base.Node, a.base.Attempt
	a.out.Emit(ev)
}

// current is the last sequence number used.
func (a *agentEvents) current() uint64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.seq
}

// setSeq continues numbering after a resumed agent's last event.
func (a *agentEvents) setSeq(n uint64) {
	a.mu.Lock()
	a.seq = n
	a.mu.Unlock()
}

// seqTracker passes events on and remembers the last seq each agent of
// this process emitted: run.finished carries them (LastSeq), so a
// subscriber can count the events it missed, the last ones included.
type seqTracker struct {
	out  Emitter
	mu   sync.Mutex
	seqs map[string]uint64
}

// Emit records ev's seq and passes ev on.
func (s *seqTracker) Emit(ev messages.Event) {
	s.mu.Lock()
	if s.seqs == nil {
		s.seqs = map[string]uint64{}
	}
	s.seqs[ev.Agent] = max(s.seqs[ev.Agent], ev.Seq)
	s.mu.Unlock()
	s.out.Emit(ev)
}

// last returns a copy of the last seq per agent.
func (s *seqTracker) last() map[string]uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]uint64, len(s.seqs))
	for k, v := range s.seqs {
		out[k] = v
	}
	return out
}
