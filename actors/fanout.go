package actors

import (
	"encoding/json"
	"fmt"

	"github.com/google/uuid"

	"github.com/troupe-ai/troupe/llm"
	"github.com/troupe-ai/troupe/messages"
	"github.com/troupe-ai/troupe/tools"
	agenttools "github.com/troupe-ai/troupe/tools/agent"
)

// screenFanout handles a turn that delegates more children than the
// fan-out threshold: it emits spawn.plan and lets the fan-out policy
// decide. It returns the indices of the delegate calls refused.
func (a *agent) screenFanout(st *stepState, calls []messages.ToolCall) map[int]tools.Result {
	var idx []int
	var plan []messages.SpawnPlanChild
	var tokens int64
	var cost float64
	for i, c := range calls {
		if c.Name != agenttools.NameDelegate {
			continue
		}
		var p agenttools.DelegateParams
		_ = json.Unmarshal(c.Args, &p)
		idx = append(idx, i)
		e := messages.SpawnPlanChild{Type: p.Type, EstimatedTokens: a.rt.settings.EstimateFor(p.Type)}
		if k, ok := a.rt.kinds[p.Type]; ok {
			e.Model = a.rt.pickModel(agentSpec{kind: k, model: p.Model, parentModel: st.model}, 1)
		}
		if a.rt.models.Cost != nil {
			e.EstimatedCost = a.rt.models.Cost(e.Model, llm.Usage{PromptTokens: int(e.EstimatedTokens)})
		}
		tokens += e.EstimatedTokens
		cost += e.EstimatedCost
		plan = append(plan, e)
	}
	limit := a.rt.settings.FanoutLimit()
	if len(idx) <= limit {
		return nil
	}
	policy := a.rt.settings.FanoutPolicy
	if policy == "" {
		policy = PolicyAuto
	}
	data := messages.SpawnPlan{Round: st.round, Children: plan, Count: len(idx), Threshold: limit,
		EstimatedTokens: tokens, EstimatedCost: cost, Policy: policy}
	a.ev.emit(messages.EvtSpawnPlan, data)
	approved, by := true, "policy"
	switch policy {
	case PolicyDeny:
		approved = false
	case PolicyAsk:
		args, _ := json.Marshal(data)
		req := ApprovalRequest{V: messages.ProtocolVersion, ID: uuid.NewString(), Run: a.rt.run, Agent: a.spec.id, Kind: a.spec.kind.Name,
			Tool: "spawn.plan", Args: args, Question: fmt.Sprintf("start %d agents in one turn (over the fan-out limit of %d)?", len(idx), limit)}
		a.ev.emit(messages.EvtApprovalRequested, messages.ApprovalRequested{Tool: req.Tool, Args: req.Args})
		approved, by = a.rt.approve(a.ctx, req)
	}
	a.ev.emit(messages.EvtApprovalDecided, messages.ApprovalDecided{Tool: "spawn.plan", Approved: approved, By: by})
	if approved {
		return nil
	}
	refused := map[int]tools.Result{}
	for _, i := range idx {
		refused[i] = tools.Errorf("fan-out refused: this turn starts %d agents, over the limit of %d, and the fan-out policy said no (%s). Delegate at most %d at a time, or do more in each.", len(idx), limit, by, limit)
	}
	return refused
}
