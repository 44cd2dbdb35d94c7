package actors

import (
	"encoding/json"

	"github.com/troupe-ai/troupe/llm"
	"github.com/troupe-ai/troupe/messages"
	agenttools "github.com/troupe-ai/troupe/tools/agent"
)

// Wire is r as it crosses a process: the result of a remote agent.
func (r AgentResult) Wire(run, node string, attempt int) messages.Result {
	w := messages.Result{V: messages.ProtocolVersion, Run: run, Agent: r.Agent, Kind: r.Kind, Node: node, Attempt: attempt,
		Status: r.Status, Reason: r.Reason, Text: r.Text, Rounds: r.Rounds, TokensIn: r.Usage.PromptTokens,
		TokensOut: r.Usage.CompletionTokens, Cached: r.Usage.CachedTokens, CostUSD: r.Cost, ToolCalls: r.ToolCalls,
		Model: r.Model, Changed: r.Changed, Changes: r.Changeset, Nested: r.Nested, ChangesError: r.ChangesErr}
	if r.Plan != nil {
		w.Plan, _ = json.Marshal(r.Plan)
	}
	if r.Err != "" {
		w.Error = &messages.Error{Code: messages.CodeInternal, Message: r.Err}
	}
	return w
}

// ResultFromWire is the AgentResult a wire result describes. A plan that
// does not decode is dropped (the text still carries it); nested
// changesets that do not pass Result.CheckNested are dropped and the
// reason kept in NestedErr.
func ResultFromWire(w messages.Result) AgentResult {
	r := AgentResult{Agent: w.Agent, Kind: w.Kind, Status: w.Status, Reason: w.Reason, Text: w.Text, Rounds: w.Rounds,
		Usage: llm.Usage{PromptTokens: w.TokensIn, CompletionTokens: w.TokensOut, CachedTokens: w.Cached},
		Cost:  w.CostUSD, ToolCalls: w.ToolCalls, Model: w.Model, Changed: w.Changed, Node: w.Node,
		Changeset: w.Changes, ChangesErr: w.ChangesError}
	var err error
	if r.Nested, err = w.CheckNested(); err != nil {
		r.NestedErr = err.Error()
	}
	if len(w.Plan) > 0 {
		var p agenttools.Plan
		if json.Unmarshal(w.Plan, &p) == nil {
			r.Plan = &p
		}
	}
	if w.Error != nil {
		r.Err = w.Error.Message
	}
	return r
}

// Wire is s as a status request answers it over the wire.
func (s StatusReply) Wire() messages.Status {
	return messages.Status{Agent: s.Agent, Kind: s.Kind, Round: s.Round, Phase: s.Phase, TokensIn: s.PromptTokens,
		TokensOut: s.CompletionTokens, CostUSD: s.Cost, CurrentTool: s.CurrentTool, Model: s.Model, Ended: s.Ended}
}

// StatusFromWire is the StatusReply a wire status describes.
func StatusFromWire(w messages.Status) StatusReply {
	return StatusReply{Agent: w.Agent, Kind: w.Kind, Round: w.Round, Phase: w.Phase, PromptTokens: w.TokensIn,
		CompletionTokens: w.TokensOut, Cost: w.CostUSD, CurrentTool: w.CurrentTool, Model: w.Model, Ended: w.Ended}
}
