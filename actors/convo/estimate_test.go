package convo

import (
	"strings"
	"testing"

	"github.com/troupe-ai/troupe/llm"
	"github.com/troupe-ai/troupe/messages"
)

func TestMessageChars(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		m    llm.Message
		want int
	}{
		{"user text", llm.Message{Role: llm.RoleUser, Content: "hello"}, 8 + 5},
		{"empty", llm.Message{Role: llm.RoleAssistant}, 8},
		{"tool call counts id, name and args", llm.Message{Role: llm.RoleAssistant,
			ToolCalls: []messages.ToolCall{call("c1", "grep", `{"pattern":"x"}`)}}, 8 + 2 + 4 + 15},
		{"two calls", llm.Message{Role: llm.RoleAssistant, Content: "ok",
			ToolCalls: []messages.ToolCall{call("c1", "grep", `{}`), call("c22", "ls", `{}`)}}, 8 + 2 + (2 + 4 + 2) + (3 + 2 + 2)},
		{"tool result counts runes, not bytes", llm.Message{Role: llm.RoleTool, Content: "héllo wörld",
			ToolCallID: "c1", Name: "grep"}, 8 + 11 + 2 + 4},
		{"reasoning is not sent, not counted", llm.Message{Role: llm.RoleAssistant, Content: "ok",
			Reasoning: strings.Repeat("r", 500)}, 8 + 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := MessageChars(tt.m); got != tt.want {
				t.Errorf("MessageChars = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestEstimate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		cfg        Config
		taskRunes  int
		wantChars  int
		wantTokens int
	}{
		// 8 + 27 = 35 chars / 3.5 = 10 tokens exactly.
		{"default ratio exact", Config{Window: 1000}, 27, 35, 10},
		// 36 / 3.5 = 10.29, rounded up.
		{"rounds up", Config{Window: 1000}, 28, 36, 11},
		// (8 + 32 + 60 fixed) / 4 = 25.
		{"fixed chars count", Config{Window: 1000, CharsPerToken: 4, FixedChars: 60}, 32, 100, 25},
		{"empty task", Config{Window: 1000}, 0, 8, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newConv(t, tt.cfg)
			if err := c.AppendTask(strings.Repeat("a", tt.taskRunes)); err != nil {
				t.Fatal(err)
			}
			if got := c.Chars(); got != tt.wantChars {
				t.Errorf("Chars = %d, want %d", got, tt.wantChars)
			}
			if got := c.Estimate(); got != tt.wantTokens {
				t.Errorf("Estimate = %d, want %d", got, tt.wantTokens)
			}
		})
	}
}

func TestEstimateEmptyAndFill(t *testing.T) {
	t.Parallel()
	c := newConv(t, Config{Window: 200, CharsPerToken: 2})
	if c.Estimate() != 0 || c.Fill() != 0 {
		t.Fatalf("empty conversation: estimate %d fill %v, want 0", c.Estimate(), c.Fill())
	}
	// 8 + 92 = 100 chars / 2 = 50 tokens of 200.
	if err := c.AppendTask(strings.Repeat("a", 92)); err != nil {
		t.Fatal(err)
	}
	if c.Fill() != 0.25 {
		t.Errorf("Fill = %v, want 0.25", c.Fill())
	}
}

func TestCalibrate(t *testing.T) {
	t.Parallel()
	type step struct {
		send         bool // call Messages (send a request) before Calibrate
		promptTokens int
		wantRatio    float64
	}
	tests := []struct {
		name  string
		chars int // size of the messages
		fixed int
		steps []step
	}{
		{"first report is taken as is", 350, 0, []step{{true, 50, 7}}},
		{"later reports move halfway", 350, 0, []step{{true, 50, 7}, {true, 175, 4.5}, {true, 175, 3.25}}},
		{"clamped high", 800, 0, []step{{true, 10, MaxCharsPerToken}}},
		{"clamped low", 100, 0, []step{{true, 100, MinCharsPerToken}}},
		{"zero usage ignored", 350, 0, []step{{true, 0, DefaultCharsPerToken}}},
		{"negative usage ignored", 350, 0, []step{{true, -5, DefaultCharsPerToken}}},
		{"no request sent since: unchanged", 350, 0, []step{{true, 100, 3.5}, {false, 10, 3.5}}},
		{"never sent: unchanged", 350, 0, []step{{false, 10, DefaultCharsPerToken}}},
		// 260 message chars + 90 fixed = 350 sent; 350/70 = 5.
		{"fixed chars are part of what was sent", 260, 90, []step{{true, 70, 5}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newConv(t, Config{Window: 100000, FixedChars: tt.fixed})
			if err := c.AppendTask(strings.Repeat("a", tt.chars-MessageOverheadChars)); err != nil {
				t.Fatal(err)
			}
			for i, s := range tt.steps {
				if s.send {
					c.Messages()
				}
				if got := c.Calibrate(s.promptTokens); got != s.wantRatio {
					t.Fatalf("step %d: Calibrate(%d) = %v, want %v", i, s.promptTokens, got, s.wantRatio)
				}
				if c.CharsPerToken() != s.wantRatio {
					t.Fatalf("step %d: CharsPerToken = %v, want %v", i, c.CharsPerToken(), s.wantRatio)
				}
			}
		})
	}
}

func TestCalibrateChangesEstimate(t *testing.T) {
	t.Parallel()
	c := newConv(t, Config{Window: 1000})
	if err := c.AppendTask(strings.Repeat("a", 392)); err != nil { // 400 chars
		t.Fatal(err)
	}
	if c.Estimate() != 115 { // 400/3.5 = 114.3
		t.Fatalf("Estimate before = %d, want 115", c.Estimate())
	}
	c.Messages()
	c.Calibrate(200) // 2 chars per token
	if c.Estimate() != 200 {
		t.Errorf("Estimate after calibrating to 2 chars/token = %d, want 200", c.Estimate())
	}
}
