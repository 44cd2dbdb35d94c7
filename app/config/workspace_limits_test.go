package config

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// The limits a hostile model or provider meets (model.rate_limit,
// model.max_response_bytes, agent.max_tool_calls_per_round,
// model.max_retries and the other limits whose 0 means a default) may
// only be lowered by a workspace's own file, compared with the value in
// effect under it: a raise, a 0 that puts a higher default in effect, or
// a model entry that drops the limit its role's entry set, is refused
// naming the key, the file and line, and where it may be set instead.
func TestWorkspaceConfigMayOnlyLowerLimits(t *testing.T) {
	t.Parallel()
	home := "model:\n  default: m1\n  rate_limit: {default: {rpm: 10, tpm: 1000}, m2: {rpm: 5}}\n  max_retries: 2\n" +
		"agent:\n  max_tool_calls_per_round: 10\n  max_rounds: 20\n"
	for text, want := range map[string]string{
		"model:\n  rate_limit: {default: {rpm: 11}}\n":            "line 2: model.rate_limit.default.rpm",
		"model:\n  rate_limit: {default: {rpm: 0}}\n":             "line 2: model.rate_limit.default.rpm",
		"model:\n  rate_limit: {m1: {tpm: 500}}\n":                "line 2: model.rate_limit.m1.tpm", // drops the role's rpm 10
		"model:\n  rate_limit:\n    m2:\n      rpm: 6\n":          "line 4: model.rate_limit.m2.rpm",
		"model:\n  max_response_bytes: {text: 8388608}\n":         "line 2: model.max_response_bytes.text",
		"model:\n  max_response_bytes:\n    tool_call: 2097152\n": "line 3: model.max_response_bytes.tool_call",
		"model:\n  max_retries: 3\n":                              "line 2: model.max_retries",
		"model:\n  max_attempts: 4\n":                             "line 2: model.max_attempts",
		"agent:\n  max_tool_calls_per_round: 11\n":                "line 2: agent.max_tool_calls_per_round",
		"agent:\n  max_tool_calls_per_round: 0\n":                 "line 2: agent.max_tool_calls_per_round", // 0 is the default, 64
		"agent:\n  max_rounds: 0\n":                               "line 2: agent.max_rounds",               // 0 is the default, 50
		"tools:\n  timeout: 0s\n":                                 "line 2: tools.timeout",
	} {
		ws, h := writeWorkspace(t, text, home)
		_, err := Load(Sources{Home: h, Workspace: ws, Kinds: testKinds})
		file := filepath.Join(ws, ".troupe", "config.yaml")
		if !errors.Is(err, ErrWorkspaceKey) || !strings.Contains(err.Error(), file+" "+want+": ") ||
			!strings.Contains(err.Error(), "may only lower") || !strings.Contains(err.Error(), "~/.config/troupe/config.yaml") {
			t.Errorf("%q: %v\nwant a refusal at %s", text, err, want)
		}
	}
	// Without a user limit, the defaults are what a file may not raise.
	ws, h := writeWorkspace(t, "agent:\n  max_tool_calls_per_round: 65\n", "")
	if _, err := Load(Sources{Home: h, Workspace: ws, Kinds: testKinds}); !errors.Is(err, ErrWorkspaceKey) {
		t.Errorf("65 tool calls over the default 64: %v", err)
	}
}

// Lowering each of them still works, and is what runs.
func TestWorkspaceConfigLowersLimits(t *testing.T) {
	t.Parallel()
	home := "model:\n  default: m1\n  rate_limit: {default: {rpm: 10, tpm: 1000}}\n  max_retries: 2\nagent:\n  max_rounds: 20\n"
	text := "model:\n  rate_limit: {default: {rpm: 5, tpm: 1000}, m1: {rpm: 4, tpm: 900}, m3: {rpm: 1}}\n" +
		"  max_response_bytes: {text: 2097152, tool_call: 524288}\n  max_retries: 1\n" +
		"agent:\n  max_tool_calls_per_round: 8\n  max_rounds: 5\ntools:\n  web: {max_redirects: 0}\n"
	ws, h := writeWorkspace(t, text, home)
	c, err := Load(Sources{Home: h, Workspace: ws, Kinds: testKinds})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	rl := c.Model.RateLimits()
	if rl["m1"] != (RateLimit{RPM: 4, TPM: 900}) || rl["m3"].RPM != 1 || c.Model.MaxResponseBytes != (ResponseCaps{Text: 2 << 20, ToolCall: 512 << 10}) ||
		c.Model.Attempts() != 2 || c.Agent.ToolCallLimit() != 8 || c.Agent.RoundLimit() != 5 || c.Tools.Web.MaxRedirects != 0 {
		t.Errorf("the lowered limits did not apply: %+v %+v %+v", c.Model, c.Agent, rl)
	}
}

// config print's column says so.
func TestWorkspaceMayLowerLimits(t *testing.T) {
	t.Parallel()
	for _, key := range []string{"model.rate_limit", "model.rate_limit.default.rpm", "model.rate_limit.m1.tpm",
		"model.max_response_bytes.text", "model.max_response_bytes.tool_call", "agent.max_tool_calls_per_round", "model.max_retries"} {
		if got := WorkspaceMay(key); got != "lower only" {
			t.Errorf("%s: %q, want lower only", key, got)
		}
	}
}
