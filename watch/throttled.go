package watch

import "github.com/troupe-ai/troupe/messages"

// throttled applies an llm.throttled event to the agent: throttled while
// a model call waits for its turn with the hub's provider rate limits,
// running again once it has it (the wait added up), and the provider's
// 429s counted.
func (a *Agent) throttled(d *messages.LLMThrottled) {
	switch d.Phase {
	case messages.ThrottleWaiting:
		a.Status = StatusThrottled
	case messages.ThrottleResumed:
		a.Status = StatusRunning
		a.ThrottledMS += d.WaitedMS
	case messages.ThrottleRefused:
		if d.Status == 429 {
			a.Provider429s++
		}
	}
}
