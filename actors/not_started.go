package actors

import (
	"github.com/troupe-ai/troupe/internal/text"
	"github.com/troupe-ai/troupe/messages"
)

// maxNotStarted bounds SubAgents.NotStarted: a run that cannot start its
// agents (its data directory refused, say) lists the first ones; Failed
// counts them all.
const maxNotStarted = 20

// notStarted tells that the child spec describes could not be started
// once its lease was granted (it could not be placed, isolated or
// spawned: why): not to its parent's model alone but on the bus, as the
// child's agent.failed (the watchers see an agent that failed before its
// first round), and in the run's result, where it counts as a failed
// sub-agent and is named in SubAgents.NotStarted.
func (a *agent) notStarted(spec agentSpec, why error) {
	msg := "did not start: " + why.Error()
	ev := newAgentEvents(a.rt.events, a.rt.run, spec.id, a.spec.id, spec.kind.Name, a.rt.node, a.rt.log)
	ev.emit(messages.EvtAgentFailed, messages.AgentEnded{Status: StatusFailed, Reason: ReasonError, Error: text.Clip(msg, 2000)})
	a.rt.subs.add(spec.id, AgentResult{Status: StatusFailed, Reason: ReasonError, Err: msg})
	a.rt.subs.notStarted(spec.id + " (" + spec.kind.Name + "): " + text.Clip(why.Error(), 500))
}
