// Package actors runs teams of LLM agents as protoactor actors: the agent
// actor and its round loop, the agent kinds, delegation between parents and
// children, and Run/Start, the entry points for running a team from Go.
//
// One actor per agent. A round routes the model, fits the conversation
// into the context window (eviction, then compaction), calls the model,
// checkpoints (the answer's tool calls pending), runs the calls through
// the tools executor, recording each result in the agent's journal as it
// completes, and appends the results (with a context advisory when due).
// A resumed run never runs a completed call again: a call the journal
// holds keeps its result, a mutating call that had started and not
// finished is reported interrupted, and the others run.
//
// Checkpoints: each agent has an append-only journal (convo.Writer) beside
// a snapshot of its checkpoint. A tool step's checkpoint is one journal
// record of what changed since the last step (the new messages, the
// agent's counters), not the whole conversation; each batch of call
// records is one more. A step whose calls only read (tools.Spec.Replayable)
// is written while they start, its call records queued behind it. Nothing is fsynced except before a mutating call
// starts: its start record is fsynced, and with it every record before it
// in the file. The snapshot is written again (and the journal restarted)
// when the journal has grown by 1 MiB or by the snapshot's own size, so
// the bytes written per round stay flat however long the conversation
// gets. A resume loads the snapshot, replays the journal (dropping, and
// reporting, a last record cut off mid-write) and continues the step it
// was in from a fresh snapshot. The
// model call and the tool batch run in goroutines that own the
// conversation while they run and report back as messages, so the actor
// answers Cancel, Status and SendInput at once, whatever it is doing. Every
// such goroutine recovers its own panic and reports it as a message: a
// panic off the mailbox is not supervised and would kill the process.
//
// An agent ends when the model answers without tool calls (finished), at
// max_rounds (round_limit), when its budget is exhausted and its one
// wrap-up round is over (budget_exhausted), on Cancel (cancelled) or on an
// error (failed). However it ends it emits exactly one final event,
// releases its budget lease, and hands its result over (its checkpoints
// are already on disk: a tool step writes them before it reports).
//
// Kinds restrict tools, enforced here and not only in what the model is
// shown: a call outside the kind's tools (or outside the planning phase's
// read-only set) gets an error result naming the allowed tools. Root and
// worker agents plan first; submit_plan, or the planning round limit,
// switches them to execution.
//
// Delegation: a delegate call acquires a budget lease drawn from the
// parent's own lease, then spawns the child as a protoactor child of the
// parent. The parent is its children's supervisor: a child whose Receive
// panics is stopped, never restarted (a restart would drop the failing
// message and reset the conversation), and its caller gets an error
// result. Cancelling or stopping a parent stops its whole sub-tree; a
// parent that finishes cancels its background children, or waits for them
// with on_parent_finish: wait. The calls of one turn run concurrently, so
// four delegate calls start four children at once; more than the fan-out
// threshold in one turn first emits spawn.plan for the policy to decide.
//
// Events follow the envelope of package messages, numbered per agent from
// 1 without gaps, through any Emitter (the Recorder keeps them in memory,
// LogEmitter writes them to zerolog). No event carries an API key.
package actors
