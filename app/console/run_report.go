package console

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

// ReportRun writes a finished run's outcome: with --json one object (the
// result and the metrics) on stdout; otherwise the answer on stdout and
// the totals, the spending summary and the metrics on stderr.
func ReportRun(stdout, stderr io.Writer, asJSON bool, res actors.Result, r *runner.Run) error {
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			actors.Result
			Metrics watch.Metrics  `json:"metrics"`
			Refused *RefusedCounts `json:"refused,omitempty"`
		}{res, r.Metrics.Metrics(), RefusedOf(r.RemoteStats())})
	}
	PrintText(stdout, res.Text)
	cost := watch.Dollars(res.Cost)
	if res.Budget != nil {
		cost = watch.Dollars(res.Budget.Used.CostUSD)
	}
	unpriced := r.Unpriced()
	if len(unpriced) > 0 {
		cost = "cost unknown"
	}
	fmt.Fprintf(stderr, "%s · %d in / %d out tokens · %s · %s\n", EndWords(res.Status, res.Reason, res.Rounds),
		res.Usage.PromptTokens, res.Usage.CompletionTokens, cost, res.Wall.Round(time.Millisecond))
	PrintSubAgents(stderr, res.SubAgents)
	PrintRunSummary(stderr, res.Budget, unpriced...)
	PrintMetrics(stderr, r.Metrics.Metrics())
	PrintChanges(stderr, res.Changes)
	PrintRefused(stderr, RefusedOf(r.RemoteStats()))
	if res.EventsDropped > 0 {
		fmt.Fprintf(stderr, "events: %d could not be published (NATS was unreachable or refused them and the buffers were full)\n", res.EventsDropped)
	}
	return nil
}

// PrintSubAgents says how the sub-agents ended, with the first failure's
// reason when one failed.
func PrintSubAgents(w io.Writer, s actors.SubAgents) {
	if s.Total() == 0 {
		return
	}
	fmt.Fprintf(w, "sub-agents: %d completed · %d failed · %d cancelled\n", s.Completed, s.Failed, s.Cancelled)
	if s.FirstFailure != "" {
		fmt.Fprintf(w, "  first failure: %s\n", watch.Printable(s.FirstFailure))
	}
	for _, n := range s.NotStarted {
		fmt.Fprintf(w, "  not started: %s\n", watch.Printable(n))
	}
}

// PrintChanges says what became of each isolated agent's changes.
func PrintChanges(w io.Writer, changes []messages.ChangeOutcome) {
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

// PrintText writes text with a final newline (a tool's or an answer's
// text, on its own lines).
func PrintText(w io.Writer, text string) {
	io.WriteString(w, text)
	if text != "" && !strings.HasSuffix(text, "\n") {
		io.WriteString(w, "\n")
	}
}
