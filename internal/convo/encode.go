package convo

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"

	"github.com/troupe-ai/troupe/internal/llm"
)

// conversationVersion is the version of the JSON form of a Conversation.
const conversationVersion = 1

// conversationJSON is the JSON form of a Conversation.
type conversationJSON struct {
	V             int     `json:"v"`
	Config        Config  `json:"config"`
	Entries       []Entry `json:"entries"`
	CharsPerToken float64 `json:"chars_per_token"`
	Calibrated    bool    `json:"calibrated,omitempty"`
	Round         int     `json:"round"`
	AdviseFired   bool    `json:"advise_fired,omitempty"`
	WarnFired     bool    `json:"warn_fired,omitempty"`
}

// MarshalJSON writes the conversation with its limits, calibration and
// advisory state, so a resumed agent continues where it stopped.
func (c *Conversation) MarshalJSON() ([]byte, error) {
	return json.Marshal(conversationJSON{
		V: conversationVersion, Config: c.cfg, Entries: c.entries,
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
	for i, e := range j.Entries {
		switch {
		case e.Round < 0 || e.Round > j.Round:
			return fmt.Errorf("conversation: entry %d: round %d outside 0..%d", i, e.Round, j.Round)
		case e.Pinned && e.Message.Role != llm.RoleSystem && e.Message.Role != llm.RoleUser:
			return fmt.Errorf("conversation: entry %d: pinned %s message, only system and user may be pinned", i, e.Message.Role)
		case e.Message.Role == llm.RoleTool && e.Message.ToolCallID == "":
			return fmt.Errorf("conversation: entry %d: tool message without tool_call_id", i)
		case e.ClearedChars < 0:
			return fmt.Errorf("conversation: entry %d: cleared_chars %d", i, e.ClearedChars)
		}
		msgs[i] = e.Message
	}
	pending, err := scanPairs(msgs, true)
	if err != nil {
		return fmt.Errorf("conversation: %w", err)
	}
	out := Conversation{cfg: j.Config.withDefaults(), entries: j.Entries, round: j.Round,
		calibrated: j.Calibrated, pending: pending}
	out.ratio = j.CharsPerToken
	if math.IsNaN(out.ratio) || out.ratio == 0 {
		out.ratio, out.calibrated = out.cfg.CharsPerToken, false
	}
	out.ratio = clampRatio(out.ratio)
	out.fired[AdvisoryAdvise], out.fired[AdvisoryWarn] = j.AdviseFired, j.WarnFired
	for i := range out.entries {
		out.entries[i].Chars = MessageChars(out.entries[i].Message)
		out.chars += out.entries[i].Chars
	}
	*c = out
	return nil
}

// Clone returns a deep copy, for handing to another goroutine (a
// checkpoint writer) while the owner goes on.
func (c *Conversation) Clone() *Conversation {
	out := *c
	out.cfg = c.cfg.withDefaults()
	out.entries = c.Entries()
	out.pending = slices.Clone(c.pending)
	for i, tc := range out.pending {
		out.pending[i].Args = slices.Clone(tc.Args)
	}
	return &out
}
