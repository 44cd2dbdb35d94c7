package convo

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/troupe-ai/troupe/llm"
)

// SummaryPrompt is the system prompt of the side request that summarizes
// the older part of a conversation.
const SummaryPrompt = `You compress the history of an AI agent that is part-way through a task, so that it can continue with less context. You are given the task and a transcript of the older part of its conversation. Write a summary that the agent will read in place of that transcript.

Keep, in this order:
1. Tool calls made: each tool with its key arguments (paths, patterns, commands) and what it found or changed, in one line each. Merge repeated calls.
2. Facts found: file paths, line numbers, function, type and variable names, values, error messages, test results. Quote exact identifiers.
3. Decisions taken and the reasons for them.
4. What remains to do: the next steps, as a short list.

Leave out whole file contents (keep only the lines that matter, with line numbers), superseded attempts, and anything already covered by a later step. Do not invent anything that is not in the transcript. Write plain text, no preamble.`

// Caps on what the transcript shows of one message, in runes.
const (
	transcriptToolMax  = 2000
	transcriptOtherMax = 6000
)

// transcript renders entries [start, end) as text for the summary request,
// with the task first. Long messages keep their head and tail; if the whole
// would not fit in the model's window next to the summary, messages from the
// middle of the span are left out and counted.
func (c *Conversation) transcript(start, end int) string {
	budget := int(float64(c.cfg.Window-c.cfg.SummaryMaxTokens)*c.ratio*0.9) - len(SummaryPrompt)
	var b strings.Builder
	fmt.Fprintf(&b, "Task:\n%s\n\nTranscript of the older part of the conversation:\n", headTail(c.Task(), transcriptOtherMax))
	budget -= b.Len()
	parts := make([]string, 0, end-start)
	total := 0
	for _, e := range c.entries[start:end] {
		if e.Pinned {
			continue // stays in the conversation verbatim
		}
		p := renderEntry(e)
		parts = append(parts, p)
		total += len(p)
	}
	if total > budget && budget > 0 {
		parts = dropMiddle(parts, budget)
	}
	for _, p := range parts {
		b.WriteString(p)
	}
	return b.String()
}

// renderEntry shows one message as transcript text.
func renderEntry(e Entry) string {
	m := e.Message
	var b strings.Builder
	switch m.Role {
	case llm.RoleTool:
		fmt.Fprintf(&b, "\n[round %d] result of %s(%s):\n%s\n", e.Round, e.Tool, e.Args, headTail(m.Content, transcriptToolMax))
	case llm.RoleAssistant:
		fmt.Fprintf(&b, "\n[round %d] assistant:\n", e.Round)
		if m.Content != "" {
			b.WriteString(headTail(m.Content, transcriptOtherMax) + "\n")
		}
		for _, tc := range m.ToolCalls {
			fmt.Fprintf(&b, "-> calls %s %s\n", tc.Name, headTail(string(tc.Args), 500))
		}
	default:
		fmt.Fprintf(&b, "\n[round %d] %s:\n%s\n", e.Round, m.Role, headTail(m.Content, transcriptOtherMax))
	}
	return b.String()
}

// dropMiddle keeps the first third and last two thirds of budget (in bytes)
// of parts, whole parts only, and puts a note where it left parts out.
func dropMiddle(parts []string, budget int) []string {
	head, used := 0, 0
	for head < len(parts) && used+len(parts[head]) <= budget/3 {
		used += len(parts[head])
		head++
	}
	tail := len(parts)
	for tail > head && used+len(parts[tail-1]) <= budget {
		used += len(parts[tail-1])
		tail--
	}
	if tail == head {
		return parts
	}
	out := append([]string{}, parts[:head]...)
	out = append(out, fmt.Sprintf("\n[... %d messages left out here to fit the summary request ...]\n", tail-head))
	return append(out, parts[tail:]...)
}

// headTail shortens s to about max runes, keeping its start and end and
// saying how much was cut.
func headTail(s string, max int) string {
	n := utf8.RuneCountInString(s)
	if n <= max {
		return s
	}
	r := []rune(s)
	h := max * 2 / 3
	t := max - h
	return string(r[:h]) + fmt.Sprintf("\n[... %d chars cut ...]\n", n-h-t) + string(r[n-t:])
}
