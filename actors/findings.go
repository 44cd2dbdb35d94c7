package actors

import (
	"regexp"
	"sync"
)

var pathLineRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?m)([A-Za-z0-9_.\-/]+\.[A-Za-z0-9]+):(\d+)`) })

// findingsOf extracts the path:line references of an explore agent's
// answer, for the structured metadata of its final event.
func findingsOf(kind, text string) []string {
	if kind != KindExplore {
		return nil
	}
	var out []string
	seen := map[string]bool{}
	for _, m := range pathLineRE().FindAllString(text, 200) {
		if !seen[m] {
			seen[m] = true
			out = append(out, m)
		}
	}
	return out
}
