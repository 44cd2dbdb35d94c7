package tools

import (
	"context"
	_ "embed"
	"strings"
)

//go:embed send_input.md
var sendInputDoc string

// SendInputParams are send_input's arguments.
type SendInputParams struct {
	AgentID string `json:"agent_id" jsonschema:"the running agent's ID"`
	Message string `json:"message" jsonschema:"what to tell it"`
}

// SendInput returns the send_input tool.
func SendInput() Tool {
	return New(Spec{Name: NameSendInput, Kinds: delegationKinds, Description: sendInputDoc, ReadOnly: true, Parallel: ParallelSafe,
		Tier: TierOnRelevance}, runSendInput)
}

func runSendInput(ctx context.Context, s *Session, p SendInputParams) (Result, error) {
	d, refuse := delegatorOf(s)
	if refuse != nil {
		return *refuse, nil
	}
	if strings.TrimSpace(p.Message) == "" {
		return Errorf("message is empty"), nil
	}
	if err := d.SendInput(ctx, p.AgentID, p.Message); err != nil {
		if ctx.Err() != nil {
			return Result{}, ctx.Err()
		}
		return Errorf("%v", err), nil
	}
	return Text("Message queued for agent " + p.AgentID + "; it will see it before its next round."), nil
}
