package agent

import (
	"context"
	_ "embed"
	"encoding/json"
	"strings"
	"time"

	"github.com/troupe-ai/troupe/tools"
)

//go:embed delegate.md
var delegateDoc string

// DelegateParams are delegate's arguments.
type DelegateParams struct {
	Task       string `json:"task" jsonschema:"the sub-task, self-contained: what to find or do and what to return"`
	Type       string `json:"type" jsonschema:"agent type: explore, planner, worker or a custom type"`
	Context    string `json:"context,omitempty" jsonschema:"what the child needs to know from your work so far"`
	Model      string `json:"model,omitempty" jsonschema:"model for the child (default: chosen by type)"`
	Background bool   `json:"background,omitempty" jsonschema:"return the agent ID at once instead of waiting (default false)"`
}

// Delegate returns the delegate tool.
func Delegate() tools.Tool {
	return tools.New(tools.Spec{
		Guidance: []tools.GuidanceLine{tools.Line(tools.SectionWhichTool, 70, "Hand off self-contained sub-tasks with delegate: explore agents for read-only questions over the code, planner for a plan, worker for changes. Give each a precise task and the context it needs; they do not see your conversation.")},
		Name:     NameDelegate, Description: delegateDoc, Spawns: delegatedKind, Parallel: tools.ParallelSafe,
		// No Truncation of its own: the parent caps the child's text
		// (result_cap, ChildReport.Text), and the executor's default cap is
		// only the structural guard every tool has.
		Tier: tools.TierAlways, Timeout: 24 * time.Hour}, runDelegate)
}

// delegatedKind is the agent kind a delegate call starts.
func delegatedKind(args json.RawMessage) (string, bool) {
	var p DelegateParams
	if json.Unmarshal(args, &p) != nil || strings.TrimSpace(p.Type) == "" {
		return "", false
	}
	return strings.TrimSpace(p.Type), true
}

func runDelegate(ctx context.Context, s *tools.Session, p DelegateParams) (tools.Result, error) {
	d, refuse := delegatorOf(s)
	if refuse != nil {
		return *refuse, nil
	}
	if strings.TrimSpace(p.Task) == "" {
		return tools.Errorf("task is empty: say what the agent should find or do"), nil
	}
	if strings.TrimSpace(p.Type) == "" {
		return tools.Errorf("type is empty: use explore, planner, worker or a custom type"), nil
	}
	rep, err := d.Delegate(ctx, DelegateRequest{Task: p.Task, Type: strings.TrimSpace(p.Type), Context: p.Context,
		Model: p.Model, Background: p.Background, CallID: tools.CallID(ctx)})
	if err == nil && p.Background {
		r := tools.Text("Started agent " + rep.AgentID + " (" + rep.Kind + ") in the background. Use check_agent with agent_id=" + rep.AgentID + " to get its result.")
		return r.WithMeta("agent_id", rep.AgentID).WithMeta("status", rep.Status).WithMeta("kind", rep.Kind), nil
	}
	return delegationResult(ctx, rep, err)
}
