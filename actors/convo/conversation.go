package convo

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/troupe-ai/troupe/llm"
	"github.com/troupe-ai/troupe/messages"
)

// Entry is one message of a conversation with its bookkeeping.
type Entry struct {
	Message llm.Message `json:"message"`
	// Round is the agent round the message was added in (0 for the pinned
	// prefix).
	Round int `json:"round"`
	// Chars is MessageChars(Message), kept up to date.
	Chars int `json:"chars"`
	// Tool and Args name the tool and summarize its arguments, on tool
	// results.
	Tool string `json:"tool,omitempty"`
	Args string `json:"args,omitempty"`
	// Pinned entries are never cleared, summarized or reordered.
	Pinned bool `json:"pinned,omitempty"`
	// Cleared is set when eviction replaced the content; ClearedChars is the
	// size of the content it replaced.
	Cleared      bool `json:"cleared,omitempty"`
	ClearedChars int  `json:"cleared_chars,omitempty"`
	// Summary marks the message compaction wrote.
	Summary bool `json:"summary,omitempty"`
}

// ToolResult is the outcome of one tool call, to append to the
// conversation. The tool's name and arguments are taken from the call.
type ToolResult struct {
	CallID  string
	Content string
}

// Conversation is the ordered messages of one agent plus their bookkeeping
// and the state of its context-window management. Create one with New; the
// zero value is only a target for json.Unmarshal.
type Conversation struct {
	cfg        Config
	entries    []Entry
	chars      int     // sum of entries' Chars
	ratio      float64 // chars per token
	calibrated bool
	sentChars  int // Chars() at the last Messages call, for Calibrate
	round      int // the highest round appended
	fired      [numLevels]bool
	pending    []messages.ToolCall // calls of the last assistant message without results
	// synced is how many leading entries the journal holds as they are
	// (see delta); cfgDirty: the limits changed since it last wrote them.
	synced   int
	cfgDirty bool
	// msgs is what Messages returned last, extended in place as entries
	// are appended; dropped (never rewritten) when an entry it holds
	// changes, so a list handed out stays as it was.
	msgs []llm.Message
}

// New returns an empty conversation with limits cfg.
func New(cfg Config) (*Conversation, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	return &Conversation{cfg: cfg, ratio: cfg.CharsPerToken}, nil
}

// Config returns the conversation's limits, with defaults filled in.
func (c *Conversation) Config() Config { return c.cfg.withDefaults() }

// SetConfig replaces the limits (a resumed run may use another model). The
// calibrated ratio is kept; an uncalibrated one takes cfg's.
func (c *Conversation) SetConfig(cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	c.cfg = cfg.withDefaults()
	c.cfgDirty = true
	if !c.calibrated {
		c.ratio = c.cfg.CharsPerToken
	}
	return nil
}

// Len is the number of messages.
func (c *Conversation) Len() int { return len(c.entries) }

// Round is the highest round a message was appended in.
func (c *Conversation) Round() int { return c.round }

// Entries returns a copy of the messages with their bookkeeping.
func (c *Conversation) Entries() []Entry {
	out := make([]Entry, len(c.entries))
	for i, e := range c.entries {
		out[i] = e
		out[i].Message = cloneMessage(e.Message)
	}
	return out
}

// Messages returns the messages for the next request and records their
// size for Calibrate. The result is read-only and never changes
// afterwards: the conversation keeps one list of messages, extends it as
// entries are appended, and starts a new one when an entry it holds is
// changed in place (eviction, compaction), so a round's request costs
// the new messages only, not a copy of the whole history. Appending to
// the result copies it (its capacity is its length).
func (c *Conversation) Messages() []llm.Message {
	if len(c.msgs) > len(c.entries) {
		c.msgs = nil
	}
	if c.msgs == nil {
		c.msgs = make([]llm.Message, 0, len(c.entries)+16)
	}
	for i := len(c.msgs); i < len(c.entries); i++ {
		c.msgs = append(c.msgs, c.entries[i].Message)
	}
	c.sentChars = c.Chars()
	return c.msgs[:len(c.msgs):len(c.msgs)]
}

// Pending returns the tool calls of the last assistant message that have no
// result yet.
func (c *Conversation) Pending() []messages.ToolCall { return slices.Clone(c.pending) }

// Task is the content of the first pinned user message ("" if none).
func (c *Conversation) Task() string {
	for _, e := range c.entries {
		if e.Pinned && e.Message.Role == llm.RoleUser {
			return e.Message.Content
		}
	}
	return ""
}

// AppendSystem appends a pinned system message (a system prompt or
// injected context).
func (c *Conversation) AppendSystem(content string) error {
	return c.AppendPinned(llm.Message{Role: llm.RoleSystem, Content: content})
}

// AppendTask appends the task as a pinned user message.
func (c *Conversation) AppendTask(content string) error {
	return c.AppendPinned(llm.Message{Role: llm.RoleUser, Content: content})
}

// AppendPinned appends a pinned system or user message: it is never
// cleared, summarized or reordered.
func (c *Conversation) AppendPinned(m llm.Message) error {
	if m.Role != llm.RoleSystem && m.Role != llm.RoleUser {
		return fmt.Errorf("append pinned: role %q, want system or user", m.Role)
	}
	if err := c.checkNoPending("append pinned"); err != nil {
		return err
	}
	c.add(Entry{Message: cloneMessage(m), Round: c.round, Pinned: true})
	return nil
}

