package main

import (
	"context"
	"fmt"
	"io"

	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/app/console"
	"github.com/troupe-ai/troupe/app/runner"
	"github.com/troupe-ai/troupe/bus"
	"github.com/troupe-ai/troupe/watch"
)

// approver is who approves the run's mutating calls and answers its
// questions: everything (--yes), anyone on NATS (--ask-via nats, `watch
// --interactive`), the person at the terminal, or nobody (a headless run,
// where "ask" is a no at once).
func (f runFlags) approver(env runEnv, conn *bus.Conn, ui *console.RunUI, stderr io.Writer, log zerolog.Logger) actors.Approver {
	switch {
	case f.yes:
		return yesApprover{}
	case f.askVia == "nats":
		return conn.NewApprover(log) // watch --interactive answers; nobody answering is a no
	case env.interactive:
		return console.PausingApprover{Inner: &actors.TerminalApprover{In: env.stdin, Out: stderr}, View: ui.View()}
	}
	return nil
}

// yesApprover approves everything (--yes).
type yesApprover struct{}

func (yesApprover) Approve(context.Context, actors.ApprovalRequest) (bool, error) { return true, nil }

// runExit maps how a run ended to the exit code, saying on stderr how to
// go on where there is a way: resume after an interrupt or a limit, with
// the command resume (every flag the run needs).
func runExit(interrupted bool, stderr io.Writer, res actors.Result, maxRounds int, workspace, resume string) int {
	switch {
	case interrupted:
		if state, err := runner.StateDir(workspace); err != nil || !hasCheckpoint(state, res.Run) {
			fmt.Fprintf(stderr, "interrupted before the first checkpoint (written when the first tool call starts); nothing to resume: run the task again\n")
			return exitInterrupt
		}
		fmt.Fprintf(stderr, "interrupted; the run is checkpointed. Resume with:\n  %s\n", resume)
		return exitInterrupt
	case res.Status == actors.StatusFailed:
		if res.Err != "" {
			fmt.Fprintf(stderr, "agent failed: %s\n", watch.Printable(res.Err))
		}
		return exitFailed
	case res.Reason == actors.ReasonRoundLimit || res.Reason == actors.ReasonBudgetExhausted:
		fmt.Fprintln(stderr, console.LimitWords(res.Reason, maxRounds, resume))
		return exitLimit
	case res.Status == actors.StatusCancelled:
		return exitInterrupt
	case res.SubAgents.Failed > 0:
		// The root's answer stands, but it rests on less than it asked for.
		return exitSubFailed
	}
	return exitOK
}

// hasCheckpoint reports whether run left a checkpoint to resume in state.
func hasCheckpoint(state, run string) bool {
	_, err := actors.FindCheckpoint(state, run)
	return err == nil
}
