package messages

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
)

// EventVersion is the version of the event envelope.
const EventVersion = 1

// Event types. They are dotted and stable: renaming one is a version bump.
const (
	EvtRunStarted        = "run.started"
	EvtRunFinished       = "run.finished"
	EvtAgentSpawned      = "agent.spawned"
	EvtAgentStarted      = "agent.started"
	EvtRoundStarted      = "round.started"
	EvtLLMResponse       = "llm.response"
	EvtLLMDelta          = "llm.delta"
	EvtLLMRefused        = "llm.refused"
	EvtLLMThrottled      = "llm.throttled"
	EvtToolStarted       = "tool.started"
	EvtToolFinished      = "tool.finished"
	EvtContextEvicted    = "context.evicted"
	EvtContextCompacted  = "context.compacted"
	EvtContextAdvisory   = "context.advisory"
	EvtBudgetAcquired    = "budget.acquired"
	EvtBudgetReleased    = "budget.released"
	EvtBudgetAdvisory    = "budget.advisory"
	EvtBudgetWaiting     = "budget.waiting"
	EvtCheckpointSaved   = "checkpoint.saved"
	EvtAgentFinished     = "agent.finished"
	EvtAgentFailed       = "agent.failed"
	EvtAgentCancelled    = "agent.cancelled"
	EvtApprovalRequested = "approval.requested"
	EvtApprovalDecided   = "approval.decided"
	EvtDoomLoop          = "agent.doom_loop"
	EvtPhaseChanged      = "agent.phase"
	EvtSpawnPlan         = "spawn.plan"
	EvtNodeJoined        = "node.joined"
	EvtNodeLeft          = "node.left"
	EvtTaskRedelivered   = "task.redelivered"
)

// Event is the envelope of every lifecycle event (version 1). Seq counts from
// 1 per agent without gaps. Data holds the type-specific payload as JSON.
// Events never carry API keys or environment values.
type Event struct {
	V      int       `json:"v"`
	ID     string    `json:"id"`
	Time   time.Time `json:"time"`
	Run    string    `json:"run"`
	Agent  string    `json:"agent"`
	Parent string    `json:"parent,omitempty"`
	Kind   string    `json:"kind,omitempty"`
	Node   string    `json:"node,omitempty"`
	// Attempt is the delivery attempt of a remote agent's task, from 1;
	// absent for local agents. A redelivered task's agent starts its seq
	// at 1 again, so seq counts per agent and attempt.
	Attempt int             `json:"attempt,omitempty"`
	Seq     uint64          `json:"seq"`
	Type    string          `json:"type"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// NewEvent builds an event with a fresh ID and the current UTC time. data is
// marshalled to JSON; a value that cannot be marshalled is an error.
func NewEvent(run, agent, typ string, seq uint64, data any) (Event, error) {
	ev := Event{V: EventVersion, ID: uuid.NewString(), Time: time.Now().UTC(),
		Run: run, Agent: agent, Seq: seq, Type: typ}
	if data != nil {
		b, err := json.Marshal(data)
		if err != nil {
			return Event{}, fmt.Errorf("marshal %s data: %w", typ, err)
		}
		ev.Data = b
	}
	return ev, nil
}

// Validate reports the first problem with an event received from the wire.
func (e *Event) Validate() error {
	switch {
	case e.V != EventVersion:
		return fmt.Errorf("event: unsupported version %d", e.V)
	case e.ID == "":
		return fmt.Errorf("event: missing id")
	case e.Run == "" || e.Agent == "":
		return fmt.Errorf("event: missing run or agent")
	case e.Seq == 0:
		return fmt.Errorf("event: seq must start at 1")
	case e.Type == "" || strings.ContainsAny(e.Type, " *>") || !PrintableID(e.Type):
		return fmt.Errorf("event: bad type %q", e.Type)
	}
	for _, f := range []struct{ what, v string }{{"run", e.Run}, {"agent", e.Agent}, {"parent", e.Parent}, {"kind", e.Kind}, {"node", e.Node}} {
		if err := checkEnvelopeID(f.what, f.v); err != nil {
			return err
		}
	}
	return nil
}