// AppendUser appends an ordinary (unpinned) user message in round.
func (c *Conversation) AppendUser(round int, content string) error {
	if err := c.checkRound("append user", round); err != nil {
		return err
	}
	if err := c.checkNoPending("append user"); err != nil {
		return err
	}
	c.round = round
	c.add(Entry{Message: llm.Message{Role: llm.RoleUser, Content: content}, Round: round})
	return nil
}

// AppendAssistant appends the model's answer of round. Its tool calls, if
// any, must each have a unique non-empty ID and a name; they stay pending
// until AppendToolResults answers them.
func (c *Conversation) AppendAssistant(round int, m llm.Message) error {
	if m.Role == "" {
		m.Role = llm.RoleAssistant
	}
	if m.Role != llm.RoleAssistant {
		return fmt.Errorf("append assistant: role %q, want assistant", m.Role)
	}
	if err := c.checkRound("append assistant", round); err != nil {
		return err
	}
	if err := c.checkNoPending("append assistant"); err != nil {
		return err
	}
	seen := make(map[string]bool, len(m.ToolCalls))
	for i, tc := range m.ToolCalls {
		switch {
		case tc.ID == "":
			return fmt.Errorf("append assistant: tool call %d (%s) has no id", i, tc.Name)
		case tc.Name == "":
			return fmt.Errorf("append assistant: tool call %d (%s) has no name", i, tc.ID)
		case seen[tc.ID]:
			return fmt.Errorf("append assistant: tool call id %q appears twice", tc.ID)
		}
		seen[tc.ID] = true
	}
	c.round = round
	m = cloneMessage(m)
	c.add(Entry{Message: m, Round: round})
	c.pending = slices.Clone(m.ToolCalls)
	return nil
}

// AppendToolResults appends the results of a batch of the pending tool
// calls (normally all of them), in the given order. When the estimate has
// crossed an advisory threshold, the advisory is appended to the last
// result of the batch and returned (Level NoAdvisory otherwise). A result
// for an unknown or already answered call is an error and appends nothing.
func (c *Conversation) AppendToolResults(results []ToolResult) (Advisory, error) {
	if len(results) == 0 {
		return Advisory{}, nil
	}
	calls := make([]messages.ToolCall, len(results))
	used := make(map[string]bool, len(results))
	for i, r := range results {
		j := slices.IndexFunc(c.pending, func(tc messages.ToolCall) bool { return tc.ID == r.CallID })
		if j < 0 || used[r.CallID] {
			return Advisory{}, fmt.Errorf("append tool results: result %d answers call %q, which is not pending (pending: %s)",
				i, r.CallID, callIDs(c.pending))
		}
		used[r.CallID] = true
		calls[i] = c.pending[j]
	}
	for i, r := range results {
		tc := calls[i]
		c.add(Entry{
			Message: llm.Message{Role: llm.RoleTool, Content: r.Content, ToolCallID: tc.ID, Name: tc.Name},
			Round:   c.round, Tool: tc.Name, Args: ArgsSummary(tc.Args),
		})
	}
	c.pending = slices.DeleteFunc(c.pending, func(tc messages.ToolCall) bool { return used[tc.ID] })
	adv := c.advise()
	if adv.Level != NoAdvisory {
		last := len(c.entries) - 1
		c.setContent(last, c.entries[last].Message.Content+"\n\n"+adv.Text)
	}
	return adv, nil
}

// add appends e, computing its size.
func (c *Conversation) add(e Entry) {
	e.Chars = MessageChars(e.Message)
	c.chars += e.Chars
	c.entries = append(c.entries, e)
}

// setContent replaces the content of entry i and keeps the sizes right.
func (c *Conversation) setContent(i int, content string) {
	c.touch(i)
	e := &c.entries[i]
	e.Message.Content = content
	c.chars -= e.Chars
	e.Chars = MessageChars(e.Message)
	c.chars += e.Chars
}

func (c *Conversation) checkRound(op string, round int) error {
	if round < c.round {
		return fmt.Errorf("%s: round %d is before the conversation's round %d", op, round, c.round)
	}
	return nil
}

func (c *Conversation) checkNoPending(op string) error {
	if len(c.pending) > 0 {
		return fmt.Errorf("%s: %w (%s)", op, ErrPendingToolCalls, callIDs(c.pending))
	}
	return nil
}

func callIDs(calls []messages.ToolCall) string {
	if len(calls) == 0 {
		return "none"
	}
	s := ""
	for i, tc := range calls {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("%s %s", tc.ID, tc.Name)
	}
	return s
}

// cloneMessage copies m deeply enough that neither copy can change the
// other.
func cloneMessage(m llm.Message) llm.Message {
	if m.ToolCalls != nil {
		calls := make([]messages.ToolCall, len(m.ToolCalls))
		for i, tc := range m.ToolCalls {
			calls[i] = tc
			calls[i].Args = json.RawMessage(slices.Clone([]byte(tc.Args)))
		}
		m.ToolCalls = calls
	}
	return m
}
