package messages

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
)

// EventSpec describes one event type: what it means, its payload type and
// an example payload (for the documentation and the golden files).
type EventSpec struct {
	Type    string
	Doc     string
	New     func() any // a pointer to a zero payload, to decode into
	Example any        // a filled payload value
}

// ErrUnknownEventType is returned by Decode for a type this build does not
// know; newer emitters may add types, so callers should skip, not fail.
var ErrUnknownEventType = errors.New("unknown event type")

// theCatalog is the catalog and its index by type, built on first use (a
// command that reads no events, as `orchestrator version` or `tools call`,
// does not pay for it) and never written afterwards: Decode looks a type
// up for every event it reads.
var theCatalog = sync.OnceValues(func() ([]EventSpec, map[string]int) {
	specs := buildCatalog()
	return specs, indexCatalog(specs)
})

// Catalog lists every event type with its payload, sorted by type. It is
// the one source for emitters, watchers and docs/events.md. The slice is
// the caller's; the examples in it are shared and must not be modified.
func Catalog() []EventSpec {
	catalog, _ := theCatalog()
	return slices.Clone(catalog)
}

func indexCatalog(specs []EventSpec) map[string]int {
	idx := make(map[string]int, len(specs))
	for i, s := range specs {
		idx[s.Type] = i
	}
	return idx
}

