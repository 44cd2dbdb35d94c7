package config

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// A workspace's own config file (<workspace>/.troupe/config.yaml, and so
// any such file a cloned repository ships) is written by the very agents
// it configures: it is input, not authority. It may set only the keys
// below, and only in the direction that cannot widen what an agent
// reaches: prompts and models among those the user configured, tool
// tiers, limits that only lower, a sandbox that only tightens. Endpoints
// (model.base_url, MCP servers, nats, telemetry, web search), the
// environment (${VAR}, tools.shell_env), approvals that loosen and
// network reach come only from the user's own config
// (~/.config/troupe/config.yaml), --config or flags.

// wsKind is what a rule lets a workspace file do with a key.
type wsKind int

const (
	wsAny       wsKind = iota + 1 // any value
	wsLower                       // a number or duration no higher than before
	wsLowerZero                   // the same, where 0 is "no limit"
	wsOnlyFalse                   // false, or the value before
	wsOnlyTrue                    // true, or the value before
	wsSubset                      // a list of items the list before holds
	wsSuperset                    // a list holding every item before
	wsTighten                     // a value no earlier in order than before
	wsModel                       // a model the user configured
	wsKindTools                   // a subset of the kind's tools before
	wsRounds                      // rounds whose models the user configured
	wsRateLimit                   // provider limits no model's limit in effect rises by
)

// wsRule is one key (dotted; "*" stands for one mapping key) a workspace
// file may set, and how.
type wsRule struct {
	pattern string
	kind    wsKind
	order   []string                                  // wsTighten: from the widest
	dflt    func(before Config, path []string) string // the value before when the key was unset
	// eff, when set, is the value in effect, compared before and after
	// the file: a 0 that means a default, or another key that wins.
	eff func(c Config) string
	// zeroOK: a 0 is truly less (none); for the other wsLower keys a 0
	// means a default or no limit, so it is refused as a raise.
	zeroOK bool
}

