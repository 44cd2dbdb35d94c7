package actors

import (
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/troupe-ai/troupe/actors/convo"
	"github.com/troupe-ai/troupe/budget"
	"github.com/troupe-ai/troupe/llm"
	"github.com/troupe-ai/troupe/messages"
	"github.com/troupe-ai/troupe/tools/shell"
)

// SummarizerKind is the X-Troupe-Kind of context-compaction requests.
const SummarizerKind = "summarizer"

// executionPrompt switches an agent from planning to execution.
const executionPrompt = "Planning is over. Carry out the plan now with the full tool set: make the changes, verify them, and finish with a concise answer (a message without tool calls ends your work)."

// forcedExecutionPrompt is used when the planning rounds ran out.
const forcedExecutionPrompt = "The planning phase has reached its round limit without submit_plan. Proceed with execution now using the full tool set, following the best plan you have."

func (a *agent) startRound(c actor.Context) {
	if a.ended {
		return
	}
	if a.usageOut > 0 {
		a.startDeferred = true // onUsage starts it
		return
	}
	if a.ctx.Err() != nil {
		a.finish(c, AgentResult{Status: StatusCancelled, Reason: ReasonCancelled, Text: a.bestText})
		return
	}
	if a.budgetLost != nil {
		// No model call without a grant: nobody answers for the run's budget.
		a.finish(c, AgentResult{Status: StatusFailed, Reason: ReasonBudgetUnreachable, Text: a.bestText, Err: a.budgetLost.Error()})
		return
	}
	if a.round >= a.rt.settings.RoundLimit() {
		a.finish(c, AgentResult{Status: StatusCompleted, Reason: ReasonRoundLimit, Text: a.bestText})
		return
	}
	a.round++
	if a.phase == PhasePlan {
		a.planRounds++
		if a.planRounds > a.rt.settings.PlanningLimit() {
			a.switchToExecution(forcedExecutionPrompt)
		}
	}
	for _, in := range a.pendingInput {
		if err := a.conv.AppendUser(a.round, "Message from your parent agent:\n"+in); err != nil {
			a.log.Error().Err(err).Msg("append input")
		}
	}
	a.pendingInput = nil
	if a.wrapUp && !a.finalRound {
		a.finalRound = true
		if err := a.conv.AppendUser(a.round, budget.WrapUpAdvisory); err != nil {
			a.log.Error().Err(err).Msg("append wrap-up")
		}
		a.ev.emit(messages.EvtBudgetAdvisory, messages.BudgetAdvisory{Agent: a.spec.id, State: messages.BudgetStateExhausted,
			Remaining: a.budgetLeft, Text: budget.WrapUpAdvisory})
	}
	a.session.SetRound(a.round)
	a.model = a.rt.pickModel(a.spec, a.round)
	a.curTools = a.toolSet()
	a.fitToolDefinitions(a.curTools)
	a.ev.emit(messages.EvtRoundStarted, messages.RoundStarted{Round: a.round, Phase: a.phase, Model: a.model,
		EstimateTokens: a.conv.Estimate(), Messages: a.conv.Len(), ToolTokens: a.curTools.tokens,
		ToolsDeferred: len(a.curTools.offer.Deferred)})
	a.busy = true
	req := llm.Request{Model: a.model, Tools: a.curTools.specs, MaxToolCalls: a.rt.settings.ToolCallLimit(),
		Agent: a.spec.id, Run: a.rt.run, Kind: a.spec.kind.Name, Priority: a.rt.settings.RunPriority, Depth: a.spec.depth}
	req.OnRate = a.onRate(a.round, a.model)
	go a.modelStep(a.conv, req, a.unchargedCalls, a.round)
}

func (a *agent) switchToExecution(prompt string) {
	a.phase = PhaseExecute
	if err := a.conv.AppendUser(a.round, prompt); err != nil {
		a.log.Error().Err(err).Msg("append execution prompt")
	}
	a.ev.emit(messages.EvtPhaseChanged, messages.PhaseChanged{Phase: a.phase, Round: a.round})
}

// modelStep runs off the mailbox: it fits the conversation into the
// context window, calls the model and charges the budget, then reports.
// toolCalls are the earlier rounds' tool calls not yet charged to the
// budget (they ride on this usage report).
func (a *agent) modelStep(conv *convo.Conversation, req llm.Request, toolCalls int64, round int) {
	root := a.rt.system.Root
	defer func() {
		if v := recover(); v != nil {
			a.log.Error().Interface("panic", v).Bytes("stack", debug.Stack()).Msg("model step panicked")
			root.Send(a.self, &stepPanic{where: "model step", value: v})
		}
	}()
	var done modelDone
	done.model = req.Model
	// The summary is a side request: it gets its own agent and kind
	// headers so that logs (and scripted servers) tell it from the agent's
	// own rounds.
	done.maintenance, done.maintErr = conv.Fit(a.ctx, convo.Summarizer{Client: a.rt.client,
		Model: req.Model, Run: a.rt.run, Agent: a.spec.id + "-summary", Kind: SummarizerKind})
	req.Messages = conv.Messages()
	done.contextTokens, done.toolResultTokens = conv.Estimate(), conv.ToolResultTokens()
	if note := shell.JobsNote(a.session); note != "" {
		// Live state, not history: it rides on this request only.
		req.Messages = append(req.Messages, llm.Message{Role: llm.RoleUser, Content: note})
	}
	var onDelta func(llm.Delta)
	var dc *deltaCoalescer
	if a.rt.deltas {
		dc = newDeltaCoalescer(round, func(d messages.LLMDelta) { a.ev.emit(messages.EvtLLMDelta, d) }, time.Now)
		onDelta = dc.add
	}
	done.resp, done.err = a.rt.client.Complete(a.ctx, req, onDelta)
	if dc != nil {
		dc.flush() // before llm.response, which the actor emits on done
	}
	if done.err == nil && a.rt.budget != nil {
		used := int64(done.resp.Usage.Total())
		if c := done.maintenance.Compaction; c != nil {
			used += int64(c.Usage.Total())
		}
		u := budget.Usage{Agent: a.spec.id, Tokens: used, ToolCalls: toolCalls,
			Cost: done.resp.Cost, TopUp: a.rt.settings.TopUpFor(a.spec.kind.Name)}
		if len(done.resp.Message.ToolCalls) > 0 {
			// The answer's tool calls start while the charge is on its
			// way: the next round waits for its answer (usageOut).
			done.usageAsync = true
			a.usageWG.Add(1)
			go a.chargeAsync(u)
		} else {
			done.usageDone = a.charge(a.ctx, u)
		}
	}
	root.Send(a.self, &done)
}