func buildCatalog() []EventSpec {
	when := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	snap := &BudgetSnapshot{V: BudgetSnapshotVersion, Run: "9f1c2d3e", Time: when, Limits: BudgetLimits{Tokens: 2_000_000},
		Used: BudgetUsage{Tokens: 48_210, CostUSD: 0.0412, ToolCalls: 31}, Slots: 0,
		Agents: []BudgetAgent{{Agent: "root", Kind: "root", State: BudgetStateReleased, Granted: 2_000_000,
			Used: BudgetUsage{Tokens: 20_110, CostUSD: 0.0301, ToolCalls: 9}, Subtree: BudgetUsage{Tokens: 48_210, CostUSD: 0.0412, ToolCalls: 31},
			Children: 4, Descendants: 4, AcquiredAt: when}},
		ByKind: map[string]BudgetKindTotals{"root": {Agents: 1, Used: BudgetUsage{Tokens: 20_110, CostUSD: 0.0301, ToolCalls: 9}}}}
	specs := []EventSpec{
		{EvtRunStarted, "A team started on a task (agent \"run\").", func() any { return new(RunStarted) },
			RunStarted{Task: "Find why the cache is never invalidated and fix it", Workspace: "/src/app", Model: "gpt-4.1-mini"}},
		{EvtRunFinished, "The run ended: the root agent's end and the run's totals (agent \"run\").", func() any { return new(RunFinished) },
			RunFinished{Status: "completed", Reason: "finished", Rounds: 6, Tokens: 48_210, CostUSD: 0.0412,
				ToolCalls: 31, Agents: 5, WallMS: 48_120, Budget: snap,
				LastSeq: map[string]uint64{"run": 4, "root": 58, "explore-1a2b3c4d": 19}}},
		{EvtAgentSpawned, "A parent started a child agent.", func() any { return new(AgentSpawned) },
			AgentSpawned{Child: "explore-1a2b3c4d", Kind: "explore", Model: "gpt-4.1-nano", Task: "Where is the cache invalidated?", Depth: 1, Placement: "local"}},
		{EvtAgentStarted, "An agent started (its first event).", func() any { return new(AgentStarted) },
			AgentStarted{Task: "Where is the cache invalidated?", Depth: 1, Phase: "executing", Tools: []string{"find_files", "grep", "list_dir", "read_file", "think"}}},
		{EvtRoundStarted, "An agent's round began: the model is about to be called.", func() any { return new(RoundStarted) },
			RoundStarted{Round: 2, Phase: "executing", Model: "gpt-4.1-nano", EstimateTokens: 3120, Messages: 5, ToolTokens: 1260, ToolsDeferred: 14}},
		{EvtLLMResponse, "A model call answered.", func() any { return new(LLMResponse) },
			LLMResponse{Round: 2, Model: "gpt-4.1-nano", TokensIn: 3180, TokensOut: 96, CostUSD: 0.000356, CostKnown: true,
				FinishReason: "tool_calls", ContextTokens: 3120, ToolResultTokens: 1480, ToolCalls: []string{"grep", "read_file"}, Attempts: 1, DurationMS: 812,
				TotalTokens: 6420, TotalCostUSD: 0.00071}},
		{EvtLLMDelta, "Streamed text of a model call, coalesced (only with events.deltas: true).", func() any { return new(LLMDelta) },
			LLMDelta{Round: 3, Text: "The cache is invalidated in "}},
		{EvtLLMRefused, "A model's answer passed a cap on its size (model.max_response_bytes, agent.max_tool_calls_per_round) and was refused.", func() any { return new(LLMRefused) },
			LLMRefused{Round: 4, Model: "gpt-4.1-mini", Limit: "tool_call", Max: 1 << 20, Setting: "model.max_response_bytes.tool_call",
				Error: "llm: model answer refused: its tool call's arguments passed the limit of 1048576 bytes (model.max_response_bytes.tool_call)", Retry: true}},
		{EvtLLMThrottled, "A model call waited for its turn under the hub's shared provider rate limits, got it, or was refused by the provider.", func() any { return new(LLMThrottled) },
			LLMThrottled{Round: 2, Model: "gpt-4.1-mini", Phase: ThrottleWaiting, Reason: "frozen", Status: 429, FrozenMS: 2840, RPM: 500, TPM: 200_000, Attempt: 2}},
		{EvtToolStarted, "A tool call began.", func() any { return new(ToolStarted) },
			ToolStarted{Round: 2, CallID: "call_7", Tool: "grep", Args: json.RawMessage(`{"pattern":"Invalidate"}`), Parallel: true}},
		{EvtToolFinished, "A tool call ended.", func() any { return new(ToolFinished) },
			ToolFinished{Round: 2, CallID: "call_7", Tool: "grep", DurationMS: 3.4, OutputBytes: 61, Cacheable: true, CacheHits: 2,
				Metadata: map[string]any{"files": 2}}},
		{EvtContextEvicted, "Old tool results were cleared to fit the context window.", func() any { return new(ContextEvicted) },
			ContextEvicted{Count: 3, CharsFreed: 41_000, EstimateBefore: 103_000, EstimateAfter: 91_300}},
		{EvtContextCompacted, "The older conversation was replaced by a model-written summary.", func() any { return new(ContextCompacted) },
			ContextCompacted{MessagesBefore: 48, MessagesAfter: 9, EstimateBefore: 104_000, EstimateAfter: 12_800, Summarized: 38,
				SummaryChars: 5200, Model: "gpt-4.1-mini", TokensIn: 98_000, TokensOut: 1500, CostUSD: 0.0416}},
		{EvtContextAdvisory, "The conversation crossed 60 % or 80 % of the context window; the agent was told.", func() any { return new(ContextAdvisory) },
			ContextAdvisory{Level: "advise", Percent: 61, Used: 78_100, Window: 128_000, Text: "Context 61% full: prefer targeted reads."}},
		{EvtBudgetAcquired, "A budget lease was granted (to the root by the run, to a child by its parent).", func() any { return new(BudgetAcquired) },
			BudgetAcquired{Agent: "explore-1a2b3c4d", Parent: "root", Kind: "explore", Tokens: 200_000, WaitedMS: 0}},
		{EvtBudgetWaiting, "A budget acquire waits in line for tokens or a concurrency slot.", func() any { return new(BudgetWaiting) },
			BudgetWaiting{Agent: "explore-5e6f7a8b", Kind: "explore", Position: 1, Reason: BudgetWaitSlots, Pool: "slots:explore"}},
		{EvtBudgetReleased, "An agent's lease went back: what it used and what returned to its parent.", func() any { return new(BudgetReleased) },
			BudgetReleased{Agent: "explore-1a2b3c4d", Used: BudgetUsage{Tokens: 6420, CostUSD: 0.00071, ToolCalls: 4}, Returned: 193_580}},
		{EvtBudgetAdvisory, "An agent's lease changed state (exhausted: one wrap-up round, then it ends).", func() any { return new(BudgetAdvisory) },
			BudgetAdvisory{Agent: "worker-9c8d7e6f", State: BudgetStateExhausted, Remaining: -120, Text: "Budget exhausted: wrap up now."}},
		{EvtCheckpointSaved, "An agent's conversation was checkpointed: once per round with tool calls, before they run (their results are then recorded one by one in the agent's journal beside it).", func() any { return new(CheckpointSaved) },
			CheckpointSaved{Round: 4, Path: "/home/me/.local/state/troupe/app-4f1e2d3c5b6a7988/runs/9f1c2d3e/root/checkpoint.json"}},
		{EvtAgentFinished, "An agent ended with an answer (or at its round or budget limit).", func() any { return new(AgentEnded) },
			AgentEnded{Status: "completed", Reason: "finished", Rounds: 3, TokensIn: 9120, TokensOut: 310, CostUSD: 0.00104, ToolCalls: 4,
				Model: "gpt-4.1-nano", Text: "Invalidate is called in cache/store.go:88", Findings: []string{"cache/store.go:88"}}},
		{EvtAgentFailed, "An agent ended on an error.", func() any { return new(AgentEnded) },
			AgentEnded{Status: "failed", Reason: "error", Rounds: 1, Error: "model: 401 invalid API key"}},
		{EvtAgentCancelled, "An agent was cancelled (by its parent, cancel_agent, or the run).", func() any { return new(AgentEnded) },
			AgentEnded{Status: "cancelled", Reason: "cancelled", Rounds: 2, Text: "best answer so far"}},
		{EvtPhaseChanged, "An agent moved from planning to executing.", func() any { return new(PhaseChanged) },
			PhaseChanged{Phase: "executing", Round: 3, By: "submit_plan"}},
		{EvtDoomLoop, "A call repeated with the same arguments too often was refused.", func() any { return new(DoomLoop) },
			DoomLoop{Round: 7, Tool: "read_file", Args: json.RawMessage(`{"path":"go.mod"}`), Repeats: 3}},
		{EvtSpawnPlan, "One turn starts more children than the fan-out threshold; the policy decides.", func() any { return new(SpawnPlan) },
			SpawnPlan{Round: 1, Children: []SpawnPlanChild{{Type: "explore", Model: "gpt-4.1-nano", EstimatedTokens: 200_000, EstimatedCost: 0.02}},
				Count: 9, Threshold: 8, EstimatedTokens: 1_800_000, EstimatedCost: 0.18, Policy: "auto"}},
		{EvtApprovalRequested, "A mutating call (or a fan-out) waits for approval.", func() any { return new(ApprovalRequested) },
			ApprovalRequested{Tool: "edit_file", Args: json.RawMessage(`{"path":"cache/store.go","old_string":"return v","new_string":"s.Invalidate(k)\n\treturn v"}`),
				Diff: "--- a/cache/store.go\n+++ b/cache/store.go\n@@ -86,3 +86,4 @@\n \tv := s.m[k]\n \ts.mu.Unlock()\n+\ts.Invalidate(k)\n \treturn v\n"}},
		{EvtApprovalDecided, "An approval was answered (or refused by policy or timeout).", func() any { return new(ApprovalDecided) },
			ApprovalDecided{Tool: "edit_file", Approved: true, By: "user", WaitedMS: 2300}},
		{EvtNodeJoined, "A worker node registered (run \"nodes\", agent = the node's ID); or, in a run's own events (agent \"nodes\", node = the node's ID), a node the run had reported lost was heard from again.", func() any { return new(NodeJoined) },
			NodeJoined{Node: "node-3f2a1b0c", Name: "builder-2", Host: "builder-2", Kinds: []string{"explore", "worker"}, Slots: 4, Version: "0.3.0"}},
		{EvtNodeLeft, "A worker node left: it drained and deregistered (reason drained; run \"nodes\", agent = the node's ID), or a run's orchestrator heard no heartbeat from it for two of its heartbeats, or node.lease_timeout when set (reason lost; in the run's own events, agent \"nodes\", node = the node's ID, once until it is heard from again); the run's tasks it held are queued again at once.", func() any { return new(NodeLeft) },
			NodeLeft{Node: "node-3f2a1b0c", Name: "builder-2", Reason: "drained"}},
		{EvtChangesReady, "An agent that worked in its own worktree ended and its changes relative to its snapshot were captured (emitted by its parent; agent = the child).", func() any { return new(ChangesReady) },
			ChangesReady{Agent: "worker-5e6f7a8b", Files: []FileChange{{Path: "cache/store.go", Status: "modified", Added: 3, Deleted: 1}}}},
		{EvtChangesApplied, "An agent's changes were merged into the workspace (applied), committed on a branch (branch) or written as a patch file (patch; an agent that did not complete, or --changes patch); emitted by its parent. Like changes.conflict, the patch of an agent below another isolated agent is kept in the requester's runs/<run>/changes.", func() any { return new(ChangesApplied) },
			ChangesApplied{Agent: "worker-5e6f7a8b", Status: "applied", Files: []string{"cache/store.go"}}},
		{EvtChangesConflict, "An agent's changes overlap a change made to the workspace after its snapshot (another agent's or the user's), or need a directory where the workspace has a symbolic link or a file (reason names it: the merge never writes or deletes through a symlink): nothing was written; the patch is kept (emitted by its parent). For an agent started by an agent that works in a directory of its own (its worktree, or a node's worktree of the requester's snapshot), the workspace is that directory and the patch is kept all the same in the requester's runs/<run>/changes; when that agent ran on a node, the requester emits the event (through the events of the parent of the node's agent) once the node's result has brought the patch.", func() any { return new(ChangesConflict) },
			ChangesConflict{Agent: "worker-5e6f7a8b", Files: []string{"cache/store.go"}, Patch: "/home/me/.local/state/troupe/app-4f1e2d3c5b6a7988/runs/9f1c2d3e/changes/worker-5e6f7a8b.patch"}},
		{EvtChangesRefused, "A remote agent's changes were not taken in, and nothing of them was applied or kept (emitted by its parent): its result's patch did not have the SHA-256 the result proves, or named a snapshot or an end state other than the ones the requester derives from the snapshot it sent and the patch (the task then fails with the same sentence), or the patch could not be fetched.", func() any { return new(ChangesRefused) },
			ChangesRefused{Agent: "worker-5e6f7a8b", Node: "node-77aa88bb", Reason: "the changes of worker-5e6f7a8b (from node node-77aa88bb) were refused and nothing of them applied: digest mismatch: the changeset's patch r1/worker-5e6f7a8b-1.patch in the changes bucket has SHA-256 9c1e03a5d2f7b8e4…, its proven message names 2f4d6a8c0e1b3d5f… (another party wrote that object)"}},
		{EvtTaskRedelivered, "A node got a task on a second or later attempt (agent = the node's ID).", func() any { return new(TaskRedelivered) },
			TaskRedelivered{Agent: "explore-1a2b3c4d", Kind: "explore", Attempt: 2, Node: "node-77aa88bb"}},
	}
	slices.SortFunc(specs, func(a, b EventSpec) int {
		if a.Type < b.Type {
			return -1
		}
		if a.Type > b.Type {
			return 1
		}
		return 0
	})
	return specs
}

