package convo

import (
	"context"
	"errors"
)

// Maintenance reports what Fit did. Compaction is nil when no summary was
// written; Fallback is the extra eviction done when compaction was needed
// but failed (or still left the estimate over the threshold).
type Maintenance struct {
	Eviction   Eviction
	Compaction *Compaction
	Fallback   Eviction
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
