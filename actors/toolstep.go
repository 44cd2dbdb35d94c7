package actors

import (
	"encoding/json"
	"errors"
	"maps"
	"runtime/debug"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/troupe-ai/troupe/actors/convo"
	"github.com/troupe-ai/troupe/budget"
	"github.com/troupe-ai/troupe/messages"
	"github.com/troupe-ai/troupe/tools"
	agenttools "github.com/troupe-ai/troupe/tools/agent"
)

// toolStep runs off the mailbox: it saves the step's checkpoint (calls
// pending), screens the calls (doom loop, approval), executes the rest
// through the executor, recording each result in the journal as it
// completes, appends the results to the conversation, then reports.
// prior holds what a resumed step's journal recorded (nil for a new
// step, which saves its checkpoint first; a resumed step's was saved by
// resumeStep).
// It reads only its arguments and the run's shared, concurrency-safe
// parts (events, session, checkpointer); what it changes comes back in
// toolsDone.
func (a *agent) toolStep(conv *convo.Conversation, st stepState, calls []messages.ToolCall, ck *convo.Checkpoint,
	pt *phaseTools, prior map[string]convo.JournalEntry) {
	reg := pt.reg
	root := a.rt.system.Root
	defer func() {
		if v := recover(); v != nil {
			a.log.Error().Interface("panic", v).Bytes("stack", debug.Stack()).Msg("tool step panicked")
			root.Send(a.self, &stepPanic{where: "tool step", value: v})
		}
	}()
	done := &toolsDone{calls: calls, results: make([]tools.Result, len(calls))}
	saved := func() {} // writes the step's checkpoint, when its calls may start first
	if prior == nil {
		saved = a.saveStep(conv, st, calls, ck, reg)
	}
	settled, open := a.settleFromJournal(calls, prior, done.results)
	var run []messages.ToolCall
	var idx []int
	pend := make([]messages.ToolCall, len(open))
	for j, i := range open {
		pend[j] = calls[i]
	}
	approved := map[string]string{} // call ID → the fingerprint of the change approved
	fanout := a.screenFanout(&st, pend)
	for j, call := range pend {
		i := open[j]
		r, refused := fanout[j]
		fp := ""
		if !refused {
			r, refused, fp = a.screen(&st, call, reg)
		}
		if refused {
			done.results[i] = r
			settled = append(settled, journalDone(call.ID, r))
			continue
		}
		if fp != "" {
			approved[call.ID] = fp
		}
		run = append(run, call)
		idx = append(idx, i)
	}
	if len(settled) > 0 {
		saved() // their records go behind the step
	}
	a.ckpt.record(false, settled...) // refusals, interrupted calls: nothing ran
	if len(run) > 0 {
		ex := a.executor(st, reg)
		ex.Approved = approved
		ex.Meanwhile = saved
		for j, r := range ex.Run(a.ctx, run) {
			done.results[idx[j]] = r
			if t, ok := reg.Get(run[j].Name); ok && !r.IsError && !t.Spec().ReadOnly && t.Spec().Parallel == tools.PerPath {
				done.changed = append(done.changed, t.Paths(run[j].Args)...)
			}
		}
		done.toolCalls = int64(len(run))
		done.extraUsage, done.extraCost = extractionUsage(done.results)
		a.chargeTools(done)
	}
	saved() // conv is written out before it changes again (a no-op if done)
	trs := make([]convo.ToolResult, len(calls))
	for i, call := range calls {
		trs[i] = convo.ToolResult{CallID: call.ID, Content: resultContent(done.results[i])}
	}
	done.advisory, done.err = conv.AppendToolResults(trs)
	if done.err == nil && ck.Phase == PhasePlan && a.spec.kind.Name != KindPlanner && planAccepted(calls, done.results) {
		done.switched = true
		done.err = conv.AppendUser(st.round, executionPrompt)
	}
	done.loaded = loadedBy(pt, calls, done.results)
	done.doom = st.doom
	root.Send(a.self, done)
}

// saveStep saves a new step's checkpoint, from which a killed run
// resumes it: before any of its calls starts, or, when every call only
// reads, while they run: the returned func writes it then (see
// checkpointer.beginBehind; conv must not change before it is called).
func (a *agent) saveStep(conv *convo.Conversation, st stepState, calls []messages.ToolCall, ck *convo.Checkpoint,
	reg *tools.Registry) (wait func()) {
	state, _ := json.Marshal(checkpointState{PlanRounds: st.planRounds, BestText: st.bestText, Seq: a.ev.current(),
		Reads: a.session.Reads.Snapshot(), LoadedTools: loadedNames(st.loaded, nil)})
	ck.State = state
	ck.Conversation = conv // this goroutine owns it
	if replayable(calls, reg) {
		return a.ckpt.beginBehind(ck)
	}
	a.ckpt.begin(ck)
	return func() {}
}

