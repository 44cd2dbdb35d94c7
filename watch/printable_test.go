package watch

import (
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/troupe-ai/troupe/messages"
)

func TestPrintable(t *testing.T) {
	cases := map[string]string{
		"plain text":                 "plain text",
		"héllo 日本語 🎉":                "héllo 日本語 🎉",
		"a\x1b[2Jb":                  `a\x1b[2Jb`,
		"title\x1b]0;pwned\x07":      `title\x1b]0;pwned\x07`,
		"csi\u009b31m":               `csi\u009b31m`,
		"rlo\u202etxt.exe":           `rlo\u202etxt.exe`,
		"line\nbreak\r\ttab\x7f":     `line\x0abreak\x0d\x09tab\x7f`,
		"bad \xff\xfe utf8":          `bad \xff\xfe utf8`,
		"cut \xe6\x97 rune":          `cut \xe6\x97 rune`,
		"already escaped \\x1b text": "already escaped \\x1b text",
	}
	for in, want := range cases {
		got := Printable(in)
		if got != want {
			t.Errorf("Printable(%q) = %q, want %q", in, got, want)
		}
		if !utf8.ValidString(got) || strings.ContainsFunc(got, func(r rune) bool { return r < 0x20 || (r >= 0x7f && r < 0xa0) }) {
			t.Errorf("Printable(%q) = %q still has control characters", in, got)
		}
		if Printable(got) != got {
			t.Errorf("Printable is not idempotent on %q", got)
		}
	}
}

// ourEscapes are the only escape sequences a frame may hold: our colours.
var ourEscapes = regexp.MustCompile(`\x1b\[(0|1|2|31|32|33|36)m`)

// Hostile text in events (task, agent and node IDs, errors, tool names,
// findings) is drawn escaped: a frame holds no escape sequence but its
// own colours, and no other control character.
func TestFrameEscapesHostileText(t *testing.T) {
	evil := "\x1b]0;owned\x07\x1b[2J\u009b31m\u202e\r"
	tr := NewTree(10)
	at := time.Now()
	add := func(run, agent, parent, kind, typ string, seq uint64, data any) {
		ev, err := messages.NewEvent(run, agent, typ, seq, data)
		if err != nil {
			t.Fatal(err)
		}
		ev.Parent, ev.Kind, ev.Time = parent, kind, at
		tr.Apply(ev)
	}
	add("r1", "run", "", "run", messages.EvtRunStarted, 1, messages.RunStarted{Task: "task " + evil})
	add("r1", "root", "", "root", messages.EvtAgentStarted, 1, messages.AgentStarted{Task: evil})
	add("r1", "root", "", "root", messages.EvtAgentSpawned, 2, messages.AgentSpawned{Child: "kid" + evil, Kind: "explore" + evil, Task: evil})
	add("r1", "root", "", "root", messages.EvtToolStarted, 3, messages.ToolStarted{Tool: "grep" + evil})
	add("r1", "root", "", "root", messages.EvtLLMResponse, 4, messages.LLMResponse{Round: 1, ToolCalls: []string{"x" + evil}})
	add("r1", "kid"+evil, "root", "explore", messages.EvtAgentFailed, 1, messages.AgentEnded{Status: "failed", Error: evil})
	add("nodes", "n1", "", "node", messages.EvtNodeJoined, 1, messages.NodeJoined{Node: "n1", Name: "box" + evil, Kinds: []string{"explore" + evil}})
	for _, color := range []bool{false, true} {
		lines := Frame(tr, at, Layout{Width: 200, Color: color})
		text := strings.Join(lines, "\n")
		rest := ourEscapes.ReplaceAllString(text, "")
		if strings.ContainsFunc(rest, func(r rune) bool { return (r < 0x20 && r != '\n') || (r >= 0x7f && r < 0xa0) || r == 0x202e }) {
			t.Errorf("colour %v: a control character reached the frame:\n%q", color, text)
		}
		if !strings.Contains(text, `\x1b]0;owned\x07`) {
			t.Errorf("colour %v: the hostile text is not shown escaped:\n%s", color, text)
		}
	}
	ev, _ := messages.NewEvent("r1", "root"+evil, messages.EvtAgentFinished, 1, messages.AgentEnded{Status: "completed", Error: evil})
	v, _ := ev.Decode()
	if d := Describe(ev, v); strings.ContainsRune(d, 0x1b) || !strings.Contains(d, `\x1b`) {
		t.Errorf("Describe: %q", d)
	}
}

func TestFitCountsColumns(t *testing.T) {
	for _, s := range []string{"日本語のテキストです", "plain ascii text here", "mixed 日本 text 🎉🎉 end", "e\u0301\u0301 combining"} {
		for w := 1; w <= 30; w++ {
			got := fit(s, w)
			if Width(got) > w || !utf8.ValidString(got) {
				t.Errorf("fit(%q, %d) = %q, %d columns", s, w, got, Width(got))
			}
			if Width(s) <= w && got != s {
				t.Errorf("fit(%q, %d) cut a line that fits: %q", s, w, got)
			}
		}
	}
}

// A run ID shortened for a line keeps its characters whole.
func TestShortRunIDKeepsCharactersWhole(t *testing.T) {
	for _, id := range []string{"run-日本語", "ab日本", "abcdefgh-ij", "r1"} {
		got := short(id)
		if len(got) > 8 || !utf8.ValidString(got) || !strings.HasPrefix(id, got) || len(got) < min(len(id), 6) {
			t.Errorf("short(%q) = %q", id, got)
		}
	}
}
