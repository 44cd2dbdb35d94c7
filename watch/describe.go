package watch

import (
	"fmt"
	"strings"

	"github.com/troupe-ai/troupe/internal/text"
	"github.com/troupe-ai/troupe/messages"
)

// Describe is a one-line account of an event for people ("" for events
// not worth a line): who started, what each round called, who finished
// with what, and what it cost. v is the decoded payload (ev.Decode()).
// The line is Printable: whatever the event carries, it cannot drive the
// terminal it is shown on.
func Describe(ev messages.Event, v any) string {
	return Printable(describe(ev, v))
}

func describe(ev messages.Event, v any) string {
	who := ev.Agent
	switch d := v.(type) {
	case *messages.RunStarted:
		return fmt.Sprintf("run %s started: %s", short(ev.Run), Clip(d.Task, 80))
	case *messages.RunFinished:
		return fmt.Sprintf("run %s %s · %s · %s", short(ev.Run), EndWords(d.Status, d.Reason), Tokens(d.Tokens), Dollars(d.CostUSD))
	case *messages.AgentSpawned:
		where := ""
		if d.Placement == "remote" {
			where = " (remote)"
		}
		return fmt.Sprintf("%s spawned %s %s%s: %s", who, d.Kind, d.Child, where, Clip(d.Task, 70))
	case *messages.LLMResponse:
		what := "answered"
		if len(d.ToolCalls) > 0 {
			what = "called " + SummarizeCalls(d.ToolCalls)
		}
		return fmt.Sprintf("%s round %d %s", who, d.Round, what)
	case *messages.ToolFinished:
		switch {
		case d.IsError:
			return fmt.Sprintf("%s: %s failed", who, d.Tool)
		case d.Cached:
			return fmt.Sprintf("%s: %s served from cache", who, d.Tool)
		case d.Diff != "":
			return fmt.Sprintf("%s: %s %s %s", who, d.Tool, Clip(changedWhat(d.Metadata), 60), DiffStat(d.Metadata))
		}
	case *messages.PhaseChanged:
		return fmt.Sprintf("%s: plan accepted, now %s", who, d.Phase)
	case *messages.SpawnPlan:
		return fmt.Sprintf("%s plans %d %s (~%s), policy %s", who, d.Count, Plural(d.Count, "agent", "agents"), Tokens(d.EstimatedTokens), d.Policy)
	case *messages.BudgetWaiting:
		return fmt.Sprintf("%s waits for budget (%s, #%d in line)", d.Agent, d.Reason, d.Position)
	case *messages.DoomLoop:
		return fmt.Sprintf("%s: doom loop broken (%s ×%d)", who, d.Tool, d.Repeats)
	case *messages.AgentEnded:
		line := fmt.Sprintf("%s %s after %d %s · %s · %s", who, EndWords(d.Status, d.Reason), d.Rounds, Plural(d.Rounds, "round", "rounds"),
			Tokens(int64(d.TokensIn+d.TokensOut)), Cost(d.CostUSD, d.Unpriced))
		if d.Error != "" {
			line += " · " + Clip(d.Error, 80)
		}
		return line
	case *messages.ApprovalDecided:
		verdict := "denied"
		if d.Approved {
			verdict = "approved"
		}
		return fmt.Sprintf("%s: %s %s by %s", who, d.Tool, verdict, d.By)
	case *messages.NodeJoined:
		return fmt.Sprintf("node %s joined (%s, %d %s)", d.Name, strings.Join(d.Kinds, ","), d.Slots, Plural(d.Slots, "slot", "slots"))
	case *messages.NodeLeft:
		return fmt.Sprintf("node %s left (%s)", d.Name, d.Reason)
	case *messages.BudgetAdvisory:
		return fmt.Sprintf("%s: budget %s, wrapping up", d.Agent, d.State)
	case *messages.TaskRedelivered:
		return fmt.Sprintf("task %s redelivered (attempt %d) to %s", d.Agent, d.Attempt, d.Node)
	case *messages.ChangesReady:
		added, deleted := 0, 0
		for _, f := range d.Files {
			added, deleted = added+f.Added, deleted+f.Deleted
		}
		return fmt.Sprintf("%s changed %d %s +%d −%d", d.Agent, len(d.Files), Plural(len(d.Files), "file", "files"), added, deleted)
	case *messages.ChangesApplied:
		switch d.Status {
		case messages.ChangeStatusBranch:
			return fmt.Sprintf("%s's changes committed on %s", d.Agent, d.Branch)
		case messages.ChangeStatusPatch:
			return fmt.Sprintf("%s's changes kept as %s", d.Agent, d.Patch)
		}
		return fmt.Sprintf("%s's changes applied: %s", d.Agent, Clip(strings.Join(d.Files, ", "), 70))
	case *messages.ChangesConflict:
		if d.Reason != "" {
			return fmt.Sprintf("%s's changes CONFLICT in %s (%s); patch kept: %s", d.Agent, Clip(strings.Join(d.Files, ", "), 50), Clip(d.Reason, 80), d.Patch)
		}
		return fmt.Sprintf("%s's changes CONFLICT in %s; patch kept: %s", d.Agent, Clip(strings.Join(d.Files, ", "), 50), d.Patch)
	case *messages.ContextCompacted:
		return fmt.Sprintf("%s: context compacted %d → %d messages", who, d.MessagesBefore, d.MessagesAfter)
	}
	return ""
}