// replayable reports whether every call is of a tool of reg that only
// reads (tools.Spec.Replayable): such a step's calls may start before its
// checkpoint is on disk.
func replayable(calls []messages.ToolCall, reg *tools.Registry) bool {
	for _, call := range calls {
		t, ok := reg.Get(call.Name)
		if !ok || !t.Spec().Replayable() {
			return false
		}
	}
	return true
}

// resultContent is a result as the conversation holds it.
func resultContent(r tools.Result) string {
	if r.IsError && r.Text == "" {
		return "error"
	}
	return r.Text
}

// journalDone is the journal record of a completed call.
func journalDone(callID string, r tools.Result) convo.JournalEntry {
	names, _ := r.Metadata[tools.MetaLoadedTools].([]string)
	return convo.JournalEntry{CallID: callID, Done: true, Content: resultContent(r), IsError: r.IsError, Loaded: names}
}

// executor builds the executor for the current phase's tool set, with
// hooks that emit tool events and keep Status's current tool up to date.
func (a *agent) executor(st stepState, reg *tools.Registry) *tools.Executor {
	hint := ""
	if st.phase == PhasePlan {
		hint = "This is the planning phase: call submit_plan to get the rest of your tools."
	}
	return &tools.Executor{
		Tools: reg, Known: a.rt.known, Kind: a.spec.kind.Name, Hint: hint,
		Session: a.session, Log: a.log,
		Hooks: tools.Hooks{
			OnStart: func(ci tools.CallInfo) {
				if a.mutating(messages.ToolCall{ID: ci.ID, Name: ci.Name, Args: ci.Args}, reg) {
					// On disk before the call can change anything: a resumed
					// run will not start it again (see settleFromJournal).
					a.ckpt.record(true, convo.JournalEntry{CallID: ci.ID, Started: true})
				}
				a.currentTool.set(ci.Name)
				a.ev.emit(messages.EvtToolStarted, messages.ToolStarted{Round: st.round, CallID: ci.ID,
					Tool: ci.Name, Args: orEmpty(ci.Args), Parallel: ci.Parallel})
			},
			OnFinish: func(ci tools.CallInfo, r tools.Result) {
				// On disk before a call that waits for this one starts, and
				// before the next model request. Not fsynced: should a power
				// loss take it, the call's start record (fsynced if it
				// mutates) has it reported interrupted, not run again; and
				// the next fsync (a dependent mutating call's start) takes
				// it along.
				e := journalDone(ci.ID, r)
				e.Reads = ci.Reads
				a.ckpt.record(false, e)
				a.currentTool.clear(ci.Name)
				data := messages.ToolFinished{Round: st.round, CallID: ci.ID, Tool: ci.Name,
					DurationMS: float64(ci.Duration.Microseconds()) / 1000, OutputBytes: ci.OutputBytes,
					Cached: ci.Cached, Cacheable: ci.Cacheable, Truncated: ci.Truncated, IsError: ci.IsError}
				data.Diff, data.Metadata = splitDiff(r.Metadata)
				if a.session.Cache != nil {
					data.CacheHits = int64(a.session.Cache.AgentStats(a.spec.id).Hits)
				}
				a.ev.emit(messages.EvtToolFinished, data)
			},
		},
	}
}

