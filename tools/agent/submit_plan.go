package agent

import (
	"context"
	_ "embed"
	"fmt"
	"strings"

	"github.com/troupe-ai/troupe/tools"
)

//go:embed submit_plan.md
var submitPlanDoc string

// PlanStep is one step of a submitted plan.
type PlanStep struct {
	Title  string   `json:"title" jsonschema:"what the step does, concrete and checkable"`
	Detail string   `json:"detail,omitempty" jsonschema:"how, when the title is not enough"`
	Files  []string `json:"files,omitempty" jsonschema:"workspace-relative paths the step reads or changes"`
	Agent  string   `json:"agent,omitempty" jsonschema:"agent kind suited to the step: explore, planner, worker or a custom kind"`
}

// Plan is submit_plan's arguments: the structured plan.
type Plan struct {
	Summary string     `json:"summary" jsonschema:"the approach in one to three sentences"`
	Steps   []PlanStep `json:"steps" jsonschema:"ordered steps"`
}

// SubmitPlan returns the submit_plan tool. It validates the plan and
// returns it as metadata ("plan"); the agent loop switches phase on it.
func SubmitPlan() tools.Tool {
	return tools.New(tools.Spec{Name: NameSubmitPlan, Description: submitPlanDoc, ReadOnly: true, Effects: true,
		Parallel: tools.ParallelSafe, Tier: tools.TierAlways, Truncation: tools.HeadLines(200)}, runSubmitPlan)
}

func runSubmitPlan(_ context.Context, _ *tools.Session, p Plan) (tools.Result, error) {
	if strings.TrimSpace(p.Summary) == "" {
		return tools.Errorf("invalid plan: summary is empty; say the approach in one to three sentences"), nil
	}
	if len(p.Steps) == 0 {
		return tools.Errorf("invalid plan: it has no steps; list at least one concrete step"), nil
	}
	for i, s := range p.Steps {
		if strings.TrimSpace(s.Title) == "" {
			return tools.Errorf("invalid plan: step %d has an empty title", i+1), nil
		}
		for _, f := range s.Files {
			if strings.TrimSpace(f) == "" {
				return tools.Errorf("invalid plan: step %d lists an empty file path", i+1), nil
			}
		}
	}
	return tools.Text(fmt.Sprintf("Plan accepted (%d steps).\n%s", len(p.Steps), p.Render())).WithMeta("plan", p), nil
}

// Render prints the plan compactly for a parent agent or a user.
func (p Plan) Render() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Plan: %s\n", strings.TrimSpace(p.Summary))
	for i, s := range p.Steps {
		fmt.Fprintf(&b, "%d. %s", i+1, s.Title)
		if s.Agent != "" {
			fmt.Fprintf(&b, " [%s]", s.Agent)
		}
		if len(s.Files) > 0 {
			fmt.Fprintf(&b, " (%s)", strings.Join(s.Files, ", "))
		}
		b.WriteByte('\n')
		if s.Detail != "" {
			fmt.Fprintf(&b, "   %s\n", strings.TrimSpace(s.Detail))
		}
	}
	return b.String()
}
