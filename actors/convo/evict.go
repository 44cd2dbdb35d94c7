package convo

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/troupe-ai/troupe/llm"
)

// ClearedFormat is the content an evicted tool result is replaced with, as
// a fmt format of (tool, args summary, chars cleared, round).
const ClearedFormat = "[Cleared: %s(%s) — %d chars, round %d]"

// ArgsSummaryMax is the length (in runes) ArgsSummary cuts to.
const ArgsSummaryMax = 60

// salientArgs are the argument names ArgsSummary shows, in this order.
var salientArgs = []string{
	"path", "file_path", "paths", "pattern", "glob", "command", "query", "url",
	"offset", "limit", "mode", "agent_id", "type", "name", "task",
}

// Eviction reports what Evict cleared, for a context.evicted event.
type Eviction struct {
	Count          int `json:"count"`
	CharsFreed     int `json:"chars_freed"`
	EstimateBefore int `json:"estimate_before"`
	EstimateAfter  int `json:"estimate_after"`
}

// Evict clears tool results while the estimate is at or above
// Config.EvictAt: oldest first, skipping results younger than Config.MinAge
// rounds, results of protected tools, pinned messages and results already
// cleared, and results already shorter than their note. Each is replaced
// by a ClearedFormat line. It stops as soon as the estimate is below the
// threshold.
func (c *Conversation) Evict() Eviction {
	return c.evict(c.cfg.MinAge)
}

func (c *Conversation) evict(minAge int) Eviction {
	ev := Eviction{EstimateBefore: c.Estimate()}
	limit := c.cfg.EvictAt * float64(c.cfg.Window)
	for i := range c.entries {
		if float64(c.Estimate()) < limit {
			break
		}
		e := &c.entries[i]
		if e.Message.Role != llm.RoleTool || e.Pinned || e.Cleared ||
			c.round-e.Round < minAge || c.cfg.protected(e.Tool) {
			continue
		}
		n := utf8.RuneCountInString(e.Message.Content)
		line := fmt.Sprintf(ClearedFormat, e.Tool, e.Args, n, e.Round)
		if utf8.RuneCountInString(line) >= n {
			continue // shorter than its note: clearing would only lose it
		}
		before := e.Chars
		c.setContent(i, line)
		e.Cleared, e.ClearedChars = true, n
		ev.Count++
		ev.CharsFreed += before - e.Chars
	}
	ev.EstimateAfter = c.Estimate()
	c.rearm()
	return ev
}

// ArgsSummary renders the salient arguments of a tool call (path, pattern,
// command...) as "name=value, ...", cut to about ArgsSummaryMax runes. When
// none of the salient names is present it shows the first scalar arguments
// in name order. Arguments that are not a JSON object are shown raw, cut.
func ArgsSummary(args json.RawMessage) string {
	var obj map[string]any
	if err := json.Unmarshal(args, &obj); err != nil || obj == nil {
		return cut(strings.Join(strings.Fields(string(args)), " "), ArgsSummaryMax)
	}
	var parts []string
	for _, k := range salientArgs {
		if v, ok := obj[k]; ok {
			if s, ok := scalar(v); ok {
				parts = append(parts, k+"="+s)
			}
		}
	}
	if len(parts) == 0 {
		keys := make([]string, 0, len(obj))
		for k := range obj {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			if s, ok := scalar(obj[k]); ok && len(parts) < 2 {
				parts = append(parts, k+"="+s)
			}
		}
	}
	return cut(strings.Join(parts, ", "), ArgsSummaryMax)
}

// scalar renders a short JSON value on one line; objects are skipped and
// arrays of strings are joined.
func scalar(v any) (string, bool) {
	switch v := v.(type) {
	case string:
		return strings.Join(strings.Fields(v), " "), true
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64), true
	case bool:
		return strconv.FormatBool(v), true
	case []any:
		var ss []string
		for _, x := range v {
			if s, ok := x.(string); ok {
				ss = append(ss, s)
			}
		}
		return "[" + strings.Join(ss, " ") + "]", len(ss) > 0
	}
	return "", false
}

// cut shortens s to at most max runes, marking the cut with "…".
func cut(s string, max int) string {
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	r := []rune(s)
	return string(r[:max-1]) + "…"
}
