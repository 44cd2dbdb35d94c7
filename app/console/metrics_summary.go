package console

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/troupe-ai/troupe/watch"
)

// PrintMetrics lists the run's tool and token metrics (docs/metrics.md),
// one line each; a measure with nothing to measure says so.
func PrintMetrics(w io.Writer, m watch.Metrics) {
	pct := func(s watch.Share, what string) string {
		if s.Share == nil {
			return "none " + what
		}
		return fmt.Sprintf("%.0f%% (%d of %d %s)", 100**s.Share, s.Count, s.Of, what)
	}
	fmt.Fprintln(w, "metrics:")
	fmt.Fprintf(w, "  shell calls on file operations  %s\n", pct(m.ShellFileOps, "shell calls"))
	fmt.Fprintf(w, "  grep calls in files mode        %s\n", pct(m.GrepFilesMode, "grep calls"))
	fmt.Fprintf(w, "  blind writes                    %s\n", pct(m.BlindWrites, "file writes"))
	if r := m.ToolResultShare; r.Rounds > 0 {
		fmt.Fprintf(w, "  tool results in the context     mean %.0f%%, max %.0f%% (%d model calls)\n", 100*r.Mean, 100*r.Max, r.Rounds)
	} else {
		fmt.Fprintln(w, "  tool results in the context     no model calls")
	}
	fmt.Fprintf(w, "  cache hits                      %s\n", pct(m.CacheHits, "cacheable calls"))
	fmt.Fprintf(w, "  multi-tool rounds in parallel   %s\n", pct(m.ParallelRounds, "rounds with 2+ calls"))
	kinds := make([]string, 0, len(m.TokensByKind))
	for k := range m.TokensByKind {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	parts := make([]string, len(kinds))
	for i, k := range kinds {
		parts[i] = fmt.Sprintf("%s %s", k, watch.Tokens(m.TokensByKind[k]))
	}
	line := "explore vs worker tokens        "
	if s := m.ExploreVsWorker; s.Share != nil {
		line += fmt.Sprintf("%s vs %s (explore %.0f%%)", watch.Tokens(s.Count), watch.Tokens(s.Of-s.Count), 100**s.Share)
	} else {
		line += "neither ran"
	}
	fmt.Fprintf(w, "  %s\n", line)
	if len(parts) > 0 {
		fmt.Fprintf(w, "  tokens by kind                  %s\n", strings.Join(parts, " · "))
	}
	if r := m.RateLimits; r.Waits+r.Provider429s+r.Overloaded > 0 {
		fmt.Fprintf(w, "  rate limits                     %d calls waited %s in all · %d provider 429s · %d overloaded answers\n",
			r.Waits, time.Duration(r.WaitedMS*int64(time.Millisecond)).Round(time.Millisecond), r.Provider429s, r.Overloaded)
	}
}
