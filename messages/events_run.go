package messages

// RunStarted is the data of run.started, emitted by the run's own agent
// "run" when a team starts.
type RunStarted struct {
	Task      string `json:"task" doc:"the run's task as given"`
	Workspace string `json:"workspace" doc:"absolute path of the workspace"`
	Model     string `json:"model" doc:"the default model"`
	Resumed   bool   `json:"resumed,omitempty" doc:"true when the run continues from a checkpoint"`
	LeaseMS   int64  `json:"lease_ms,omitempty" doc:"the run's lease in ms: its orchestrator heartbeats it in the runs bucket; a run silent this long is lost (0: no lease)"`
}

// RunFinished is the data of run.finished: how the root agent ended and
// what the whole run spent.
type RunFinished struct {
	Status        string            `json:"status" doc:"completed, failed or cancelled"`
	Reason        string            `json:"reason" doc:"finished, round_limit, budget_exhausted, error, cancelled, plan_submitted or budget_unreachable"`
	Rounds        int               `json:"rounds" doc:"the root agent's rounds"`
	Tokens        int64             `json:"tokens" doc:"tokens (prompt + completion) of the whole run, every agent included"`
	CostUSD       float64           `json:"cost_usd" doc:"dollars spent by the whole run (0 when no model is priced)"`
	ToolCalls     int64             `json:"tool_calls" doc:"tool calls of the whole run"`
	Agents        int               `json:"agents" doc:"agents that ran, the root included"`
	WallMS        int64             `json:"wall_ms" doc:"wall time of the run in milliseconds"`
	EventsDropped uint64            `json:"events_dropped" doc:"events that could not be published (NATS unreachable and buffers full)"`
	Budget        *BudgetSnapshot   `json:"budget,omitempty" doc:"the budget at the end: per agent, per kind, limits"`
	LastSeq       map[string]uint64 `json:"last_seq,omitempty" doc:"per agent of this process, the seq of its last event (for \"run\", this event's own); an agent's events a subscriber lacks up to it were missed. Remote agents' events are their nodes' to count; every one of them that is stored comes before this event"`
}

// NodeJoined is the data of node.joined: a worker node registered. Node
// events belong to the run "nodes" and carry the node's ID as agent.
type NodeJoined struct {
	Node    string   `json:"node" doc:"the node's ID"`
	Name    string   `json:"name" doc:"the node's name (--name, default the host name)"`
	Host    string   `json:"host,omitempty" doc:"the host it runs on"`
	Kinds   []string `json:"kinds" doc:"agent kinds it runs"`
	Slots   int      `json:"slots" doc:"tasks it runs at once"`
	Version string   `json:"version,omitempty" doc:"the node program's version"`
}

// NodeLeft is the data of node.left: a node drained and deregistered
// (its own event), or a run's orchestrator stopped hearing its heartbeat
// (the run's event).
type NodeLeft struct {
	Node   string `json:"node" doc:"the node's ID"`
	Name   string `json:"name" doc:"the node's name"`
	Reason string `json:"reason" doc:"why it left: drained (it said so), lost (killed or cut off: a run's orchestrator heard no heartbeat from it)"`
}

// TaskRedelivered is the data of task.redelivered, emitted in the task's
// run by the node that got a task on a second or later attempt (the node
// that had it died or stopped signalling).
type TaskRedelivered struct {
	Agent   string `json:"agent" doc:"the task's agent ID"`
	Kind    string `json:"kind" doc:"the task's agent kind"`
	Attempt int    `json:"attempt" doc:"this delivery's attempt number, from 2"`
	Node    string `json:"node" doc:"the node that got it now"`
}
