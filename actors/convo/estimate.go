package convo

import (
	"math"
	"unicode/utf8"

	"github.com/troupe-ai/troupe/llm"
)

// MessageOverheadChars is added to every message's size for what the
// provider's wire format adds around it (role, separators).
const MessageOverheadChars = 8

// MessageChars is the size of m as the estimate counts it: the characters
// (runes) of its content, name and tool-call id, plus each tool call's id,
// name and arguments, plus MessageOverheadChars. Reasoning is not counted:
// it is not sent back to the provider.
func MessageChars(m llm.Message) int {
	n := MessageOverheadChars + utf8.RuneCountInString(m.Content) +
		utf8.RuneCountInString(m.Name) + utf8.RuneCountInString(m.ToolCallID)
	for _, tc := range m.ToolCalls {
		n += utf8.RuneCountInString(tc.ID) + utf8.RuneCountInString(tc.Name) + utf8.RuneCount(tc.Args)
	}
	return n
}

// tokensFor converts characters to estimated tokens at ratio chars/token,
// rounding up.
func tokensFor(chars int, ratio float64) int {
	if chars <= 0 {
		return 0
	}
	return int(math.Ceil(float64(chars) / ratio))
}

// clampRatio keeps a chars-per-token ratio within MinCharsPerToken and
// MaxCharsPerToken (NaN becomes the default).
func clampRatio(r float64) float64 {
	switch {
	case math.IsNaN(r):
		return DefaultCharsPerToken
	case r < MinCharsPerToken:
		return MinCharsPerToken
	case r > MaxCharsPerToken:
		return MaxCharsPerToken
	}
	return r
}

// Chars is the size of the next request in characters: every message plus
// Config.FixedChars.
func (c *Conversation) Chars() int { return c.chars + c.cfg.FixedChars }

// Estimate is the estimated size of the next request in tokens.
func (c *Conversation) Estimate() int { return tokensFor(c.Chars(), c.ratio) }

// ToolResultTokens is the estimated size in tokens of the tool results in
// the next request (a cleared result counts as the note that replaced it),
// at the same ratio as Estimate.
func (c *Conversation) ToolResultTokens() int {
	n := 0
	for _, e := range c.entries {
		if e.Message.Role == llm.RoleTool {
			n += e.Chars
		}
	}
	return tokensFor(n, c.ratio)
}

// Fill is Estimate as a fraction of the context window.
func (c *Conversation) Fill() float64 {
	return float64(c.Estimate()) / float64(c.cfg.Window)
}

// CharsPerToken is the current estimate ratio.
func (c *Conversation) CharsPerToken() float64 { return c.ratio }

// Calibrate adjusts the estimate ratio from the prompt tokens the provider
// reported for the request built by the last call of Messages. The first
// calibration takes the observed ratio; later ones move halfway towards it,
// so one odd report does not swing the estimate. The ratio stays within
// MinCharsPerToken..MaxCharsPerToken. A non-positive promptTokens (some
// providers report none) or no Messages call since the last calibration
// leaves the ratio unchanged. It returns the ratio in force.
func (c *Conversation) Calibrate(promptTokens int) float64 {
	if promptTokens <= 0 || c.sentChars <= 0 {
		return c.ratio
	}
	observed := clampRatio(float64(c.sentChars) / float64(promptTokens))
	if c.calibrated {
		c.ratio = clampRatio((c.ratio + observed) / 2)
	} else {
		c.ratio = observed
		c.calibrated = true
	}
	c.sentChars = 0
	return c.ratio
}
