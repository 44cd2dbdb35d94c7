package watch

import (
	"fmt"
	"strings"
	"time"
)

// Layout is the room a frame has.
type Layout struct {
	Width  int  // columns; 0 = 100
	Height int  // rows; 0 = no limit
	Color  bool // ANSI colours
}

// Frame renders the tree as lines at most l.Width columns wide (colour
// codes aside) and, when l.Height is set, at most l.Height lines: per run
// a header, its agents as an indented tree, the nodes seen, and the recent
// events. Every text from the events is made Printable. When the tree is
// taller than the room, it gives way in this order: fewer recent events,
// finished runs as one line, finished agents folded into a count, no
// recent events, running agents beyond the first few as "… N more
// agents", and last a cut.
func Frame(t *Tree, now time.Time, l Layout) []string {
	if l.Width <= 0 {
		l.Width = 100
	}
	f := frame{runs: t.Runs(), nodes: t.Nodes(), tail: t.Tail(), diff: t.LastDiff(), refused: t.Refused(), now: now, l: l, tailMax: -1, agentCap: -1}
	f.hidden, f.hiddenRunning = t.Hidden()
	if l.Height > 0 && len(f.runs) >= l.Height {
		// More runs than rows (watch --all over a long stream): go
		// straight to one line per run, with nothing else, instead of
		// rendering every run once per step of giving way.
		f.tailMax, f.hideDiff, f.foldRuns, f.hideEnded = 0, true, true, true
	}
	lines := f.render()
	if l.Height <= 0 || len(lines) <= l.Height {
		return lines
	}
	for _, shrink := range []func(){
		func() { f.tailMax = 3 },
		func() { f.hideDiff = true },
		func() { f.foldRuns = true },
		func() { f.hideEnded = true },
		func() { f.tailMax = 0 },
	} {
		shrink()
		if lines = f.render(); len(lines) <= l.Height {
			return lines
		}
	}
	// Cap the agents shown per run: the most that fit.
	lo, hi := 0, f.maxAgents()
	for lo < hi {
		mid := (lo + hi + 1) / 2
		f.agentCap = mid
		if len(f.render()) <= l.Height {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	f.agentCap = lo
	lines = f.render()
	if len(lines) > l.Height { // too many runs even so
		lines = append(lines[:max(l.Height-1, 0)], fit(fmt.Sprintf("… %d more lines (a taller terminal shows them)", len(lines)-l.Height+1), l.Width))
	}
	return lines
}

// frame is one rendering of the tree with what gives way when it is too
// tall.
type frame struct {
	runs      []Run
	nodes     []Node
	tail      []string
	diff      LastDiff // the last file change
	refused   uint64   // messages the event stream refused
	now       time.Time
	l         Layout
	tailMax   int  // recent events shown; -1 = all
	foldRuns  bool // finished runs as their header line only
	hideEnded bool // ended agents (but a run's roots) as a count
	agentCap  int  // agent lines per run; -1 = all
	hideDiff  bool // no last change
	// hidden runs the tree let go (Tree.Keep), hiddenRunning of them
	// not finished.
	hidden, hiddenRunning int
}

func (f *frame) paint(code, s string) string {
	if !f.l.Color || code == "" {
		return s
	}
	return code + s + ansiReset
}

func (f *frame) maxAgents() int {
	n := 0
	for _, r := range f.runs {
		n = max(n, len(r.Agents))
	}
	return n
}

func (f *frame) render() []string {
	var out []string
	if f.hidden > 0 {
		out = append(out, f.paint(ansiDim, fit(fmt.Sprintf("… %d earlier runs not shown (%d of them running)", f.hidden, f.hiddenRunning), f.l.Width)))
	}
	for _, r := range f.runs {
		out = append(out, f.runLines(r)...)
	}
	if len(f.nodes) > 0 {
		var parts []string
		for _, n := range f.nodes {
			s := fmt.Sprintf("%s (%s ×%d)", n.Name, strings.Join(n.Kinds, ","), n.Slots)
			if n.Left {
				s += " left"
			}
			parts = append(parts, s)
		}
		out = append(out, fit("nodes: "+strings.Join(parts, ", "), f.l.Width))
	}
	if f.refused > 0 {
		out = append(out, f.paint(ansiYellow, fit(fmt.Sprintf("refused: %d message(s) on the events' subjects (malformed, or not what their subject says)", f.refused), f.l.Width)))
	}
	tail := f.tail
	if f.tailMax >= 0 && len(tail) > f.tailMax {
		tail = tail[len(tail)-f.tailMax:]
	}
	if len(tail) > 0 {
		out = append(out, f.paint(ansiDim, "recent:"))
		for _, l := range tail {
			out = append(out, f.paint(ansiDim, fit("  "+l, f.l.Width)))
		}
	}
	if f.diff.Diff != "" && !f.hideDiff {
		out = append(out, diffLines(f.diff, f.l.Width, f.paint)...)
	}
	return out
}

func (f *frame) runLines(r Run) []string {
	state := "running"
	if r.Finished {
		state = EndWords(r.Status, r.Reason)
	}
	var tokens int64
	var cost float64
	unpriced := false
	for _, a := range r.Agents {
		tokens += int64(a.TokensIn + a.TokensOut)
		cost += a.CostUSD
		unpriced = unpriced || a.Unpriced
	}
	if r.Finished && r.Tokens > 0 {
		tokens, cost = r.Tokens, r.CostUSD
	}
	head := fmt.Sprintf("run %s · %s · %d %s · %s · %s · %s", short(r.ID), state, len(r.Agents),
		Plural(len(r.Agents), "agent", "agents"), Tokens(tokens), Cost(cost, unpriced), age(r.Started, runEnd(r, f.now)))
	if r.Missed > 0 {
		head += fmt.Sprintf(" · %d missed", r.Missed)
	}
	out := []string{f.paint(ansiBold, fit(head, f.l.Width))}
	if r.Finished && f.foldRuns {
		return out
	}
	if r.Task != "" {
		out = append(out, f.paint(ansiDim, fit("  "+r.Task, f.l.Width)))
	}
	ids, depth := r.Ordered()
	shown, hidden, more, running := 0, 0, 0, 0
	for _, id := range ids {
		a := r.Agents[id]
		if f.hideEnded && depth[id] > 0 && ended(a.Status) {
			hidden++
			continue
		}
		if f.agentCap >= 0 && shown >= f.agentCap {
			more++
			if !ended(a.Status) {
				running++
			}
			continue
		}
		shown++
		out = append(out, f.agentLine(a, depth[id]))
	}
	if more > 0 {
		out = append(out, f.paint(ansiDim, fit(fmt.Sprintf("  … %d more %s (%d running)", more, Plural(more, "agent", "agents"), running), f.l.Width)))
	}
	if hidden > 0 {
		out = append(out, f.paint(ansiDim, fit(fmt.Sprintf("  … %d ended %s not shown", hidden, Plural(hidden, "agent", "agents")), f.l.Width)))
	}
	return out
}

func ended(status string) bool {
	return status == StatusFinished || status == StatusFailed || status == StatusCancelled
}

func (f *frame) agentLine(a *Agent, depth int) string {
	status, code := a.Status, ""
	switch a.Status {
	case StatusFinished:
		code = ansiGreen
	case StatusFailed:
		code = ansiRed
	case StatusCancelled, StatusWaiting, StatusThrottled:
		code = ansiYellow
	case StatusRunning:
		code = ansiCyan
	}
	doing := ""
	if a.Tool != "" {
		doing = " " + a.Tool
	}
	end := a.Ended
	if end.IsZero() {
		end = f.now
	}
	id := fmt.Sprintf("%s%-22s %-8s ", strings.Repeat("  ", depth+1), Printable(a.ID), Printable(a.Kind))
	line := fmt.Sprintf("%s%-9s r%-2d%s · %s/%s · %s · %s", id, status, a.Round, doing, Tokens(int64(a.TokensIn)),
		Tokens(int64(a.TokensOut)), Cost(a.CostUSD, a.Unpriced), age(a.Started, end))
	if a.Node != "" {
		line += " · " + a.Node
		if a.Attempt > 1 {
			line += fmt.Sprintf(" (attempt %d)", a.Attempt)
		}
	}
	if a.Redelivered > 0 {
		line += fmt.Sprintf(" · redelivered ×%d", a.Redelivered)
	}
	line = fit(line, f.l.Width)
	if !strings.HasPrefix(line, id+status) { // cut inside the ID column
		return line
	}
	return id + f.paint(code, status) + line[len(id)+len(status):]
}

// runEnd is when r's clock stops: now while it runs; for an ended run its
// start plus the wall time run.finished reported, else its last event (a
// lost run).
func runEnd(r Run, now time.Time) time.Time {
	switch {
	case !r.Finished:
		return now
	case r.WallMS > 0 && !r.Started.IsZero():
		return r.Started.Add(time.Duration(r.WallMS) * time.Millisecond)
	}
	return r.Last
}

func age(from, to time.Time) string {
	if from.IsZero() {
		return "-"
	}
	d := to.Sub(from)
	if d < 0 {
		d = 0
	}
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%.1fs", d.Seconds())
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
}

// diffShownLines is how many lines of the last change the view shows.
const diffShownLines = 12

// diffLines renders the last change: a header and the first lines of its
// diff (file headers left out), additions green, removals red.
func diffLines(d LastDiff, width int, paint func(string, string) string) []string {
	out := []string{paint(ansiDim, fit(fmt.Sprintf("last change: %s %s %s", d.Agent, d.Tool, d.Stat), width))}
	var body []string
	for _, l := range strings.Split(strings.TrimSuffix(d.Diff, "\n"), "\n") {
		if !strings.HasPrefix(l, "--- ") && !strings.HasPrefix(l, "+++ ") {
			body = append(body, l)
		}
	}
	for i, l := range body {
		if i == diffShownLines {
			out = append(out, paint(ansiDim, fmt.Sprintf("  … %d more lines", len(body)-i)))
			break
		}
		code := ""
		switch {
		case strings.HasPrefix(l, "+"):
			code = ansiGreen
		case strings.HasPrefix(l, "-"):
			code = ansiRed
		case strings.HasPrefix(l, "@@"):
			code = ansiCyan
		}
		out = append(out, paint(code, fit("  "+printable(l), width)))
	}
	return out
}

// printable writes control characters as escapes, so that file content
// cannot drive the terminal.
func printable(s string) string {
	var b strings.Builder
	for _, r := range strings.TrimSuffix(s, "\r") {
		switch {
		case r == '\t':
			b.WriteString("    ")
		case r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0:
			fmt.Fprintf(&b, "\\x%02x", r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
