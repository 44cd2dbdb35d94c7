package convo

import (
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/troupe-ai/troupe/llm"
)

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		cfg  Config
		want string // "" = valid
	}{
		{Config{Window: 8000}, ""},
		{Config{Window: 1, AdviseAt: 0.5, WarnAt: 0.7, EvictAt: 0.9, CompactTarget: 0.4, MinAge: 1, RecentMessages: 1}, ""},
		{Config{}, "window = 0, want the model's context window"},
		{Config{Window: -5}, "window = -5"},
		{Config{Window: 10, CharsPerToken: 10}, "chars_per_token = 10, want 1.5..8"},
		{Config{Window: 10, CharsPerToken: math.NaN()}, "chars_per_token"},
		{Config{Window: 10, FixedChars: -1}, "fixed_chars = -1"},
		{Config{Window: 10, MinAge: -1}, "min_age = -1"},
		{Config{Window: 10, RecentMessages: -3}, "recent_messages = -3"},
		{Config{Window: 10, SummaryMaxTokens: -3}, "summary_max_tokens = -3"},
		{Config{Window: 10, AdviseAt: 1.5}, "advise_at = 1.5, want a fraction in (0, 1]"},
		{Config{Window: 10, EvictAt: -0.2}, "evict_at = -0.2"},
		{Config{Window: 10, AdviseAt: 0.9}, "advise_at (0.9) must be below warn_at (0.8)"},
		{Config{Window: 10, CompactTarget: 0.85}, "compact_target (0.85) must be below evict_at (0.8)"},
	}
	for _, tt := range tests {
		err := tt.cfg.Validate()
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%+v: %v, want valid", tt.cfg, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%+v: err = %v, want it to contain %q", tt.cfg, err, tt.want)
		}
		if _, nerr := New(tt.cfg); (nerr == nil) != (err == nil) {
			t.Errorf("%+v: New and Validate disagree: %v vs %v", tt.cfg, nerr, err)
		}
	}
}

func TestSetConfig(t *testing.T) {
	t.Parallel()
	c := newConv(t, Config{Window: 1000, Protected: []string{"todo"}})
	before := c.Config()
	if err := c.SetConfig(Config{Window: 0}); err == nil {
		t.Fatal("SetConfig accepted window 0")
	}
	if !reflect.DeepEqual(c.Config(), before) {
		t.Fatal("a refused SetConfig changed the config")
	}
	// An uncalibrated ratio follows the config; a calibrated one is kept.
	if err := c.SetConfig(Config{Window: 2000, CharsPerToken: 5}); err != nil {
		t.Fatal(err)
	}
	if c.CharsPerToken() != 5 || c.Config().Window != 2000 {
		t.Fatalf("after SetConfig: ratio %v window %d", c.CharsPerToken(), c.Config().Window)
	}
	if err := c.AppendTask(strings.Repeat("a", 292)); err != nil { // 300 chars
		t.Fatal(err)
	}
	c.Messages()
	c.Calibrate(100) // 3 chars per token
	if err := c.SetConfig(Config{Window: 2000, CharsPerToken: 6}); err != nil {
		t.Fatal(err)
	}
	if c.CharsPerToken() != 3 {
		t.Errorf("calibrated ratio replaced by the config's: %v", c.CharsPerToken())
	}
	// Config returns a copy: changing it changes nothing.
	cfg := c.Config()
	cfg.Protected = append(cfg.Protected, "x")
	if len(c.Config().Protected) != 0 {
		t.Error("Config shares its Protected slice")
	}
}

func TestAppendPinnedRoles(t *testing.T) {
	t.Parallel()
	c := newConv(t, Config{Window: 1000})
	for _, role := range []llm.Role{llm.RoleAssistant, llm.RoleTool, "other"} {
		if err := c.AppendPinned(llm.Message{Role: role, Content: "x"}); err == nil || !strings.Contains(err.Error(), "want system or user") {
			t.Errorf("AppendPinned(%s): err = %v", role, err)
		}
	}
	if c.Len() != 0 {
		t.Fatal("refused pinned messages were appended")
	}
	if err := c.AppendSystem("s"); err != nil {
		t.Fatal(err)
	}
	if err := c.AppendTask("the task"); err != nil {
		t.Fatal(err)
	}
	if err := c.AppendPinned(llm.Message{Role: llm.RoleUser, Content: "more context"}); err != nil {
		t.Fatal(err)
	}
	if c.Task() != "the task" {
		t.Errorf("Task = %q, want the first pinned user message", c.Task())
	}
}