// wsRules are the keys a workspace file may set.
var wsRules = []wsRule{
	{pattern: "agent.max_rounds", kind: wsLower, eff: agentInt(Agent.RoundLimit)},
	{pattern: "agent.planning_rounds", kind: wsLower, eff: agentInt(Agent.PlanningLimit)},
	{pattern: "agent.plan_first.*", kind: wsAny},
	{pattern: "agent.doom_repeats", kind: wsLower, eff: agentInt(Agent.DoomLimit)},
	{pattern: "agent.max_tool_calls_per_round", kind: wsLower, eff: agentInt(Agent.ToolCallLimit)},
	{pattern: "agent.approval.*", kind: wsTighten, order: []string{PolicyAuto, PolicyAsk, PolicyDeny}, dflt: constant(PolicyAuto)},
	{pattern: "agent.approval_timeout", kind: wsLower},
	{pattern: "agent.keep_checkpoints", kind: wsAny},
	{pattern: "agent.protected_tools", kind: wsAny},
	{pattern: "agent.recent_messages", kind: wsAny},
	{pattern: "agent.top_up", kind: wsLowerZero},
	{pattern: "agent.estimates.*", kind: wsLower, dflt: func(c Config, p []string) string {
		return strconv.FormatInt(c.Agent.EstimateFor(p[len(p)-1]), 10)
	}},
	{pattern: "agent.result_cap", kind: wsLower, eff: agentInt(Agent.ResultLimit)},
	{pattern: "agent.max_depth", kind: wsLower, eff: agentInt(Agent.DepthLimit)},
	{pattern: "agent.fanout_threshold", kind: wsLower, eff: agentInt(Agent.FanoutLimit)},
	{pattern: "agent.fanout_policy", kind: wsTighten, order: []string{PolicyAuto, PolicyAsk, PolicyDeny}},
	{pattern: "agent.on_parent_finish", kind: wsAny},
	{pattern: "agent.isolation", kind: wsTighten, order: []string{"shared", "auto", "worktree"}},
	{pattern: "agent.changes", kind: wsTighten, order: []string{"apply", "branch", "patch"}},
	{pattern: "agent.max_change_bytes", kind: wsLower},
	{pattern: "model.default", kind: wsModel},
	{pattern: "model.cheap", kind: wsModel},
	{pattern: "model.stream", kind: wsAny},
	{pattern: "model.max_attempts", kind: wsLower, eff: attempts},
	{pattern: "model.max_retries", kind: wsLower, eff: attempts},
	{pattern: "model.max_response_bytes.text", kind: wsLower},
	{pattern: "model.max_response_bytes.tool_call", kind: wsLower},
	{pattern: "model.rate_limit.*.rpm", kind: wsRateLimit},
	{pattern: "model.rate_limit.*.tpm", kind: wsRateLimit},
	{pattern: "model.request_timeout", kind: wsLower},
	{pattern: "model.stream_idle_timeout", kind: wsLower},
	{pattern: "model.initial_backoff", kind: wsAny},
	{pattern: "model.max_backoff", kind: wsAny},
	{pattern: "model.max_retry_after", kind: wsLower},
	{pattern: "model.routing.strategy", kind: wsAny},
	{pattern: "model.routing.per_kind.*", kind: wsModel},
	{pattern: "model.routing.cheap_until", kind: wsAny},
	{pattern: "model.routing.rounds", kind: wsRounds},
	{pattern: "kinds.*.name", kind: wsAny},
	{pattern: "kinds.*.description", kind: wsAny},
	{pattern: "kinds.*.prompt", kind: wsAny},
	{pattern: "kinds.*.model", kind: wsModel},
	{pattern: "kinds.*.model_role", kind: wsAny},
	{pattern: "kinds.*.plan_first", kind: wsAny},
	{pattern: "kinds.*.tools", kind: wsKindTools},
	{pattern: "kinds.*.may_delegate", kind: wsOnlyFalse},
	{pattern: "kinds.*.read_only", kind: wsOnlyFalse},
	{pattern: "tools.timeout", kind: wsLower},
	{pattern: "tools.cache_max_age", kind: wsAny},
	{pattern: "tools.spill_max_age", kind: wsLower},
	{pattern: "tools.shell_blocklist", kind: wsSuperset},
	{pattern: "tools.definition_budget", kind: wsAny},
	{pattern: "tools.tiers.*", kind: wsAny},
	{pattern: "tools.web.fetch", kind: wsOnlyFalse},
	{pattern: "tools.web.explore", kind: wsOnlyFalse},
	{pattern: "tools.web.allow_private", kind: wsOnlyFalse},
	{pattern: "tools.web.allow_hosts", kind: wsSubset},
	{pattern: "tools.web.timeout", kind: wsLower},
	{pattern: "tools.web.max_bytes", kind: wsLower},
	{pattern: "tools.web.max_redirects", kind: wsLower, zeroOK: true},
	{pattern: "tools.web.cache_ttl", kind: wsAny},
	{pattern: "budget.tokens", kind: wsLower},
	{pattern: "budget.usd", kind: wsLowerZero},
	{pattern: "budget.tool_calls", kind: wsLowerZero},
	{pattern: "budget.wall_time", kind: wsLowerZero},
	{pattern: "budget.max_concurrent", kind: wsLower},
	{pattern: "budget.per_kind.*", kind: wsLowerZero, dflt: constant("0")},
	{pattern: "budget.acquire_timeout", kind: wsLower},
	{pattern: "events.deltas", kind: wsAny},
	{pattern: "mcp.max_worktree_servers", kind: wsLower},
	{pattern: "mcp.max_runs", kind: wsLower},
	{pattern: "mcp.keep_runs", kind: wsLower},
	{pattern: "mcp.session_timeout", kind: wsLower},
	{pattern: "sandbox.mode", kind: wsTighten, order: []string{SandboxOff, SandboxOn}},
	{pattern: "sandbox.required", kind: wsOnlyTrue},
	{pattern: "sandbox.network.*", kind: wsTighten, order: []string{"allow", "loopback", "deny"}, dflt: func(c Config, p []string) string {
		return c.Sandbox.NetworkFor(p[len(p)-1])
	}},
	{pattern: "sandbox.writable", kind: wsSubset},
	{pattern: "sandbox.deny_read", kind: wsSuperset},
	{pattern: "sandbox.commit", kind: wsSubset},
}

