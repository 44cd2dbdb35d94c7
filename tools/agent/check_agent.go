package agent

import (
	"context"
	_ "embed"
	"time"

	"github.com/troupe-ai/troupe/tools"
)

//go:embed check_agent.md
var checkAgentDoc string

// CheckAgentParams are check_agent's arguments.
type CheckAgentParams struct {
	AgentID string `json:"agent_id" jsonschema:"the ID delegate returned"`
	Block   bool   `json:"block,omitempty" jsonschema:"wait until the agent ends (default false)"`
	Timeout int    `json:"timeout,omitempty" jsonschema:"seconds to wait with block=true (default 60, max 600)"`
}

// CheckAgent returns the check_agent tool.
func CheckAgent() tools.Tool {
	return tools.New(tools.Spec{Name: NameCheckAgent, Description: checkAgentDoc, ReadOnly: true, Polls: true, Parallel: tools.ParallelSafe,
		// No Truncation of its own: the report's text is capped by the
		// parent (result_cap), as delegate's is.
		Tier: tools.TierAlways, Timeout: 11 * time.Minute}, runCheckAgent, tools.Minimum("timeout", 1), tools.Maximum("timeout", 600))
}

func runCheckAgent(ctx context.Context, s *tools.Session, p CheckAgentParams) (tools.Result, error) {
	d, refuse := delegatorOf(s)
	if refuse != nil {
		return *refuse, nil
	}
	timeout := 60 * time.Second
	if p.Timeout > 0 {
		timeout = time.Duration(p.Timeout) * time.Second
	}
	rep, err := d.Check(ctx, p.AgentID, p.Block, timeout)
	return delegationResult(ctx, rep, err)
}
