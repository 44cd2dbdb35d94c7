package config

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"time"
)

// settingError is a value Validate refuses: the setting's dotted key and
// what is wrong with it, which says what it accepts, in words. near is
// another key to point at when key itself was not set by a file, the
// environment or a flag (the provider that wants an API key, say).
type settingError struct {
	key, near, problem string
}

func (e *settingError) Error() string { return e.key + ": " + e.problem }

func bad(key, format string, args ...any) error {
	return &settingError{key: key, problem: fmt.Sprintf(format, args...)}
}

// Validate reports the first problem, naming the setting, where it was
// set (the file and line, the environment variable or the flag; nothing
// for a default) and the values it accepts:
//
//	/home/me/.troupe/config.yaml line 12: agent.fanout_policy: must be auto, ask or deny, got "sometimes"
func (c Config) Validate() error {
	err := c.validate()
	var se *settingError
	if !errors.As(err, &se) {
		return err
	}
	at := c.originOf(se.key)
	if at == "" && se.near != "" {
		at = c.originOf(se.near)
	}
	if at == "" {
		return err
	}
	return fmt.Errorf("%s: %w", at, err)
}

func (c Config) validate() error {
	if err := c.validateModel(); err != nil {
		return err
	}
	if err := c.validateAgent(); err != nil {
		return err
	}
	switch b := c.Budget; {
	case b.Tokens <= 0:
		return bad("budget.tokens", "must be a positive number of tokens, got %d", b.Tokens)
	case b.USD < 0:
		return bad("budget.usd", "must be an amount in US dollars, or 0 for no dollar limit; got %v", b.USD)
	}
	switch t := c.Tools; {
	case t.Timeout < 0:
		return bad("tools.timeout", "must be a duration such as 60s, or 0 for the default (60s); got %s", t.Timeout)
	case t.SpillMaxAge < 0:
		return bad("tools.spill_max_age", "must be a duration such as 168h, or 0 for the default (7 days); got %s", t.SpillMaxAge)
	}
	for i, r := range c.Tools.ShellBlocklist {
		if _, err := regexp.Compile(r); err != nil {
			return bad(fmt.Sprintf("tools.shell_blocklist[%d]", i), "must be a regular expression (RE2 syntax), e.g. '\\bgit\\s+push\\b'; %q is not: %v", r, err)
		}
	}
	if err := c.Tools.Web.validate(); err != nil {
		return err
	}
	if err := c.validateTools(); err != nil {
		return err
	}
	if err := c.validateMCP(); err != nil {
		return err
	}
	if err := c.Sandbox.validate(); err != nil {
		return err
	}
	for _, kind := range sortedKeys(c.Placement) {
		if p := c.Placement[kind]; p != "local" && p != "remote" && p != "auto" {
			return bad("placement."+kind, "must be local, remote or auto, got %q", p)
		}
	}
	if err := c.validateNode(); err != nil {
		return err
	}
	if err := c.NATS.validate(); err != nil {
		return err
	}
	if err := c.Telemetry.validate(); err != nil {
		return err
	}
	for _, name := range sortedKeys(c.Kinds) {
		if k := c.Kinds[name]; k.Name != "" && k.Name != name {
			return bad("kinds."+name+".name", "must be the kind's key (%s) or left out, got %q", name, k.Name)
		}
	}
	return nil
}

func (c Config) validateModel() error {
	m := c.Model
	switch {
	case m.BaseURL == "":
		return bad("model.base_url", "must be the URL of an OpenAI-compatible endpoint, e.g. https://api.openai.com/v1 (or OPENAI_BASE_URL); it is empty")
	case m.Default == "":
		return bad("model.default", "must name a model, e.g. gpt-4.1-mini (set it here, with TROUPE_MODEL or with --model); it is empty")
	case m.MaxRetries < 0:
		return bad("model.max_retries", "must be a whole number, 0 or more, got %d", m.MaxRetries)
	case m.MaxAttempts < 0:
		return bad("model.max_attempts", "must be a whole number, at least 1 (or better, set model.max_retries), got %d", m.MaxAttempts)
	case m.MaxResponseBytes.Text < 1024 || m.MaxResponseBytes.ToolCall < 1024:
		return bad("model.max_response_bytes", "text and tool_call must be byte counts of at least 1024, got %d and %d",
			m.MaxResponseBytes.Text, m.MaxResponseBytes.ToolCall)
	}
	for _, d := range []struct {
		key string
		v   time.Duration
	}{
		{"model.request_timeout", m.RequestTimeout}, {"model.stream_idle_timeout", m.StreamIdleTimeout},
		{"model.initial_backoff", m.InitialBackoff}, {"model.max_backoff", m.MaxBackoff}, {"model.max_retry_after", m.MaxRetryAfter},
	} {
		if d.v < 0 {
			return bad(d.key, "must be a duration such as 30s or 5m (0 for the default), got %s", d.v)
		}
	}
	for _, name := range sortedKeys(m.Pricing) {
		p := m.Pricing[name]
		for _, f := range []struct {
			field string
			v     float64
		}{{"input", p.Input}, {"cached_input", p.CachedInput}, {"output", p.Output}} {
			if f.v < 0 {
				return bad("model.pricing."+name+"."+f.field, "must be a price in US dollars per million tokens, 0 or more, got %v", f.v)
			}
		}
	}
	for _, name := range sortedKeys(m.RateLimit) {
		if l := m.RateLimit[name]; l.RPM < 0 || l.TPM < 0 {
			return bad("model.rate_limit."+name, "rpm and tpm must be requests and tokens a minute, 0 (no limit) or more; got %d and %d", l.RPM, l.TPM)
		}
	}
	if p := c.Run.Priority; p < 0 || p > 1000 {
		return bad("run.priority", "must be a weight from 1 to 1000 (0: 1), got %d", p)
	}
	for _, name := range sortedKeys(m.ContextWindows) {
		if w := m.ContextWindows[name]; w < 1000 {
			return bad("model.context_windows."+name, "must be the model's context window in tokens, at least 1000, got %d", w)
		}
	}
	r := m.Routing
	if !slices.Contains([]string{RouteSingle, RoutePerKind, RouteCheapOrchestrator, RouteRounds}, r.Strategy) {
		return bad("model.routing.strategy", "must be single, per-kind, cheap-orchestrator or rounds, got %q", r.Strategy)
	}
	for i, rm := range r.Rounds {
		if rm.From < 1 || (rm.To != 0 && rm.To < rm.From) || rm.Model == "" {
			return bad(fmt.Sprintf("model.routing.rounds[%d]", i),
				"must be {from: N, to: M, model: NAME} with from 1 or more, to at least from (or 0 for every later round) and a model; got from %d, to %d, model %q",
				rm.From, rm.To, rm.Model)
		}
	}
	return nil
}

