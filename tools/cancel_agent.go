package tools

import (
	"context"
	_ "embed"
)

//go:embed cancel_agent.md
var cancelAgentDoc string

// CancelAgentParams are cancel_agent's arguments.
type CancelAgentParams struct {
	AgentID string `json:"agent_id" jsonschema:"the agent to stop"`
}

// CancelAgent returns the cancel_agent tool.
func CancelAgent() Tool {
	return New(Spec{Name: NameCancelAgent, Kinds: delegationKinds, Description: cancelAgentDoc, ReadOnly: true, Parallel: ParallelSafe,
		Tier: TierOnRelevance}, runCancelAgent)
}

func runCancelAgent(ctx context.Context, s *Session, p CancelAgentParams) (Result, error) {
	d, refuse := delegatorOf(s)
	if refuse != nil {
		return *refuse, nil
	}
	rep, err := d.Cancel(ctx, p.AgentID)
	return delegationResult(ctx, rep, err)
}

// DelegationTools returns the tools of agents that may delegate.
func DelegationTools() []Tool {
	return []Tool{Delegate(), CheckAgent(), SendInput(), CancelAgent()}
}
