package convo

import (
	"fmt"
	"math"
	"slices"

	"github.com/troupe-ai/troupe/llm"
)

// convDelta is what changed in a conversation since the journal last
// recorded it: the entries from Keep on (appended, or rewritten by
// eviction or compaction) and the small state that may change every round.
// Replayed on the conversation as the journal held it, it gives the
// conversation as it is now.
type convDelta struct {
	// Keep is how many leading entries stay as they were.
	Keep    int         `json:"keep"`
	Entries []entryJSON `json:"entries,omitempty"`
	// Config is set when the limits changed (SetConfig).
	Config        *Config `json:"config,omitempty"`
	CharsPerToken float64 `json:"chars_per_token"`
	Calibrated    bool    `json:"calibrated,omitempty"`
	Round         int     `json:"round"`
	AdviseFired   bool    `json:"advise_fired,omitempty"`
	WarnFired     bool    `json:"warn_fired,omitempty"`
}

// touch notes that entry i changed in place (or was removed).
func (c *Conversation) touch(i int) {
	if i < c.synced {
		c.synced = i
	}
	if i < len(c.msgs) {
		c.msgs = nil
	}
}

// delta is what changed since the last markSynced. Its size is that of the
// change, not of the conversation, unless an old entry was rewritten.
func (c *Conversation) delta() convDelta {
	d := convDelta{Keep: min(c.synced, len(c.entries)), CharsPerToken: c.ratio, Calibrated: c.calibrated,
		Round: c.round, AdviseFired: c.fired[AdvisoryAdvise], WarnFired: c.fired[AdvisoryWarn]}
	if c.cfgDirty {
		cfg := c.cfg
		d.Config = &cfg
	}
	if n := len(c.entries) - d.Keep; n > 0 {
		d.Entries = make([]entryJSON, n)
		for i, e := range c.entries[d.Keep:] {
			d.Entries[i] = toEntryJSON(e)
		}
	}
	return d
}

// markSynced records that the journal now holds the whole conversation.
func (c *Conversation) markSynced() {
	c.synced, c.cfgDirty = len(c.entries), false
}

// apply replays d on c, checking each new entry as UnmarshalJSON does;
// the pairing of calls and results is checked once the last delta is in
// (settle). On error c is unchanged.
func (c *Conversation) apply(d convDelta) error {
	if d.Keep < 0 || d.Keep > len(c.entries) {
		return fmt.Errorf("conversation delta: keeps %d of %d entries", d.Keep, len(c.entries))
	}
	if d.Round < c.round {
		return fmt.Errorf("conversation delta: round %d is before the conversation's round %d", d.Round, c.round)
	}
	cfg := c.cfg
	if d.Config != nil {
		if err := d.Config.Validate(); err != nil {
			return fmt.Errorf("conversation delta: %w", err)
		}
		cfg = d.Config.withDefaults()
	}
	entries := c.entries[:d.Keep]
	if d.Keep < len(c.entries) {
		entries = slices.Clone(entries) // appending would overwrite c's own
	}
	for i, ej := range d.Entries {
		e := ej.entry()
		if err := checkEntry(e, d.Round); err != nil {
			return fmt.Errorf("conversation delta: entry %d: %w", d.Keep+i, err)
		}
		entries = append(entries, e)
	}
	out := Conversation{cfg: cfg, entries: entries, round: d.Round, calibrated: d.Calibrated, synced: len(entries)}
	out.ratio = d.CharsPerToken
	if math.IsNaN(out.ratio) || out.ratio == 0 {
		out.ratio, out.calibrated = out.cfg.CharsPerToken, false
	}
	out.ratio = clampRatio(out.ratio)
	out.fired[AdvisoryAdvise], out.fired[AdvisoryWarn] = d.AdviseFired, d.WarnFired
	for _, e := range entries {
		out.chars += e.Chars
	}
	*c = out
	return nil
}

// settle checks the pairing of calls and results after the last apply
// and finds the pending calls.
func (c *Conversation) settle() error {
	msgs := make([]llm.Message, len(c.entries))
	for i, e := range c.entries {
		msgs[i] = e.Message
	}
	pending, err := scanPairs(msgs, true)
	if err != nil {
		return fmt.Errorf("conversation: %w", err)
	}
	c.pending = pending
	return nil
}
