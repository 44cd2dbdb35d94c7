package actors

import (
	"strings"
	"sync"
	"time"

	"github.com/troupe-ai/troupe/llm"
	"github.com/troupe-ai/troupe/messages"
)

// deltaInterval is the least time between two llm.delta events of an
// agent: at most about ten a second.
const deltaInterval = 100 * time.Millisecond

// deltaCoalescer gathers a model call's streamed fragments into llm.delta
// events, at most one per interval, and flushes the rest when the call
// ends. A retried call's empty Delta{} (discard what came so far) becomes
// an event with Reset set.
type deltaCoalescer struct {
	mu        sync.Mutex
	round     int
	emit      func(messages.LLMDelta)
	now       func() time.Time
	interval  time.Duration
	last      time.Time
	text      strings.Builder
	reasoning strings.Builder
	reset     bool
}

func newDeltaCoalescer(round int, emit func(messages.LLMDelta), now func() time.Time) *deltaCoalescer {
	return &deltaCoalescer{round: round, emit: emit, now: now, interval: deltaInterval, last: now()}
}

// add takes one fragment (the llm client's onDelta).
func (c *deltaCoalescer) add(d llm.Delta) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if d.Content == "" && d.Reasoning == "" {
		c.text.Reset()
		c.reasoning.Reset()
		c.reset = true
		return
	}
	c.text.WriteString(d.Content)
	c.reasoning.WriteString(d.Reasoning)
	if now := c.now(); now.Sub(c.last) >= c.interval {
		c.flushLocked(now)
	}
}

// flush emits what is gathered (the call ended).
func (c *deltaCoalescer) flush() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.flushLocked(c.now())
}

func (c *deltaCoalescer) flushLocked(now time.Time) {
	if c.text.Len() == 0 && c.reasoning.Len() == 0 && !c.reset {
		return
	}
	c.emit(messages.LLMDelta{Round: c.round, Text: c.text.String(), Reasoning: c.reasoning.String(), Reset: c.reset})
	c.text.Reset()
	c.reasoning.Reset()
	c.reset = false
	c.last = now
}
