package convo

import "fmt"

// The advisory texts, as fmt formats of (percent, used tokens, window
// tokens). They are appended to the last tool result of a batch.
const (
	AdviseFormat = "[Context budget: ~%d%% of the context window used (%d/%d tokens). Prefer targeted reads (offset/limit, grep in files mode) over whole files.]"
	WarnFormat   = "[Context budget: ~%d%% used (%d/%d tokens). Older tool results will be cleared soon: note what you need, and finish or summarize your progress.]"
)

// AdvisoryLevel says which advisory fired.
type AdvisoryLevel int

// The advisory levels, in increasing order of urgency.
const (
	NoAdvisory AdvisoryLevel = iota
	// AdvisoryAdvise fires at Config.AdviseAt (60 %): prefer targeted reads.
	AdvisoryAdvise
	// AdvisoryWarn fires at Config.WarnAt (80 %): results will be cleared.
	AdvisoryWarn
	numLevels
)

// String names the level for events: "none", "advise" or "warn".
func (l AdvisoryLevel) String() string {
	switch l {
	case AdvisoryAdvise:
		return "advise"
	case AdvisoryWarn:
		return "warn"
	}
	return "none"
}

// MarshalText writes the level's name, so events carry "advise" or "warn".
func (l AdvisoryLevel) MarshalText() ([]byte, error) { return []byte(l.String()), nil }

// UnmarshalText reads a name MarshalText wrote.
func (l *AdvisoryLevel) UnmarshalText(b []byte) error {
	for v := NoAdvisory; v < numLevels; v++ {
		if v.String() == string(b) {
			*l = v
			return nil
		}
	}
	return fmt.Errorf("advisory level %q: want none, advise or warn", b)
}

// Advisory is the budget notice AppendToolResults added, for a
// budget.advisory event. Level is NoAdvisory when none fired.
type Advisory struct {
	Level   AdvisoryLevel `json:"level"`
	Percent int           `json:"percent"`
	Used    int           `json:"used"`
	Window  int           `json:"window"`
	Text    string        `json:"text,omitempty"`
}

// advise decides which advisory, if any, fires at the current estimate:
// the most urgent threshold crossed that has not fired since it was last
// armed. Crossing both at once fires only the warning and disarms both.
func (c *Conversation) advise() Advisory {
	c.rearm()
	used, window := c.Estimate(), c.cfg.Window
	fill := float64(used) / float64(window)
	level := NoAdvisory
	if fill >= c.cfg.WarnAt && !c.fired[AdvisoryWarn] {
		level = AdvisoryWarn
	} else if fill >= c.cfg.AdviseAt && !c.fired[AdvisoryAdvise] && !c.fired[AdvisoryWarn] {
		level = AdvisoryAdvise
	}
	if level == NoAdvisory {
		return Advisory{}
	}
	for l := AdvisoryAdvise; l <= level; l++ {
		c.fired[l] = true
	}
	pct := used * 100 / window
	format := AdviseFormat
	if level == AdvisoryWarn {
		format = WarnFormat
	}
	return Advisory{Level: level, Percent: pct, Used: used, Window: window,
		Text: fmt.Sprintf(format, pct, used, window)}
}

// rearm re-arms each fired advisory whose threshold the estimate has fallen
// below by at least Config.RearmMargin.
func (c *Conversation) rearm() {
	fill := c.Fill()
	if fill < c.cfg.AdviseAt-c.cfg.RearmMargin {
		c.fired[AdvisoryAdvise] = false
	}
	if fill < c.cfg.WarnAt-c.cfg.RearmMargin {
		c.fired[AdvisoryWarn] = false
	}
}
