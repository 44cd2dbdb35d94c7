package tools

import (
	"context"
	_ "embed"
)

//go:embed think.md
var thinkDoc string

// ThinkParams are think's arguments.
type ThinkParams struct {
	Thought string `json:"thought" jsonschema:"your reasoning: what you know, what is uncertain, what to do next"`
}

// Think returns the think tool: a place for the model to reason between
// tool calls. It does nothing and returns nothing; the thought stays in
// the conversation as the call's arguments.
func Think() Tool {
	return New(Spec{Name: NameThink, Description: thinkDoc, ReadOnly: true, Cacheable: false,
		Parallel: ParallelSafe, Tier: TierAlways}, runThink)
}

func runThink(ctx context.Context, _ *Session, _ ThinkParams) (Result, error) {
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	return Result{Text: ""}, nil
}
