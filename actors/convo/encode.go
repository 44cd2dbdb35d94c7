package convo

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/troupe-ai/troupe/llm"
	"github.com/troupe-ai/troupe/messages"
)

// conversationVersion is the version of the JSON form of a Conversation.
const conversationVersion = 1

// conversationJSON is the JSON form of a Conversation.
type conversationJSON struct {
	V             int         `json:"v"`
	Config        Config      `json:"config"`
	Entries       []entryJSON `json:"entries"`
	CharsPerToken float64     `json:"chars_per_token"`
	Calibrated    bool        `json:"calibrated,omitempty"`
	Round         int         `json:"round"`
	AdviseFired   bool        `json:"advise_fired,omitempty"`
	WarnFired     bool        `json:"warn_fired,omitempty"`
}

// MarshalJSON writes the conversation with its limits, calibration and
// advisory state, so a resumed agent continues where it stopped.
func (c *Conversation) MarshalJSON() ([]byte, error) {
	entries := make([]entryJSON, len(c.entries))
	for i, e := range c.entries {
		entries[i] = toEntryJSON(e)
	}
	return json.Marshal(conversationJSON{
		V: conversationVersion, Config: c.cfg, Entries: entries,
		CharsPerToken: c.ratio, Calibrated: c.calibrated, Round: c.round,
		AdviseFired: c.fired[AdvisoryAdvise], WarnFired: c.fired[AdvisoryWarn],
	})
}

// UnmarshalJSON reads what MarshalJSON wrote. It checks what it reads (the
// version, the limits, the roles and the pairing of tool calls and
// results, of which only the last assistant message's may be pending) and
// recomputes the sizes rather than trusting them. On error c is unchanged.
func (c *Conversation) UnmarshalJSON(data []byte) error {
	var j conversationJSON
	if err := json.Unmarshal(data, &j); err != nil {
		return fmt.Errorf("conversation: %w", err)
	}
	if j.V != conversationVersion {
		return fmt.Errorf("conversation: version %d, want %d", j.V, conversationVersion)
	}
	if err := j.Config.Validate(); err != nil {
		return fmt.Errorf("conversation: %w", err)
	}
	msgs := make([]llm.Message, len(j.Entries))
	entries := make([]Entry, len(j.Entries))
	for i, ej := range j.Entries {
		e := ej.entry()
		entries[i] = e
		if err := checkEntry(e, j.Round); err != nil {
			return fmt.Errorf("conversation: entry %d: %w", i, err)
		}
		msgs[i] = e.Message
	}
	pending, err := scanPairs(msgs, true)
	if err != nil {
		return fmt.Errorf("conversation: %w", err)
	}
	out := Conversation{cfg: j.Config.withDefaults(), entries: entries, round: j.Round,
		calibrated: j.Calibrated, pending: pending}
	out.ratio = j.CharsPerToken
	if math.IsNaN(out.ratio) || out.ratio == 0 {
		out.ratio, out.calibrated = out.cfg.CharsPerToken, false
	}
	out.ratio = clampRatio(out.ratio)
	out.fired[AdvisoryAdvise], out.fired[AdvisoryWarn] = j.AdviseFired, j.WarnFired
	out.synced = len(out.entries)
	for _, e := range out.entries {
		out.chars += e.Chars
	}
	*c = out
	return nil
}

// checkEntry reports what makes e impossible in a conversation at round.
func checkEntry(e Entry, round int) error {
	switch {
	case e.Round < 0 || e.Round > round:
		return fmt.Errorf("round %d outside 0..%d", e.Round, round)
	case e.Pinned && e.Message.Role != llm.RoleSystem && e.Message.Role != llm.RoleUser:
		return fmt.Errorf("pinned %s message, only system and user may be pinned", e.Message.Role)
	case e.Message.Role == llm.RoleTool && e.Message.ToolCallID == "":
		return errors.New("tool message without tool_call_id")
	case e.ClearedChars < 0:
		return fmt.Errorf("cleared_chars %d", e.ClearedChars)
	}
	return nil
}

// Clone returns a deep copy, for handing to another goroutine (a
// checkpoint writer) while the owner goes on.
func (c *Conversation) Clone() *Conversation {
	out := *c
	out.cfg = c.cfg.withDefaults()
	out.entries = c.Entries()
	out.msgs = nil // shared spare capacity would let both append into it
	out.pending = slices.Clone(c.pending)
	for i, tc := range out.pending {
		out.pending[i].Args = slices.Clone(tc.Args)
	}
	return &out
}

// entryJSON is the JSON form of an Entry. Tool-call arguments are kept as
// strings, byte for byte: a model may send arguments that are not valid
// JSON (the tool answers with an error result), and re-encoding valid ones
// would change their spacing and so their size.
type entryJSON struct {
	Role         llm.Role   `json:"role"`
	Content      string     `json:"content,omitempty"`
	Reasoning    string     `json:"reasoning,omitempty"`
	ToolCalls    []callJSON `json:"tool_calls,omitempty"`
	ToolCallID   string     `json:"tool_call_id,omitempty"`
	Name         string     `json:"name,omitempty"`
	Round        int        `json:"round"`
	Tool         string     `json:"tool,omitempty"`
	Args         string     `json:"args,omitempty"`
	Pinned       bool       `json:"pinned,omitempty"`
	Cleared      bool       `json:"cleared,omitempty"`
	ClearedChars int        `json:"cleared_chars,omitempty"`
	Summary      bool       `json:"summary,omitempty"`
}

type callJSON struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	Args string `json:"args"`
}

func toEntryJSON(e Entry) entryJSON {
	m := e.Message
	j := entryJSON{Role: m.Role, Content: m.Content, Reasoning: m.Reasoning, ToolCallID: m.ToolCallID,
		Name: m.Name, Round: e.Round, Tool: e.Tool, Args: e.Args, Pinned: e.Pinned, Cleared: e.Cleared,
		ClearedChars: e.ClearedChars, Summary: e.Summary}
	for _, tc := range m.ToolCalls {
		j.ToolCalls = append(j.ToolCalls, callJSON{ID: tc.ID, Name: tc.Name, Args: string(tc.Args)})
	}
	return j
}

func (j entryJSON) entry() Entry {
	m := llm.Message{Role: j.Role, Content: j.Content, Reasoning: j.Reasoning, ToolCallID: j.ToolCallID, Name: j.Name}
	for _, tc := range j.ToolCalls {
		call := messages.ToolCall{ID: tc.ID, Name: tc.Name}
		if tc.Args != "" {
			call.Args = json.RawMessage(tc.Args)
		}
		m.ToolCalls = append(m.ToolCalls, call)
	}
	e := Entry{Message: m, Round: j.Round, Tool: j.Tool, Args: j.Args, Pinned: j.Pinned, Cleared: j.Cleared,
		ClearedChars: j.ClearedChars, Summary: j.Summary}
	e.Chars = MessageChars(m)
	return e
}
