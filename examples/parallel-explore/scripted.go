package main

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/troupe-ai/troupe/llm/llmtest"
)

// scriptedModel starts the scripted OpenAI-compatible server with a script
// that behaves like a careful team: the lead fans the question out to n
// explore agents, each greps the workspace for one keyword of the question
// and reports the first matches as path:line, and the lead merges their
// reports. The tools run for real; only the model's words are canned.
func scriptedModel(n int) (url string, stop func()) {
	lead := llmtest.AgentScript{Match: llmtest.Matcher{Kind: "root"}, Turns: []llmtest.Turn{
		{Dynamic: func(req llmtest.Recorded) llmtest.Turn {
			words := keywords(question(req.Task))
			var calls []llmtest.ToolCall
			for i := 0; i < n; i++ {
				w := words[i%len(words)]
				args, _ := json.Marshal(map[string]string{"type": "explore",
					"task": fmt.Sprintf("Find where %q appears in the code; keyword: %s", question(req.Task), w)})
				calls = append(calls, llmtest.ToolCall{Name: "delegate", Args: args})
			}
			return llmtest.Turn{ToolCalls: calls}
		}},
		{Dynamic: func(req llmtest.Recorded) llmtest.Turn {
			var refs []string
			for _, m := range req.Messages {
				if m.Role == "tool" {
					refs = append(refs, pathLine.FindAllString(m.Content, -1)...)
				}
			}
			if len(refs) == 0 {
				return llmtest.Turn{Text: "The explore agents found nothing that matches the question."}
			}
			return llmtest.Turn{Text: fmt.Sprintf("The explore agents point to %d places, starting with %s.", len(refs), refs[0])}
		}},
	}}
	explore := llmtest.AgentScript{Match: llmtest.Matcher{Kind: "explore"}, Repeat: true, Turns: []llmtest.Turn{
		{Dynamic: func(req llmtest.Recorded) llmtest.Turn {
			w := req.Task[strings.LastIndex(req.Task, "keyword: ")+len("keyword: "):]
			args, _ := json.Marshal(map[string]any{"pattern": regexp.QuoteMeta(strings.ToLower(w)), "mode": "content", "limit": 3})
			return llmtest.Turn{ToolCalls: []llmtest.ToolCall{{Name: "grep", Args: args}}}
		}},
		{Dynamic: func(req llmtest.Recorded) llmtest.Turn {
			last := req.Messages[len(req.Messages)-1].Content
			var out []string
			for _, line := range strings.Split(last, "\n") {
				if m := grepLine.FindStringSubmatch(line); m != nil {
					out = append(out, fmt.Sprintf("%s:%s %s", m[1], m[2], strings.TrimSpace(m[3])))
				}
			}
			if len(out) == 0 {
				return llmtest.Turn{Text: "No findings."}
			}
			return llmtest.Turn{Text: strings.Join(out, "\n")}
		}},
	}}
	srv := llmtest.New(llmtest.Script{Agents: []llmtest.AgentScript{lead, explore}})
	return srv.URL(), srv.Close
}

var (
	pathLine = regexp.MustCompile(`[A-Za-z0-9_.\-/]+\.[A-Za-z0-9]+:\d+`)
	grepLine = regexp.MustCompile(`^(.+?):(\d+): (.*)$`)
	wordRE   = regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_]{3,}`)
)

// question is the user's question inside the lead's task.
func question(task string) string {
	if i := strings.LastIndex(task, "findings: "); i >= 0 {
		return task[i+len("findings: "):]
	}
	return task
}

// keywords are the question's words worth searching for, longest first.
func keywords(q string) []string {
	stop := map[string]bool{"where": true, "what": true, "which": true, "does": true, "there": true, "with": true,
		"from": true, "that": true, "this": true, "when": true, "code": true, "find": true}
	var out []string
	seen := map[string]bool{}
	for _, w := range wordRE.FindAllString(q, -1) {
		lw := strings.ToLower(w)
		if !stop[lw] && !seen[lw] {
			seen[lw] = true
			out = append(out, w)
		}
	}
	if len(out) == 0 {
		out = []string{"main"}
	}
	for i := 1; i < len(out); i++ { // longest first, stable
		for j := i; j > 0 && len(out[j]) > len(out[j-1]); j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}
