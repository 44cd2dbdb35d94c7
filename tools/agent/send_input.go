package agent

import (
	"context"
	_ "embed"
	"strings"

	"github.com/troupe-ai/troupe/tools"
)

//go:embed send_input.md
var sendInputDoc string

// SendInputParams are send_input's arguments.
type SendInputParams struct {
	AgentID string `json:"agent_id" jsonschema:"the running agent's ID"`
	Message string `json:"message" jsonschema:"what to tell it"`
}

// SendInput returns the send_input tool.
func SendInput() tools.Tool {
	return tools.New(tools.Spec{Name: NameSendInput, Description: sendInputDoc, ReadOnly: true, Effects: true, Parallel: tools.ParallelSafe,
		Tier: tools.TierOnRelevance}, runSendInput)
}

func runSendInput(ctx context.Context, s *tools.Session, p SendInputParams) (tools.Result, error) {
	d, refuse := delegatorOf(s)
	if refuse != nil {
		return *refuse, nil
	}
	if strings.TrimSpace(p.Message) == "" {
		return tools.Errorf("message is empty"), nil
	}
	if err := d.SendInput(ctx, p.AgentID, p.Message); err != nil {
		if ctx.Err() != nil {
			return tools.Result{}, ctx.Err()
		}
		return tools.Errorf("%v", err), nil
	}
	return tools.Text("Message queued for agent " + p.AgentID + "; it will see it before its next round."), nil
}
