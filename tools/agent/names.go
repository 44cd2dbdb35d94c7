// Package agent holds the tools through which an agent works with other
// agents and with the user: delegate, check_agent, send_input and
// cancel_agent (through the Delegator the agent actor implements),
// submit_plan, and ask_user (through an Asker). It knows nothing of actors
// or NATS: the host attaches its Delegator and Asker to each session.
package agent

import "github.com/troupe-ai/troupe/tools"

// Names of the agent tools.
const (
	NameAskUser     = "ask_user"
	NameCancelAgent = "cancel_agent"
	NameCheckAgent  = "check_agent"
	NameDelegate    = "delegate"
	NameSendInput   = "send_input"
	NameSubmitPlan  = "submit_plan"
)

// The keys of the agent tools' values in a tools.Session, both attached.
type (
	delegatorKey struct{} // Delegator
	askerKey     struct{} // Asker
)

// UseDelegator lets the delegation tools of session s start and steer
// agents through d; without one they answer that this agent cannot
// delegate.
func UseDelegator(s *tools.Session, d Delegator) {
	if d == nil {
		s.Attach(delegatorKey{}, nil)
		return
	}
	s.Attach(delegatorKey{}, d)
}

// UseAsker lets ask_user in session s put its questions through a;
// without one ask_user answers that nobody can answer (ErrNobodyToAsk).
func UseAsker(s *tools.Session, a Asker) {
	if a == nil {
		s.Attach(askerKey{}, nil)
		return
	}
	s.Attach(askerKey{}, a)
}
