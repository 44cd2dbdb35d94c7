package actors

import (
	"github.com/troupe-ai/troupe/llm"
	"github.com/troupe-ai/troupe/messages"
)

// onRate turns what the model client says of rate limits into llm.throttled
// events: a call waiting for its turn with the hub's shared provider
// limits (watch shows the agent throttled), getting it, or refused by
// the provider. It runs on the model step's goroutine.
func (a *agent) onRate(round int, model string) func(llm.RateEvent) {
	return func(e llm.RateEvent) {
		d := messages.LLMThrottled{Round: round, Model: model, Phase: e.Kind, Reason: e.Reason, Status: e.Status,
			RetryAfterMS: e.RetryAfter.Milliseconds(), FrozenMS: e.Left.Milliseconds(), WaitedMS: e.Waited.Milliseconds(),
			RPM: e.Limits.RPM, TPM: e.Limits.TPM, Attempt: e.Attempt}
		a.ev.emit(messages.EvtLLMThrottled, d)
	}
}
