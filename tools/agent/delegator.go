package agent

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/troupe-ai/troupe/tools"
)

// DelegateRequest is one delegate call.
type DelegateRequest struct {
	Task       string
	Type       string
	Context    string
	Model      string
	Background bool
	// CallID is the delegate tool call's ID: the child's ID is made from
	// it, so a resumed run that calls a pending delegate again finds the
	// child it had started (and its result, if it ran on a node).
	CallID string
}

// ChildReport is what the parent learns about a child agent.
type ChildReport struct {
	AgentID     string
	Kind        string
	Model       string
	Status      string // running, completed, failed, cancelled
	Reason      string // finished, round_limit, budget_exhausted, plan_submitted, error, cancelled
	Text        string // the result, already capped
	Plan        *Plan
	Err         string
	Rounds      int
	Tokens      int
	Cost        float64
	CurrentTool string
	Changed     []string // files the child's file tools changed
	Node        string   // the node that ran it, when remote
}

// Delegator is how the delegation tools reach the agent actor that owns
// them (tools never imports actors). Errors it returns are the model's to
// read (an unknown agent, a kind not allowed now), except ctx's.
type Delegator interface {
	Delegate(ctx context.Context, req DelegateRequest) (ChildReport, error)
	Check(ctx context.Context, agentID string, block bool, timeout time.Duration) (ChildReport, error)
	SendInput(ctx context.Context, agentID, message string) error
	Cancel(ctx context.Context, agentID string) (ChildReport, error)
}

// Render formats a report for the model: a status line, then the result.
func (r ChildReport) Render() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Agent %s (%s)", r.AgentID, r.Kind)
	if r.Model != "" {
		fmt.Fprintf(&b, " on %s", r.Model)
	}
	if r.Node != "" {
		fmt.Fprintf(&b, ", ran on node %s", r.Node)
	}
	fmt.Fprintf(&b, "\nStatus: %s", r.Status)
	if r.Reason != "" && r.Reason != "finished" && r.Status != "running" {
		fmt.Fprintf(&b, " (%s)", r.Reason)
	}
	if r.Status == "running" {
		if r.CurrentTool != "" {
			fmt.Fprintf(&b, ", round %d, running %s", r.Rounds, r.CurrentTool)
		} else if r.Rounds > 0 {
			fmt.Fprintf(&b, ", round %d", r.Rounds)
		}
	} else {
		fmt.Fprintf(&b, "; %d rounds, %d tokens, $%.4f", r.Rounds, r.Tokens, r.Cost)
	}
	b.WriteByte('\n')
	if r.Err != "" {
		fmt.Fprintf(&b, "Error: %s\n", r.Err)
	}
	if len(r.Changed) > 0 {
		fmt.Fprintf(&b, "Changed: %s\n", strings.Join(r.Changed, ", "))
	}
	if r.Text != "" {
		b.WriteString("Result:\n")
		b.WriteString(r.Text)
		if !strings.HasSuffix(r.Text, "\n") {
			b.WriteByte('\n')
		}
	}
	return b.String()
}

func delegationResult(ctx context.Context, rep ChildReport, err error) (tools.Result, error) {
	if err != nil {
		if ctx.Err() != nil {
			return tools.Result{}, ctx.Err()
		}
		return tools.Errorf("%v", err), nil
	}
	r := tools.Text(rep.Render()).WithMeta("agent_id", rep.AgentID).WithMeta("status", rep.Status).WithMeta("kind", rep.Kind)
	if rep.Plan != nil {
		r = r.WithMeta("plan", *rep.Plan)
	}
	if rep.Node != "" {
		r = r.WithMeta("node", rep.Node)
	}
	if len(rep.Changed) > 0 {
		r = r.WithMeta("changed", rep.Changed)
	}
	r.IsError = rep.Status == "failed"
	return r, nil
}

// delegator returns the session's delegator or an error result.
func delegatorOf(s *tools.Session) (Delegator, *tools.Result) {
	d, _ := s.Attached(delegatorKey{}).(Delegator)
	if d == nil {
		r := tools.Errorf("this agent cannot delegate: delegation is not available to it")
		return nil, &r
	}
	return d, nil
}
