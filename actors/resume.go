package actors

import (
	"encoding/json"
	"strings"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/troupe-ai/troupe/actors/convo"
	"github.com/troupe-ai/troupe/messages"
	"github.com/troupe-ai/troupe/tools"
)

// Checkpoint is a point a run can be resumed from: the root agent's last
// saved round. Get one with FindCheckpoint and pass it as Options.Resume.
type Checkpoint struct {
	// Run is the run's ID; the resumed run keeps it.
	Run string
	// Task is the run's task.
	Task string
	// Round is the root agent's last completed round.
	Round int
	// Model is the model the root agent was on; the resumed root goes on
	// with it. Set it to switch models (orchestrator resume --model).
	Model string
	// Path is the checkpoint's directory.
	Path string

	cp *convo.Checkpoint
}

// FindCheckpoint finds the root agent's latest checkpoint of run (of the
// run written last when run is "") under stateDir, the workspace's state
// directory (StateDir) unless a run was started with another
// Options.StateDir. A run that finished cleanly has none (its checkpoints
// are removed unless Settings.KeepCheckpoints).
func FindCheckpoint(stateDir, run string) (*Checkpoint, error) {
	cp, path, err := convo.LatestCheckpoint(stateDir, run)
	if err != nil {
		return nil, err
	}
	return &Checkpoint{Run: cp.Run, Task: cp.Task, Round: cp.Round, Model: cp.Model, Path: path, cp: cp}, nil
}

// DataDir is the workspace's folder of agent-visible files (worktrees,
// spilled outputs) by default: <workspace>/.troupe. What troupe trusts
// lives in StateDir.
func DataDir(workspace string) string { return convo.DataDir(workspace) }

func (c *Checkpoint) checkpoint() *convo.Checkpoint {
	if c == nil {
		return nil
	}
	return c.cp
}

// interrupted is the result a resumed agent's model gets for a call that
// had started, and not finished, when the run stopped: it may have done
// part or all of its work, so it is not run a second time.
func interrupted(tool string) tools.Result {
	return tools.Errorf("%s was interrupted: the run stopped (killed or crashed) while this call was running, so it may have done some or all of its work. It was not run again; check its effects before you repeat it.", tool)
}

// resumeStep finishes the tool step a resumed checkpoint was saved in,
// when its calls are still pending, and reports whether it started one.
// What the journal recorded as done keeps its result; a call recorded as
// started (only mutating calls are) is reported interrupted; the rest run
// now. Then the agent goes on with its next round as usual.
func (a *agent) resumeStep(c actor.Context) bool {
	cp := a.spec.resume
	if cp == nil {
		return false
	}
	if cp.TornBytes > 0 {
		a.log.Warn().Int("bytes", cp.TornBytes).Msg("the journal's last record was cut off mid-write (a kill or a power loss); resumed from the record before it")
	}
	pending := a.conv.Pending()
	if len(pending) == 0 {
		return false
	}
	prior := cp.CallRecords()
	// The step goes on in a new journal after a snapshot that holds what
	// the old one recorded (fsynced: it may hold a mutating call's start).
	if err := a.ckpt.resume(cp); err != nil {
		a.log.Warn().Err(err).Msg("checkpoint the resumed step")
	}
	a.session.SetRound(a.round)
	a.curTools = a.toolSet()
	a.busy = true
	go a.toolStep(a.conv, a.stepState(), pending, a.checkpointSnapshot(), a.curTools, prior)
	return true
}

// rerunnable reports whether a call recorded as started may run again on
// resume: a delegate of a read-only kind. Its child has the same ID as
// before (named from the call), so a result a node stored for it is taken
// up instead of running it again, and one that never finished runs anew,
// which a read-only agent may.
func (a *agent) rerunnable(call messages.ToolCall) bool {
	if call.Name != "delegate" {
		return false
	}
	var args struct {
		Type string `json:"type"`
	}
	if json.Unmarshal(call.Args, &args) != nil {
		return false
	}
	k, ok := a.rt.kinds[strings.TrimSpace(args.Type)]
	return ok && k.ReadOnly
}

// settleFromJournal fills in the results of the calls a resumed step's
// journal settles and returns the records to add (the interrupted calls,
// so a second crash tells the same story) and the indices of the calls
// still to run. For a new step (prior nil) every call is still to run.
func (a *agent) settleFromJournal(calls []messages.ToolCall, prior map[string]convo.JournalEntry, results []tools.Result) ([]convo.JournalEntry, []int) {
	var settled []convo.JournalEntry
	var open []int
	for i, call := range calls {
		e, ok := prior[call.ID]
		switch {
		case ok && e.Done:
			results[i] = tools.Result{Text: e.Content, IsError: e.IsError}
			if len(e.Loaded) > 0 {
				results[i] = results[i].WithMeta(tools.MetaLoadedTools, e.Loaded)
			}
			a.session.Reads.Restore(e.Reads) // in call order, as the calls that touch one file ran
		case ok && e.Started && !a.rerunnable(call):
			results[i] = interrupted(call.Name)
			settled = append(settled, journalDone(call.ID, results[i]))
		default:
			open = append(open, i)
		}
	}
	if len(prior) > 0 {
		a.log.Info().Int("recorded", len(calls)-len(open)).Int("to_run", len(open)).Msg("resumed tool step")
	}
	return settled, open
}