// wsRefusals say why a family of keys is the user's alone.
var wsRefusals = []struct{ prefix, why string }{
	{"model.base_url", "it says where requests, and the API key with them, are sent"},
	{"model.api_key", "it is a secret"},
	{"model.headers", "they go to the model endpoint with every request, credentials included"},
	{"model.pricing", "prices decide what the dollar budget counts"},
	{"model.context_windows", "windows decide how much a request may carry"},
	{"nats", "it names the bus, its credentials and its store"},
	{"telemetry", "it names where traces are sent"},
	{"mcp", "MCP servers are programs troupe starts and endpoints it calls, with the environment it passes them"},
	{"placement", "it sends agents, and snapshots of the workspace, to other machines"},
	{"node", "it configures the worker nodes"},
	{"tools.shell_env", "it passes this process's variables to commands"},
	{"tools.web.search", "it names a search endpoint and its key"},
}

func constant(v string) func(Config, []string) string {
	return func(Config, []string) string { return v }
}

// wsRuleFor is the rule of the key at path, nil when a workspace file
// may not set it.
func wsRuleFor(path []string) *wsRule {
	for i := range wsRules {
		if matchPath(strings.Split(wsRules[i].pattern, "."), path) {
			return &wsRules[i]
		}
	}
	return nil
}

// wsContainer reports whether path is a mapping some rule's key lies
// beneath (the walk goes into it).
func wsContainer(path []string) bool {
	for _, r := range wsRules {
		pat := strings.Split(r.pattern, ".")
		if len(pat) > len(path) && matchPath(pat[:len(path)], path) {
			return true
		}
	}
	return false
}

// wsRuleBeneath is the first rule whose key lies beneath the mapping at
// path (model.rate_limit's, for model.rate_limit), nil when none does.
func wsRuleBeneath(path []string) *wsRule {
	for i := range wsRules {
		pat := strings.Split(wsRules[i].pattern, ".")
		if len(pat) > len(path) && matchPath(pat[:len(path)], path) {
			return &wsRules[i]
		}
	}
	return nil
}

func matchPath(pattern, path []string) bool {
	if len(pattern) != len(path) {
		return false
	}
	for i, p := range pattern {
		if p != "*" && p != path[i] {
			return false
		}
	}
	return true
}

// wsWhy says why the key at path is the user's alone.
func wsWhy(path []string) string {
	key := strings.Join(path, ".")
	for _, r := range wsRefusals {
		if key == r.prefix || strings.HasPrefix(key, r.prefix+".") {
			return r.why
		}
	}
	return "only settings that cannot widen what agents reach may be set there"
}

// WorkspaceMay says what a workspace's own config file may do with the
// setting key (dotted, as Settings lists it): "no", "yes", "lower only",
// "tighten only", "a configured model", "a subset", "add only".
func WorkspaceMay(key string) string {
	path := strings.Split(key, ".")
	r := wsRuleFor(path)
	if r == nil && wsContainer(path) { // an empty mapping: what its keys may do
		if r = wsRuleFor(append(path, "*")); r == nil {
			if r = wsRuleBeneath(path); r == nil {
				return "yes"
			}
		}
	}
	if r == nil {
		// A list's items: key[3].
		if i := strings.IndexByte(key, '['); i > 0 {
			if r = wsRuleFor(strings.Split(key[:i], ".")); r == nil {
				return "no"
			}
		} else {
			return "no"
		}
	}
	switch r.kind {
	case wsLower, wsLowerZero, wsRateLimit:
		return "lower only"
	case wsOnlyFalse, wsOnlyTrue, wsTighten, wsSuperset:
		return "tighten only"
	case wsSubset, wsKindTools:
		return "narrow only"
	case wsModel, wsRounds:
		return "a configured model"
	}
	return "yes"
}

// number reads a scalar as a number or a duration (yaml writes
// durations as 1m30s).
func number(v string) (float64, bool) {
	if d, err := time.ParseDuration(v); err == nil {
		return float64(d), true
	}
	f, err := strconv.ParseFloat(v, 64)
	return f, err == nil
}

// items are a sequence node's scalar values.
func items(n *yaml.Node) []string {
	if n == nil || n.Kind != yaml.SequenceNode {
		return nil
	}
	var out []string
	for _, c := range n.Content {
		out = append(out, c.Value)
	}
	return out
}

func subset(a, b []string) bool {
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return true
}
