package convo

import (
	"fmt"
	"math"
	"slices"
)

// Defaults of Config. A zero field of Config takes these values.
const (
	DefaultCharsPerToken    = 3.5
	MinCharsPerToken        = 1.5
	MaxCharsPerToken        = 8.0
	DefaultAdviseAt         = 0.6
	DefaultWarnAt           = 0.8
	DefaultEvictAt          = 0.8
	DefaultRearmMargin      = 0.1
	DefaultMinAge           = 3
	DefaultRecentMessages   = 10
	DefaultCompactTarget    = 0.5
	DefaultSummaryMaxTokens = 2000
)

// Config sets the limits of one conversation. Window is required; every
// other zero field takes its Default value (see the constants). Fractions
// are of Window.
type Config struct {
	// Window is the model's context window in tokens (resolved per model by
	// the config layer).
	Window int `json:"window"`
	// CharsPerToken is the initial estimate ratio, before calibration.
	CharsPerToken float64 `json:"chars_per_token,omitempty"`
	// FixedChars is sent with every request besides the messages (the tool
	// schemas); it counts in the estimate and in calibration.
	FixedChars int `json:"fixed_chars,omitempty"`
	// AdviseAt is where the first advisory fires (default 0.6).
	AdviseAt float64 `json:"advise_at,omitempty"`
	// WarnAt is where the second advisory fires (default 0.8).
	WarnAt float64 `json:"warn_at,omitempty"`
	// EvictAt is where eviction, then compaction, start (default 0.8).
	EvictAt float64 `json:"evict_at,omitempty"`
	// RearmMargin: a fired advisory is re-armed when the estimate falls
	// below its threshold minus this margin (default 0.1).
	RearmMargin float64 `json:"rearm_margin,omitempty"`
	// MinAge is how many rounds old a tool result must be to be cleared
	// (default 3; the latest round's results have age 0).
	MinAge int `json:"min_age,omitempty"`
	// Protected names tools whose results are never cleared (todo,
	// submit_plan...). They may still be summarized by compaction.
	Protected []string `json:"protected,omitempty"`
	// RecentMessages is the recency window compaction keeps verbatim
	// (default 10; it grows so as not to split a tool-call group).
	RecentMessages int `json:"recent_messages,omitempty"`
	// CompactTarget is the estimate compaction aims at (default 0.5): it
	// summarizes the oldest messages until the rest, plus a summary of
	// SummaryMaxTokens, fits under it, or up to the recency window.
	CompactTarget float64 `json:"compact_target,omitempty"`
	// SummaryMaxTokens caps the summary's length (default 2000).
	SummaryMaxTokens int `json:"summary_max_tokens,omitempty"`
}

// withDefaults returns c with every zero field set to its default.
func (c Config) withDefaults() Config {
	if c.CharsPerToken == 0 {
		c.CharsPerToken = DefaultCharsPerToken
	}
	if c.AdviseAt == 0 {
		c.AdviseAt = DefaultAdviseAt
	}
	if c.WarnAt == 0 {
		c.WarnAt = DefaultWarnAt
	}
	if c.EvictAt == 0 {
		c.EvictAt = DefaultEvictAt
	}
	if c.RearmMargin == 0 {
		c.RearmMargin = DefaultRearmMargin
	}
	if c.MinAge == 0 {
		c.MinAge = DefaultMinAge
	}
	if c.RecentMessages == 0 {
		c.RecentMessages = DefaultRecentMessages
	}
	if c.CompactTarget == 0 {
		c.CompactTarget = DefaultCompactTarget
	}
	if c.SummaryMaxTokens == 0 {
		c.SummaryMaxTokens = DefaultSummaryMaxTokens
	}
	c.Protected = slices.Clone(c.Protected)
	return c
}

// Validate reports the first field of c (after defaults) that is out of
// range, naming it and its allowed range.
func (c Config) Validate() error {
	c = c.withDefaults()
	frac := func(name string, v float64) error {
		if math.IsNaN(v) || v <= 0 || v > 1 {
			return fmt.Errorf("convo config: %s = %v, want a fraction in (0, 1]", name, v)
		}
		return nil
	}
	switch {
	case c.Window <= 0:
		return fmt.Errorf("convo config: window = %d, want the model's context window in tokens (> 0)", c.Window)
	case math.IsNaN(c.CharsPerToken) || c.CharsPerToken < MinCharsPerToken || c.CharsPerToken > MaxCharsPerToken:
		return fmt.Errorf("convo config: chars_per_token = %v, want %v..%v", c.CharsPerToken, MinCharsPerToken, MaxCharsPerToken)
	case c.FixedChars < 0:
		return fmt.Errorf("convo config: fixed_chars = %d, want >= 0", c.FixedChars)
	case c.MinAge < 0:
		return fmt.Errorf("convo config: min_age = %d, want >= 1 (0 means the default %d)", c.MinAge, DefaultMinAge)
	case c.RecentMessages < 0:
		return fmt.Errorf("convo config: recent_messages = %d, want >= 1 (0 means the default %d)", c.RecentMessages, DefaultRecentMessages)
	case c.SummaryMaxTokens < 0:
		return fmt.Errorf("convo config: summary_max_tokens = %d, want >= 1", c.SummaryMaxTokens)
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"advise_at", c.AdviseAt}, {"warn_at", c.WarnAt}, {"evict_at", c.EvictAt},
		{"rearm_margin", c.RearmMargin}, {"compact_target", c.CompactTarget}} {
		if err := frac(f.name, f.v); err != nil {
			return err
		}
	}
	if c.AdviseAt >= c.WarnAt {
		return fmt.Errorf("convo config: advise_at (%v) must be below warn_at (%v)", c.AdviseAt, c.WarnAt)
	}
	if c.CompactTarget >= c.EvictAt {
		return fmt.Errorf("convo config: compact_target (%v) must be below evict_at (%v)", c.CompactTarget, c.EvictAt)
	}
	return nil
}

// protected reports whether results of the named tool are never cleared.
func (c Config) protected(tool string) bool { return slices.Contains(c.Protected, tool) }
