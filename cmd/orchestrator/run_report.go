package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/app/runner"
	"github.com/troupe-ai/troupe/messages"
	"github.com/troupe-ai/troupe/watch"
)

// reportRun writes a finished run's outcome: with --json one object (the
// result and the metrics) on stdout; otherwise the answer on stdout and
// the totals, the spending summary and the metrics on stderr.
func reportRun(stdout, stderr io.Writer, asJSON bool, res actors.Result, r *runner.Run) error {
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			actors.Result
			Metrics watch.Metrics  `json:"metrics"`
			Refused *refusedCounts `json:"refused,omitempty"`
		}{res, r.Metrics.Metrics(), refusedOf(r.RemoteStats())})
	}
	printText(stdout, res.Text)
	cost := watch.Dollars(res.Cost)
	if res.Budget != nil {
		cost = watch.Dollars(res.Budget.Used.CostUSD)
	}
	unpriced := r.Unpriced()
	if len(unpriced) > 0 {
		cost = "cost unknown"
	}
	fmt.Fprintf(stderr, "%s · %d in / %d out tokens · %s · %s\n", endWords(res.Status, res.Reason, res.Rounds),
		res.Usage.PromptTokens, res.Usage.CompletionTokens, cost, res.Wall.Round(time.Millisecond))
	printSubAgents(stderr, res.SubAgents)
	printRunSummary(stderr, res.Budget, unpriced...)
	printMetrics(stderr, r.Metrics.Metrics())
	printChanges(stderr, res.Changes)
	printRefused(stderr, refusedOf(r.RemoteStats()))
	if res.EventsDropped > 0 {
		fmt.Fprintf(stderr, "events: %d could not be published (NATS was unreachable or refused them and the buffers were full)\n", res.EventsDropped)
	}
	return nil
}

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
		fmt.Fprintln(stderr, limitWords(res.Reason, maxRounds, resume))
		return exitLimit
	case res.Status == actors.StatusCancelled:
		return exitInterrupt
	case res.SubAgents.Failed > 0:
		// The root's answer stands, but it rests on less than it asked for.
		return exitSubFailed
	}
	return exitOK
}

// printSubAgents says how the sub-agents ended, with the first failure's
// reason when one failed.
func printSubAgents(w io.Writer, s actors.SubAgents) {
	if s.Total() == 0 {
		return
	}
	fmt.Fprintf(w, "sub-agents: %d completed · %d failed · %d cancelled\n", s.Completed, s.Failed, s.Cancelled)
	if s.FirstFailure != "" {
		fmt.Fprintf(w, "  first failure: %s\n", watch.Printable(s.FirstFailure))
	}
}

// printChanges says what became of each isolated agent's changes.
func printChanges(w io.Writer, changes []messages.ChangeOutcome) {
	for _, c := range changes {
		files := strings.Join(c.Files, ", ")
		switch c.Status {
		case messages.ChangeStatusApplied:
			fmt.Fprintf(w, "changes of %s applied: %s\n", c.Agent, files)
		case messages.ChangeStatusConflict:
			fmt.Fprintf(w, "changes of %s NOT applied: conflict in %s; patch kept: %s\n", c.Agent, strings.Join(c.Conflicts, ", "), c.Patch)
		case messages.ChangeStatusBranch:
			fmt.Fprintf(w, "changes of %s committed on %s: %s\n", c.Agent, c.Branch, files)
		case messages.ChangeStatusPatch:
			fmt.Fprintf(w, "changes of %s written to %s: %s\n", c.Agent, c.Patch, files)
		default:
			fmt.Fprintf(w, "changes of %s could not be brought back (%s): %s\n", c.Agent, files, c.Error)
			if c.Patch != "" {
				fmt.Fprintf(w, "  patch kept: %s\n", c.Patch)
			}
			if c.Worktree != "" {
				fmt.Fprintf(w, "  worktree kept: %s\n", c.Worktree)
			}
		}
		for _, f := range c.Oversize {
			fmt.Fprintf(w, "  NOT carried, over agent.max_change_bytes: %s (%d bytes)\n", f.Path, f.Bytes)
		}
		if len(c.Oversize) > 0 && c.Status != messages.ChangeStatusError && c.Worktree != "" {
			fmt.Fprintf(w, "  worktree kept: %s\n", c.Worktree)
		}
	}
}

// hasCheckpoint reports whether run left a checkpoint to resume in state.
func hasCheckpoint(state, run string) bool {
	_, err := actors.FindCheckpoint(state, run)
	return err == nil
}
