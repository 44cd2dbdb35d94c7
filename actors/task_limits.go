package actors

import (
	"maps"
	"time"

	"github.com/troupe-ai/troupe/messages"
	"github.com/troupe-ai/troupe/tools"
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
func (rt *runtime) taskLimits() *messages.TaskLimits {
	s, tc := rt.settings, rt.toolCfg
	l := &messages.TaskLimits{MaxRounds: s.RoundLimit(), PlanningRounds: s.PlanningLimit(), ResultCap: s.ResultLimit(),
		ToolTimeoutMS: tools.DefaultTimeout.Milliseconds()}
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

// applyLimits makes a task's limits this runtime's (a copy made for the
// task: the maps it changes are its own).
func (rt *runtime) applyLimits(l *messages.TaskLimits) {
	if l == nil {
		return
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
}
