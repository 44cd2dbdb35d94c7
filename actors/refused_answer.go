package actors

import (
	"errors"
	"fmt"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/troupe-ai/troupe/llm"
	"github.com/troupe-ai/troupe/messages"
)

// refusedNote tells the model why its answer was dropped.
const refusedNote = "Your previous answer was refused and discarded, unread past the limit: %s. Answer again within the limit: fewer tool calls per answer, and large files written in parts."

// onRefused handles a model answer refused for passing a cap on its size
// (llm.ErrOverLimit): the first time in an agent's life the round runs
// again with the model told why; a second refusal fails the agent. Either
// way an llm.refused event says which cap and where it is set.
func (a *agent) onRefused(c actor.Context, m *modelDone) {
	var le *llm.LimitError
	ev := messages.LLMRefused{Round: a.round, Model: m.model, Error: m.err.Error(), Retry: !a.refusedOnce}
	if errors.As(m.err, &le) {
		ev.Limit, ev.Max, ev.Setting = le.What, le.Limit, le.Setting
	}
	a.ev.emit(messages.EvtLLMRefused, ev)
	if a.refusedOnce {
		a.finish(c, AgentResult{Status: StatusFailed, Reason: ReasonError, Text: a.bestText,
			Err: "the model's answer was refused twice: " + m.err.Error()})
		return
	}
	a.refusedOnce = true
	if err := a.conv.AppendUser(a.round, fmt.Sprintf(refusedNote, m.err.Error())); err != nil {
		a.finish(c, AgentResult{Status: StatusFailed, Reason: ReasonError, Text: a.bestText, Err: err.Error()})
		return
	}
	a.startRound(c)
}