// DiffStat renders a file tool's line counts as "+3 −1".
func DiffStat(meta map[string]any) string {
	n := func(k string) int {
		f, _ := meta[k].(float64) // numbers decode as float64
		return int(f)
	}
	return fmt.Sprintf("+%d −%d", n("lines_added"), n("lines_removed"))
}

// changedWhat names what a file tool changed: its path, or apply_patch's
// files.
func changedWhat(meta map[string]any) string {
	if p, ok := meta["path"].(string); ok {
		return p
	}
	files, _ := meta["files"].([]any)
	var names []string
	for _, f := range files {
		if s, ok := f.(string); ok {
			names = append(names, s)
		}
	}
	return strings.Join(names, ", ")
}

// EndWords says how something ended: "finished", "failed", "cancelled",
// "stopped at its round limit", "ran out of budget".
func EndWords(status, reason string) string {
	switch {
	case status == "completed" && reason == "round_limit":
		return "stopped at its round limit"
	case status == "completed" && reason == "budget_exhausted":
		return "ran out of budget"
	case status == "completed" && reason == "plan_submitted":
		return "submitted its plan"
	case status == "completed":
		return "finished"
	}
	return status
}

// Plural picks one for 1, many otherwise.
func Plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// Dollars formats a cost.
func Dollars(usd float64) string { return fmt.Sprintf("$%.4f", usd) }

// Cost formats a cost some of which may be unknown (a model without a
// price): "cost unknown" when nothing was priced, "$0.0123 + unpriced"
// when only part was, never a silent $0.
func Cost(usd float64, unpriced bool) string {
	switch {
	case !unpriced:
		return Dollars(usd)
	case usd == 0:
		return "cost unknown"
	}
	return Dollars(usd) + " + unpriced"
}

// Tokens formats a token count compactly: 950, 12.3k, 4.1M.
func Tokens(n int64) string {
	switch {
	case n < 1000:
		return fmt.Sprintf("%d tok", n)
	case n < 1_000_000:
		return fmt.Sprintf("%.1fk tok", float64(n)/1000)
	}
	return fmt.Sprintf("%.1fM tok", float64(n)/1_000_000)
}

// SummarizeCalls renders ["read_file","read_file","grep"] as
// "read_file×2, grep".
func SummarizeCalls(names []string) string {
	var order []string
	count := map[string]int{}
	for _, n := range names {
		if count[n] == 0 {
			order = append(order, n)
		}
		count[n]++
	}
	parts := make([]string, len(order))
	for i, n := range order {
		parts[i] = n
		if count[n] > 1 {
			parts[i] = fmt.Sprintf("%s×%d", n, count[n])
		}
	}
	return strings.Join(parts, ", ")
}

// Clip puts s on one line and cuts it to n bytes, marking the cut.
func Clip(s string, n int) string { return text.Clip(strings.Join(strings.Fields(s), " "), n) }

// short is an ID's first 8 bytes, cut on a character boundary.
func short(id string) string { return text.Cut(id, 8) }
