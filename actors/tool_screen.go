package actors

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/troupe-ai/troupe/internal/text"
	"github.com/troupe-ai/troupe/messages"
	"github.com/troupe-ai/troupe/tools"
)

// What a tool call must pass before it runs: the doom-loop check and the
// approval policy (a mutating call denied, or asked with the change it
// would make).

// doomState is doom-loop detection: the last call's signature and how
// many times in a row it was made.
type doomState struct {
	lastCall string
	repeats  int
}

// screen refuses a call before it runs: a doom loop, or a mutating tool the
// approval policy denies. It runs on the tool-step goroutine, one call at a
// time in call order, on the step's own copy of the doom-loop state. An
// approval of a file tool's call is asked with the diff the call would
// make; approved, its fingerprint comes back, and the call may write only
// that change.
func (a *agent) screen(st *stepState, call messages.ToolCall, reg *tools.Registry) (res tools.Result, refused bool, approvedChange string) {
	sig := tools.CacheKey(call.Name, call.Args) // the tool and its normalized arguments
	switch t, ok := reg.Get(call.Name); {
	case ok && t.Spec().Polls:
		st.doom = doomState{} // polling is how it is used
	case sig == st.doom.lastCall:
		st.doom.repeats++
	default:
		st.doom = doomState{lastCall: sig, repeats: 1}
	}
	if n := a.rt.settings.DoomLimit(); st.doom.repeats >= n {
		a.ev.emit(messages.EvtDoomLoop, messages.DoomLoop{Round: st.round, Tool: call.Name,
			Args: orEmpty(call.Args), Repeats: st.doom.repeats})
		return tools.Errorf("doom loop: you have called %s with the same arguments %d times in a row, and the result will not change. Do something different: change the arguments, use another tool, or finish with what you have.", call.Name, st.doom.repeats), true, ""
	}
	policy, mutating := a.approvalPolicy(call, reg)
	if !mutating || a.refusedAnyway(reg, call) {
		return tools.Result{}, false, ""
	}
	switch policy {
	case PolicyDeny:
		a.ev.emit(messages.EvtApprovalDecided, messages.ApprovalDecided{Tool: call.Name, By: "policy"})
		return tools.Errorf("tool %s is denied by this run's approval policy; do without it or finish and say what is needed", call.Name), true, ""
	case PolicyAsk:
		req := ApprovalRequest{V: messages.ProtocolVersion, ID: uuid.NewString(), Run: a.rt.run, Agent: a.spec.id,
			Kind: a.spec.kind.Name, Tool: call.Name, Args: call.Args, Question: fmt.Sprintf("allow %s?", call.Name)}
		preview := a.preview(call)
		req.Diff, req.NoDiff = preview.Text, text.Clip(strings.Join(strings.Fields(preview.Err), " "), 300)
		a.ev.emit(messages.EvtApprovalRequested, messages.ApprovalRequested{Tool: call.Name, Args: orEmpty(call.Args), Diff: preview.Text})
		start := time.Now()
		ok, by := a.rt.approve(a.ctx, req)
		a.ev.emit(messages.EvtApprovalDecided, messages.ApprovalDecided{Tool: call.Name, Approved: ok, By: by,
			WaitedMS: time.Since(start).Milliseconds()})
		if !ok {
			return tools.Errorf("the user did not approve this %s call (%s); do not retry it unchanged", call.Name, by), true, ""
		}
		return tools.Result{}, false, preview.Fingerprint
	}
	return tools.Result{}, false, ""
}

// preview is the change a file tool's call would make (empty for other
// tools).
func (a *agent) preview(call messages.ToolCall) tools.Preview {
	t, ok := a.rt.known.Get(call.Name)
	if !ok {
		return tools.Preview{}
	}
	p, _ := tools.PreviewCall(a.ctx, a.session, t, call.Args)
	return p
}

// approvalPolicy is the approval policy of a call and whether it can
// change anything. A call of a tool that spawns agents (Spec.Spawns:
// delegate) is as mutating as the kind it starts: a read-only kind needs
// no approval; another follows the policy set for the tool, else the
// strictest policy among the kind's mutating tools.
func (a *agent) approvalPolicy(call messages.ToolCall, reg *tools.Registry) (string, bool) {
	t, ok := reg.Get(call.Name) // the agent's own tools include its MCP servers'
	if !ok {
		if t, ok = a.rt.known.Get(call.Name); !ok {
			return PolicyAuto, false
		}
	}
	spawns := t.Spec().Spawns
	if spawns == nil {
		return a.rt.settings.ApprovalFor(call.Name), !t.Spec().ReadOnly
	}
	name, ok := spawns(call.Args)
	if !ok {
		return PolicyAuto, false // the tool itself reports the bad arguments
	}
	k, ok := a.rt.kinds[name]
	if !ok || k.ReadOnly {
		return PolicyAuto, false
	}
	if pol, set := a.rt.settings.Approval[call.Name]; set {
		return pol, true
	}
	strictest := PolicyAuto
	for _, name := range k.Tools {
		kt, ok := a.rt.known.Get(name)
		if !ok || kt.Spec().ReadOnly {
			continue
		}
		switch a.rt.settings.ApprovalFor(name) {
		case PolicyDeny:
			return PolicyDeny, true
		case PolicyAsk:
			strictest = PolicyAsk
		}
	}
	return strictest, true
}

// mutating reports a call to one of reg's tools that may change something
// (see approvalPolicy).
func (a *agent) mutating(call messages.ToolCall, reg *tools.Registry) bool {
	_, m := a.approvalPolicy(call, reg)
	return m
}

func orEmpty(b json.RawMessage) json.RawMessage {
	if len(b) == 0 {
		return json.RawMessage("{}")
	}
	return b
}
