package actors

import (
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/troupe-ai/troupe/messages"
	"github.com/troupe-ai/troupe/tools"
	"github.com/troupe-ai/troupe/tools/sandbox"
)

// The tools' truncation strategies by their wire names.
var wireStrategies = map[tools.Strategy]string{
	tools.NoTruncation:        messages.TruncateNone,
	tools.StrategyHead:        messages.TruncateHead,
	tools.StrategyHeadAndTail: messages.TruncateHeadTail,
	tools.StrategyHeadLines:   messages.TruncateHeadLines,
}

// taskLimits are the run's limits as a child's task carries them, so
// that a child placed on a node runs under the limits it would have here.
func (rt *runtime) taskLimits(kind string) *messages.TaskLimits {
	s, tc := rt.settings, rt.toolCfg
	l := &messages.TaskLimits{MaxRounds: s.RoundLimit(), PlanningRounds: s.PlanningLimit(), ResultCap: s.ResultLimit(),
		ToolTimeoutMS: tools.DefaultTimeout.Milliseconds()}
	if sb := tc.Sandbox; sb != nil {
		l.Sandbox = &messages.TaskSandbox{Network: string(sb.NetworkFor(kind)), Required: sb.Required}
	}
	if tc.Timeout > 0 {
		l.ToolTimeoutMS = tc.Timeout.Milliseconds()
	}
	if len(tc.Truncation) > 0 {
		l.Truncation = make(map[string]messages.TaskTruncation, len(tc.Truncation))
		for tool, t := range tc.Truncation {
			l.Truncation[tool] = messages.TaskTruncation{Strategy: wireStrategies[t.Strategy], MaxBytes: t.MaxBytes,
				MaxLines: t.MaxLines, TailRatio: t.TailRatio}
		}
	}
	return l
}

// taskBudget is the run's budget rules as a child's task carries them.
func (rt *runtime) taskBudget() *messages.TaskBudget {
	return &messages.TaskBudget{Estimates: maps.Clone(rt.settings.Estimates), TopUp: rt.settings.TopUp}
}

// applyBudget makes a task's budget rules this runtime's: the estimates
// its agent reserves for children and the top-up it asks for are the
// run's, not the host's.
func (rt *runtime) applyBudget(b *messages.TaskBudget) {
	if b == nil {
		return
	}
	rt.settings.Estimates, rt.settings.TopUp = maps.Clone(b.Estimates), b.TopUp
}

// applyLimits makes a task's limits this runtime's (a copy made for the
// task: the maps it changes are its own). The task's sandbox can only
// tighten this runtime's for kind: a narrower network, required.
func (rt *runtime) applyLimits(l *messages.TaskLimits, kind string) error {
	if l == nil {
		return nil
	}
	if err := rt.applySandbox(l.Sandbox, kind); err != nil {
		return err
	}
	if l.MaxRounds > 0 {
		rt.settings.MaxRounds = l.MaxRounds
	}
	if l.PlanningRounds > 0 {
		rt.settings.PlanningRounds = l.PlanningRounds
	}
	if l.ResultCap > 0 {
		rt.settings.ResultCap = l.ResultCap
	}
	if l.ToolTimeoutMS > 0 {
		rt.toolCfg.Timeout = time.Duration(l.ToolTimeoutMS) * time.Millisecond
	}
	if len(l.Truncation) > 0 {
		tr := maps.Clone(rt.toolCfg.Truncation)
		if tr == nil {
			tr = map[string]tools.Truncation{}
		}
		for tool, t := range l.Truncation {
			for s, name := range wireStrategies {
				if name == t.Strategy {
					tr[tool] = tools.Truncation{Strategy: s, MaxBytes: t.MaxBytes, MaxLines: t.MaxLines, TailRatio: t.TailRatio}
				}
			}
		}
		rt.toolCfg.Truncation = tr
	}
	return nil
}

// applySandbox narrows the runtime's sandbox to what the task asks: the
// stricter network of the two for kind, required when either is. A node
// without a sandbox refuses a task that requires one.
func (rt *runtime) applySandbox(ts *messages.TaskSandbox, kind string) error {
	if ts == nil {
		return nil
	}
	sb := rt.toolCfg.Sandbox
	if sb == nil {
		if ts.Required {
			return errors.New("the task requires a sandbox and this node runs without one (sandbox.mode: off)")
		}
		return nil
	}
	own := sb.PolicyFor(kind, "/")
	asked := own
	asked.Network = sandbox.Network(ts.Network)
	if err := asked.Validate(); err != nil {
		return fmt.Errorf("task sandbox: %w", err)
	}
	narrowed, err := asked.Within(own)
	if err != nil {
		narrowed = own // the task asked for more: the node's own stays
	}
	c := *sb
	c.Network = maps.Clone(sb.Network)
	if c.Network == nil {
		c.Network = map[string]sandbox.Network{}
	}
	c.Network[kind] = narrowed.Network
	c.Required = sb.Required || ts.Required
	rt.toolCfg.Sandbox = &c
	return nil
}