// LookupEvent finds the spec of an event type.
func LookupEvent(typ string) (EventSpec, bool) {
	catalog, index := theCatalog()
	i, ok := index[typ]
	if !ok {
		return EventSpec{}, false
	}
	return catalog[i], true
}

// Decode decodes the event's data into its type's payload and returns a
// pointer to it (*ToolFinished for tool.finished, ...). An unknown type is
// ErrUnknownEventType; a payload that does not fit its type is an error.
func (e *Event) Decode() (any, error) {
	spec, ok := LookupEvent(e.Type)
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownEventType, e.Type)
	}
	v := spec.New()
	if len(e.Data) == 0 || string(e.Data) == "null" {
		return v, nil
	}
	if err := json.Unmarshal(e.Data, v); err != nil {
		return nil, fmt.Errorf("decode %s data: %w", e.Type, err)
	}
	return v, nil
}

// DecodeAs decodes e's data into a payload of type T, checking the type:
// DecodeAs[ToolFinished](ev).
func DecodeAs[T any](e Event) (T, error) {
	var zero T
	v, err := e.Decode()
	if err != nil {
		return zero, err
	}
	p, ok := v.(*T)
	if !ok {
		return zero, fmt.Errorf("event %s carries %T, not %T", e.Type, v, zero)
	}
	return *p, nil
}
