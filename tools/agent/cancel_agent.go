package agent

import (
	"context"
	_ "embed"

	"github.com/troupe-ai/troupe/tools"
)

//go:embed cancel_agent.md
var cancelAgentDoc string

// CancelAgentParams are cancel_agent's arguments.
type CancelAgentParams struct {
	AgentID string `json:"agent_id" jsonschema:"the agent to stop"`
}

// CancelAgent returns the cancel_agent tool.
func CancelAgent() tools.Tool {
	return tools.New(tools.Spec{Name: NameCancelAgent, Description: cancelAgentDoc, ReadOnly: true, Effects: true, Parallel: tools.ParallelSafe,
		Tier: tools.TierOnRelevance}, runCancelAgent)
}

func runCancelAgent(ctx context.Context, s *tools.Session, p CancelAgentParams) (tools.Result, error) {
	d, refuse := delegatorOf(s)
	if refuse != nil {
		return *refuse, nil
	}
	rep, err := d.Cancel(ctx, p.AgentID)
	return delegationResult(ctx, rep, err)
}