func (a *agent) onTools(c actor.Context, m *toolsDone) {
	a.busy = false
	a.usage.PromptTokens += m.extraUsage.PromptTokens
	a.usage.CompletionTokens += m.extraUsage.CompletionTokens
	a.cost += m.extraCost
	a.doom = m.doom
	if m.budgetLost != nil {
		a.budgetLost = m.budgetLost
	}
	for _, p := range m.changed {
		if a.changed == nil {
			a.changed = map[string]bool{}
		}
		a.changed[p] = true
	}
	a.toolCalls += int64(len(m.calls))
	a.load(m.loaded)
	if !m.charged {
		a.unchargedCalls += m.toolCalls
	}
	if m.err != nil {
		a.finish(c, AgentResult{Status: StatusFailed, Reason: ReasonError, Text: a.bestText, Err: m.err.Error()})
		return
	}
	if m.budgetState == messages.BudgetStateExhausted && m.budgetLent == 0 {
		a.wrapUp, a.budgetLeft = true, m.budgetLeft // e.g. the run's tool-call limit was reached
	}
	if m.advisory.Level != convo.NoAdvisory {
		a.ev.emit(messages.EvtContextAdvisory, messages.ContextAdvisory{Level: m.advisory.Level.String(),
			Percent: m.advisory.Percent, Used: m.advisory.Used, Window: m.advisory.Window, Text: m.advisory.Text})
	}
	if a.ctx.Err() != nil {
		a.finish(c, AgentResult{Status: StatusCancelled, Reason: ReasonCancelled, Text: a.bestText})
		return
	}
	for i, call := range m.calls {
		if call.Name != agenttools.NameSubmitPlan || m.results[i].IsError {
			continue
		}
		plan, ok := m.results[i].Metadata["plan"].(agenttools.Plan)
		if ok { // a result read back from the journal has no metadata
			a.plan = &plan
		}
		if a.spec.kind.Name == KindPlanner {
			a.finish(c, AgentResult{Status: StatusCompleted, Reason: ReasonPlanSubmitted, Text: plan.Render(), Plan: &plan})
			return
		}
	}
	if m.switched {
		a.phase = PhaseExecute
		a.ev.emit(messages.EvtPhaseChanged, messages.PhaseChanged{Phase: a.phase, Round: a.round, By: agenttools.NameSubmitPlan})
	}
	if a.finalRound {
		a.finish(c, AgentResult{Status: StatusCompleted, Reason: ReasonBudgetExhausted, Text: a.bestText})
		return
	}
	c.Send(c.Self(), &startRound{})
}

// stepState is the agent state a tool step works from: copies taken on
// the actor's goroutine, so the step never reads or writes agent fields.
type stepState struct {
	round      int
	phase      string
	model      string
	planRounds int
	bestText   string
	doom       doomState       // updated by the step and handed back in toolsDone
	loaded     map[string]bool // the agent's loaded tools (read only)
}

func (a *agent) stepState() stepState {
	return stepState{round: a.round, phase: a.phase, model: a.model, planRounds: a.planRounds,
		bestText: a.bestText, doom: a.doom, loaded: maps.Clone(a.loaded)}
}

// checkpointSnapshot captures the loop state for the round's checkpoint;
// the tool step adds the conversation once the results are in.
func (a *agent) checkpointSnapshot() *convo.Checkpoint {
	return &convo.Checkpoint{Run: a.rt.run, Agent: a.spec.id, Parent: a.spec.parent, Kind: a.spec.kind.Name,
		Task: a.spec.task, Round: a.round, Phase: a.phase, Usage: a.usage, Cost: a.cost, Model: a.model}
}

func planAccepted(calls []messages.ToolCall, results []tools.Result) bool {
	for i, c := range calls {
		if c.Name == agenttools.NameSubmitPlan && !results[i].IsError {
			return true
		}
	}
	return false
}

// splitDiff takes a file tool's diff out of its metadata, for the event's
// own diff field: the event carries it once.
func splitDiff(meta map[string]any) (string, map[string]any) {
	diff, ok := meta["diff"].(string)
	if !ok {
		return "", meta
	}
	rest := make(map[string]any, len(meta)-1)
	for k, v := range meta {
		if k != "diff" {
			rest[k] = v
		}
	}
	return diff, rest
}

// chargeTools reports the step's tool calls to the budget: with a
// tool-call limit, now, so that the limit stops the agent at once
// (without one, the count rides on the next usage report); tokens that
// tools spent on a model (web_fetch's extractions) are charged now too.
// done records the budget's answer.
func (a *agent) chargeTools(done *toolsDone) {
	extra := int64(done.extraUsage.Total())
	if a.rt.budget == nil || (!a.rt.toolCallLimit && extra == 0) || a.ctx.Err() != nil {
		return
	}
	u := budget.Usage{Agent: a.spec.id, Tokens: extra, Cost: done.extraCost}
	if a.rt.toolCallLimit {
		u.ToolCalls = done.toolCalls
	}
	if extra > 0 {
		u.TopUp = a.rt.settings.TopUpFor(a.spec.kind.Name)
	}
	rep, err := a.rt.budget.Usage(a.ctx, u)
	switch {
	case err == nil:
		done.budgetState, done.budgetLent, done.budgetLeft, done.charged = rep.State, rep.Lent, rep.Remaining, a.rt.toolCallLimit
	case errors.Is(err, budget.ErrUnreachable) && a.ctx.Err() == nil:
		done.budgetLost = err
	case a.ctx.Err() == nil:
		a.log.Warn().Err(err).Msg("budget usage")
	}
}
