package watch

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// View draws a Tree on a terminal, redrawing it in place.
type View struct {
	W     io.Writer
	Color bool // ANSI colours (only on a terminal, never with NO_COLOR)
	Width int  // columns; 0 = 100
	drawn int  // lines of the last frame
}

const (
	ansiReset  = "\x1b[0m"
	ansiDim    = "\x1b[2m"
	ansiBold   = "\x1b[1m"
	ansiGreen  = "\x1b[32m"
	ansiRed    = "\x1b[31m"
	ansiYellow = "\x1b[33m"
	ansiCyan   = "\x1b[36m"
)

// Draw replaces the previous frame with the tree as it is now.
func (v *View) Draw(t *Tree, now time.Time) {
	lines := Frame(t, now, v.width(), v.Color)
	var b strings.Builder
	if v.drawn > 0 {
		fmt.Fprintf(&b, "\x1b[%dF\x1b[J", v.drawn) // to the first line of the last frame, clear below
	}
	for _, l := range lines {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	v.drawn = len(lines)
	_, _ = io.WriteString(v.W, b.String())
}

func (v *View) width() int {
	if v.Width <= 0 {
		return 100
	}
	return v.Width
}

// Frame renders the tree as lines at most width columns wide (colour codes
// aside): per run a header, its agents as an indented tree, the nodes seen,
// and the recent events.
func Frame(t *Tree, now time.Time, width int, color bool) []string {
	paint := func(code, s string) string {
		if !color || code == "" {
			return s
		}
		return code + s + ansiReset
	}
	var out []string
	for _, r := range t.Runs() {
		state := "running"
		if r.Finished {
			state = EndWords(r.Status, r.Reason)
		}
		var tokens int64
		var cost float64
		for _, a := range r.Agents {
			tokens += int64(a.TokensIn + a.TokensOut)
			cost += a.CostUSD
		}
		if r.Finished && r.Tokens > 0 {
			tokens, cost = r.Tokens, r.CostUSD
		}
		head := fmt.Sprintf("run %s · %s · %d %s · %s · %s · %s", short(r.ID), state, len(r.Agents),
			Plural(len(r.Agents), "agent", "agents"), Tokens(tokens), Dollars(cost), age(r.Started, now))
		if r.Gaps > 0 {
			head += fmt.Sprintf(" · %d missed", r.Gaps)
		}
		out = append(out, paint(ansiBold, fit(head, width)))
		if r.Task != "" {
			out = append(out, paint(ansiDim, fit("  "+r.Task, width)))
		}
		ids, depth := r.Ordered()
		for _, id := range ids {
			a := r.Agents[id]
			out = append(out, agentLine(a, depth[id], now, width, paint))
		}
	}
	if nodes := t.Nodes(); len(nodes) > 0 {
		var parts []string
		for _, n := range nodes {
			s := fmt.Sprintf("%s (%s ×%d)", n.Name, strings.Join(n.Kinds, ","), n.Slots)
			if n.Left {
				s += " left"
			}
			parts = append(parts, s)
		}
		out = append(out, fit("nodes: "+strings.Join(parts, ", "), width))
	}
	if tail := t.Tail(); len(tail) > 0 {
		out = append(out, paint(ansiDim, "recent:"))
		for _, l := range tail {
			out = append(out, paint(ansiDim, fit("  "+l, width)))
		}
	}
	if d := t.LastDiff(); d.Diff != "" {
		out = append(out, diffLines(d, width, paint)...)
	}
	return out
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

func agentLine(a *Agent, depth int, now time.Time, width int, paint func(string, string) string) string {
	status, code := a.Status, ""
	switch a.Status {
	case StatusFinished:
		code = ansiGreen
	case StatusFailed:
		code = ansiRed
	case StatusCancelled, StatusWaiting:
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
		end = now
	}
	line := fmt.Sprintf("%s%-22s %-8s %-9s r%-2d%s · %s/%s · %s · %s", strings.Repeat("  ", depth+1), a.ID, a.Kind,
		status, a.Round, doing, Tokens(int64(a.TokensIn)), Tokens(int64(a.TokensOut)), Dollars(a.CostUSD), age(a.Started, end))
	if a.Node != "" {
		line += " · " + a.Node
		if a.Attempt > 1 {
			line += fmt.Sprintf(" (attempt %d)", a.Attempt)
		}
	}
	line = fit(line, width)
	return strings.Replace(line, status, paint(code, status), 1)
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

// fit cuts a line to width runes.
func fit(s string, width int) string {
	r := []rune(s)
	if len(r) <= width {
		return s
	}
	return string(r[:width-1]) + "…"
}
