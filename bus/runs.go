package bus

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/troupe-ai/troupe/messages"
)

// FindRun is the full ID of the run whose ID starts with prefix (the
// 8-character short ID watch shows, or the whole ID). It asks the events
// stream which run.started subjects it holds, without reading any event;
// a prefix no run has is ErrUnknownRun, one several runs share is
// ErrAmbiguousRun naming a few of them.
func (c *Conn) FindRun(ctx context.Context, prefix string) (string, error) {
	if err := CheckToken("run", prefix); err != nil {
		return "", err
	}
	runs, err := c.startedRuns(ctx)
	if err != nil {
		return "", err
	}
	var match []string
	for _, r := range runs {
		if strings.HasPrefix(r, prefix) {
			match = append(match, r)
		}
	}
	switch {
	case len(match) == 1:
		return match[0], nil
	case len(match) == 0:
		return "", fmt.Errorf("run %q: %w among the %d runs in %s", prefix, ErrUnknownRun, len(runs), c.Names().Events)
	}
	for _, r := range match { // an exact ID wins over longer IDs it prefixes
		if r == prefix {
			return r, nil
		}
	}
	shown := match
	if len(shown) > 5 {
		shown = shown[:5]
	}
	return "", fmt.Errorf("run %q: %w (%d: %s): give more of the ID", prefix, ErrAmbiguousRun, len(match), strings.Join(shown, ", "))
}

// startedRuns lists, sorted, the runs with a run.started event in the
// events stream, from the stream's per-subject counts.
func (c *Conn) startedRuns(ctx context.Context) ([]string, error) {
	st, err := c.js.Stream(ctx, c.Names().Events)
	if err != nil {
		return nil, fmt.Errorf("find runs: %w (is this a troupe NATS server? run or serve creates %s)", err, c.Names().Events)
	}
	filter := c.prefix + ".evt.*.*." + messages.EvtRunStarted
	info, err := st.Info(ctx, jetstream.WithSubjectFilter(filter))
	if err != nil {
		return nil, fmt.Errorf("find runs: %w", err)
	}
	seen := map[string]bool{}
	head := c.prefix + ".evt."
	for subj := range info.State.Subjects {
		run, _, ok := strings.Cut(strings.TrimPrefix(subj, head), ".")
		if ok {
			seen[run] = true
		}
	}
	runs := make([]string, 0, len(seen))
	for r := range seen {
		runs = append(runs, r)
	}
	sort.Strings(runs)
	return runs, nil
}
