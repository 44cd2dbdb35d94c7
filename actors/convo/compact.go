package convo

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/troupe-ai/troupe/llm"
)

// SummaryPrefix starts the content of the message compaction writes. It is
// a user message: some providers reject system messages mid-conversation.
const SummaryPrefix = "[Summary of earlier conversation]"

// Summarizer is the model compaction asks for a summary (a side request).
type Summarizer struct {
	Client llm.Client
	Model  string
	// Run, Agent and Kind identify the caller in the request's headers.
	Run, Agent, Kind string
}

// Compaction reports what Compact did, for a context.compacted event.
// Usage and Cost are those of the side request; count them in the run's
// budget.
type Compaction struct {
	MessagesBefore int       `json:"messages_before"`
	MessagesAfter  int       `json:"messages_after"`
	EstimateBefore int       `json:"estimate_before"`
	EstimateAfter  int       `json:"estimate_after"`
	Summarized     int       `json:"summarized"` // messages folded into the summary (pinned ones are kept)
	SummaryChars   int       `json:"summary_chars"`
	Model          string    `json:"model"`
	Usage          llm.Usage `json:"usage"`
	Cost           float64   `json:"cost"`
}

// Compact replaces the older part of the conversation with a summary the
// model writes. The result is: the pinned prefix, any pinned messages from
// the summarized part (in order), one user message starting SummaryPrefix,
// the middle that was not needed to reach Config.CompactTarget, and the
// last Config.RecentMessages messages. Cut points move so that no
// assistant message is separated from its tool results. On any error the
// conversation is unchanged: ErrPendingToolCalls, ErrNothingToCompact, or
// the side request's error.
func (c *Conversation) Compact(ctx context.Context, s Summarizer) (Compaction, error) {
	if err := c.checkNoPending("compact"); err != nil {
		return Compaction{}, err
	}
	if s.Client == nil {
		return Compaction{}, errors.New("compact: no llm client to summarize with")
	}
	start, end := c.compactSpan()
	if !c.hasUnpinned(start, end) {
		return Compaction{}, ErrNothingToCompact
	}
	req := llm.Request{
		Model: s.Model, Run: s.Run, Agent: s.Agent, Kind: s.Kind,
		MaxTokens: c.cfg.SummaryMaxTokens,
		Messages: []llm.Message{
			{Role: llm.RoleSystem, Content: SummaryPrompt},
			{Role: llm.RoleUser, Content: c.transcript(start, end)},
		},
	}
	resp, err := s.Client.Complete(ctx, req, nil)
	if err != nil {
		return Compaction{}, fmt.Errorf("compact: summarize %d messages with %s: %w", end-start, s.Model, err)
	}
	summary := strings.TrimSpace(resp.Message.Content)
	if summary == "" {
		return Compaction{}, fmt.Errorf("compact: summarize with %s: the model returned no text (finish reason %q)", s.Model, resp.FinishReason)
	}
	st := Compaction{MessagesBefore: len(c.entries), EstimateBefore: c.Estimate(),
		Model: resp.Model, Usage: resp.Usage, Cost: resp.Cost}
	if st.Model == "" {
		st.Model = s.Model
	}
	if err := c.replaceSpan(start, end, summary); err != nil {
		return Compaction{}, err
	}
	st.MessagesAfter, st.EstimateAfter = len(c.entries), c.Estimate()
	st.Summarized = st.MessagesBefore - st.MessagesAfter + 1
	st.SummaryChars = len([]rune(summary))
	c.rearm()
	return st, nil
}

// compactSpan returns the part [start, end) to summarize: from the end of
// the pinned prefix up to where the rest fits under CompactTarget with a
// full-length summary in its place, but never into the recency window.
// Neither bound falls on a tool message.
func (c *Conversation) compactSpan() (start, end int) {
	n := len(c.entries)
	for start < n && c.entries[start].Pinned {
		start++
	}
	recent := max(n-c.cfg.RecentMessages, start)
	for recent > start && c.entries[recent].Message.Role == llm.RoleTool {
		recent--
	}
	target := c.cfg.CompactTarget * float64(c.cfg.Window)
	summaryChars := int(float64(c.cfg.SummaryMaxTokens)*c.ratio) + len(SummaryPrefix) + MessageOverheadChars
	rest := c.Chars() + summaryChars
	for end = start; end < recent; end++ {
		if c.entries[end].Message.Role != llm.RoleTool && end > start &&
			float64(tokensFor(rest, c.ratio)) <= target {
			break
		}
		if !c.entries[end].Pinned {
			rest -= c.entries[end].Chars
		}
	}
	return start, end
}

func (c *Conversation) hasUnpinned(start, end int) bool {
	for _, e := range c.entries[start:end] {
		if !e.Pinned {
			return true
		}
	}
	return false
}

// replaceSpan puts the pinned messages of [start, end) and then the summary
// message in the place of that span, after checking the result still pairs
// every tool call with its results.
func (c *Conversation) replaceSpan(start, end int, summary string) error {
	out := make([]Entry, 0, len(c.entries)-(end-start)+1)
	out = append(out, c.entries[:start]...)
	for _, e := range c.entries[start:end] {
		if e.Pinned {
			out = append(out, e)
		}
	}
	sm := llm.Message{Role: llm.RoleUser, Content: SummaryPrefix + "\n" + summary}
	out = append(out, Entry{Message: sm, Round: c.entries[end-1].Round, Chars: MessageChars(sm), Summary: true})
	out = append(out, c.entries[end:]...)
	msgs := make([]llm.Message, len(out))
	for i, e := range out {
		msgs[i] = e.Message
	}
	if err := ValidatePairs(msgs); err != nil {
		return fmt.Errorf("compact: the compacted conversation would be invalid (a bug; conversation kept): %w", err)
	}
	c.touch(start)
	c.entries = out
	c.chars = 0
	for _, e := range out {
		c.chars += e.Chars
	}
	return nil
}

// Maintenance reports what Fit did. Compaction is nil when no summary was
// written; Fallback is the extra eviction done when compaction was needed
// but failed (or still left the estimate over the threshold).
type Maintenance struct {
	Eviction   Eviction    `json:"eviction"`
	Compaction *Compaction `json:"compaction,omitempty"`
	Fallback   Eviction    `json:"fallback"`
}

// Over reports whether the estimate is at or above Config.EvictAt.
func (c *Conversation) Over() bool {
	return float64(c.Estimate()) >= c.cfg.EvictAt*float64(c.cfg.Window)
}

// Fit brings the conversation under Config.EvictAt before a model request:
// nothing if it is under; else Evict; if still over, Compact with s; if
// that fails or the estimate is still over, clear tool results down to the
// previous round (ignoring MinAge, still sparing protected tools). The
// error is the side request's, for the caller to log: the conversation is
// always left valid and as small as these steps could make it.
// ErrNothingToCompact is not reported as an error.
func (c *Conversation) Fit(ctx context.Context, s Summarizer) (Maintenance, error) {
	var m Maintenance
	if !c.Over() {
		return m, nil
	}
	m.Eviction = c.Evict()
	if !c.Over() {
		return m, nil
	}
	comp, err := c.Compact(ctx, s)
	if err == nil {
		m.Compaction = &comp
	} else if errors.Is(err, ErrNothingToCompact) {
		err = nil
	}
	if c.Over() {
		m.Fallback = c.evict(1)
	}
	return m, err
}