func (a *agent) onModel(c actor.Context, m *modelDone) {
	a.busy = false
	a.emitMaintenance(m.maintenance, m.maintErr)
	if m.err != nil {
		if a.ctx.Err() != nil {
			a.finish(c, AgentResult{Status: StatusCancelled, Reason: ReasonCancelled, Text: a.bestText})
			return
		}
		if errors.Is(m.err, llm.ErrOverLimit) {
			a.onRefused(c, m)
			return
		}
		a.finish(c, AgentResult{Status: StatusFailed, Reason: ReasonError, Text: a.bestText, Err: m.err.Error()}) // the provider's own words say what to fix
		return
	}
	resp := m.resp
	if m.usageAsync {
		a.usageOut++
	} else {
		a.applyUsage(&m.usageDone)
	}
	a.usage.PromptTokens += resp.Usage.PromptTokens
	a.usage.CompletionTokens += resp.Usage.CompletionTokens
	a.usage.CachedTokens += resp.Usage.CachedTokens
	a.cost += resp.Cost
	a.unpriced = a.unpriced || (!resp.Priced && resp.Usage.PromptTokens+resp.Usage.CompletionTokens > 0)
	if c := m.maintenance.Compaction; c != nil {
		a.usage.PromptTokens += c.Usage.PromptTokens
		a.usage.CompletionTokens += c.Usage.CompletionTokens
		a.cost += c.Cost
	}
	a.conv.Calibrate(resp.Usage.PromptTokens)
	msg := resp.Message
	names := make([]string, len(msg.ToolCalls))
	for i, tc := range msg.ToolCalls {
		names[i] = tc.Name
	}
	a.ev.emit(messages.EvtLLMResponse, messages.LLMResponse{Round: a.round, Model: resp.Model,
		TokensIn: resp.Usage.PromptTokens, TokensOut: resp.Usage.CompletionTokens, TokensCached: resp.Usage.CachedTokens,
		CostUSD: resp.Cost, CostKnown: resp.Priced, FinishReason: resp.FinishReason, ToolCalls: names,
		ContextTokens: m.contextTokens, ToolResultTokens: m.toolResultTokens,
		TextChars: len(msg.Content), Attempts: resp.Attempts, DurationMS: resp.Duration.Milliseconds(),
		TotalTokens: a.usage.Total(), TotalCostUSD: a.cost})
	if msg.Content != "" {
		a.bestText = msg.Content
	}
	if len(msg.ToolCalls) == 0 {
		reason := ReasonFinished
		if a.finalRound {
			reason = ReasonBudgetExhausted // its answer under the wrap-up advisory
		}
		a.finish(c, AgentResult{Status: StatusCompleted, Reason: reason, Text: msg.Content})
		return
	}
	if a.finalRound {
		a.finish(c, AgentResult{Status: StatusCompleted, Reason: ReasonBudgetExhausted, Text: a.bestText})
		return
	}
	if err := a.conv.AppendAssistant(a.round, msg); err != nil {
		a.finish(c, AgentResult{Status: StatusFailed, Reason: ReasonError, Err: fmt.Sprintf("model answer rejected: %v", err)})
		return
	}
	a.busy = true
	go a.toolStep(a.conv, a.stepState(), msg.ToolCalls, a.checkpointSnapshot(), a.curTools, nil)
}

func (a *agent) emitMaintenance(m convo.Maintenance, err error) {
	if e := m.Eviction; e.Count > 0 {
		a.ev.emit(messages.EvtContextEvicted, messages.ContextEvicted{Count: e.Count, CharsFreed: e.CharsFreed,
			EstimateBefore: e.EstimateBefore, EstimateAfter: e.EstimateAfter})
	}
	if c := m.Compaction; c != nil {
		a.ev.emit(messages.EvtContextCompacted, messages.ContextCompacted{MessagesBefore: c.MessagesBefore,
			MessagesAfter: c.MessagesAfter, EstimateBefore: c.EstimateBefore, EstimateAfter: c.EstimateAfter,
			Summarized: c.Summarized, SummaryChars: c.SummaryChars, Model: c.Model, TokensIn: c.Usage.PromptTokens,
			TokensOut: c.Usage.CompletionTokens, CostUSD: c.Cost})
	}
	if f := m.Fallback; f.Count > 0 {
		a.ev.emit(messages.EvtContextEvicted, messages.ContextEvicted{Count: f.Count, CharsFreed: f.CharsFreed,
			EstimateBefore: f.EstimateBefore, EstimateAfter: f.EstimateAfter, Fallback: true})
	}
	if err != nil && a.ctx.Err() == nil {
		a.log.Warn().Err(err).Msg("context compaction failed; evicted instead")
	}
}