func (c Config) validateAgent() error {
	a := c.Agent
	switch {
	case a.MaxRounds < 0:
		return bad("agent.max_rounds", "must be a number of rounds, or 0 for the default (50); got %d", a.MaxRounds)
	case a.DoomRepeats < 0 || a.DoomRepeats == 1:
		return bad("agent.doom_repeats", "must be 2 or more, or 0 for the default (3); got %d (1 would refuse every call)", a.DoomRepeats)
	}
	policies := []string{PolicyAuto, PolicyAsk, PolicyDeny}
	for _, tool := range sortedKeys(a.Approval) {
		if p := a.Approval[tool]; !slices.Contains(policies, p) {
			return bad("agent.approval."+tool, "must be auto, ask or deny, got %q", p)
		}
	}
	if a.FanoutPolicy != "" && !slices.Contains(policies, a.FanoutPolicy) {
		return bad("agent.fanout_policy", "must be auto, ask or deny, got %q", a.FanoutPolicy)
	}
	if p := a.OnParentFinish; p != "" && p != "cancel" && p != "wait" {
		return bad("agent.on_parent_finish", "must be cancel or wait, got %q", p)
	}
	if p := a.Isolation; p != "" && !slices.Contains([]string{"auto", "worktree", "shared"}, p) {
		return bad("agent.isolation", "must be auto, worktree or shared, got %q", p)
	}
	if p := a.Worktrees; p != "" && !slices.Contains([]string{"auto", "overlay", "checkout"}, p) {
		return bad("agent.worktrees", "must be auto, overlay or checkout, got %q", p)
	}
	if p := a.Changes; p != "" && !slices.Contains([]string{"apply", "branch", "patch"}, p) {
		return bad("agent.changes", "must be apply, branch or patch, got %q", p)
	}
	if a.MaxChangeBytes < 0 {
		return bad("agent.max_change_bytes", "must not be negative, got %d", a.MaxChangeBytes)
	}
	return nil
}

func (c Config) validateNode() error {
	n := c.Node
	switch {
	case n.Slots < 0:
		return bad("node.slots", "must be a number of tasks, or 0 for the default (4); got %d", n.Slots)
	case n.MaxDeliver < 0:
		return bad("node.max_deliver", "must be a number of attempts, or 0 for the default (3); got %d", n.MaxDeliver)
	case n.BudgetTimeout < 0:
		return bad("node.budget_timeout", "must be a duration such as 10s, or 0 for the default (10s); got %s", n.BudgetTimeout)
	case n.AckWait < 0:
		return bad("node.ack_wait", "must be a duration such as 10s, or 0 for the default (10s; 30s when the task queue has replicas); got %s", n.AckWait)
	case n.RunLease < 0 || n.RunLease > 5*time.Minute:
		return bad("node.run_lease", "must be a duration of at most 5m, or 0 for the default (10s); got %s", n.RunLease)
	case n.LeaseTimeout < 0:
		return bad("node.lease_timeout", "must be a duration such as 4s, or 0 for two of each node's heartbeats; got %s", n.LeaseTimeout)
	case n.Heartbeat < 0 || n.Heartbeat > NodeEntryTTL/3:
		return bad("node.heartbeat", "must be a duration of at most %s, got %s: a node's registry entry expires %s after its last heartbeat, "+
			"so a node must beat at least three times in that span, or live nodes drop out of the registry",
			NodeEntryTTL/3, n.Heartbeat, NodeEntryTTL)
	}
	return nil
}
