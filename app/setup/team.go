package setup

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/app/config"
	"github.com/troupe-ai/troupe/budget"
	"github.com/troupe-ai/troupe/llm"
	"github.com/troupe-ai/troupe/messages"
	"github.com/troupe-ai/troupe/ratelimit"
	"github.com/troupe-ai/troupe/tools"
	"github.com/troupe-ai/troupe/tools/builtin"
	"github.com/troupe-ai/troupe/tools/sandbox"
	"github.com/troupe-ai/troupe/tools/shell"
	"github.com/troupe-ai/troupe/tools/web"
)

// TeamOptions turns a validated config into the options of a run. The
// configured MCP servers are in Options.ToolSources, not started; the
// caller closes them (CloseToolSources) when the run or node ends. lim,
// when not nil, is the process's share of its hub's provider rate limits
// (cluster.RateHub): every model call waits its turn there.
func TeamOptions(cfg config.Config, workspace string, log zerolog.Logger, lim *ratelimit.Limiter) (actors.Options, error) {
	m := cfg.Model
	pricing := llm.Pricing{}
	for name, p := range m.Pricing {
		pricing[name] = llm.Price{Input: p.Input, CachedInput: p.CachedInput, Output: p.Output}
	}
	if err := CheckModel(cfg); err != nil {
		return actors.Options{}, err
	}
	client, err := llm.NewClient(llm.Config{BaseURL: m.BaseURL, APIKey: m.APIKey, Model: m.Default, Stream: m.Stream,
		MaxAttempts: m.Attempts(), MaxTextBytes: m.MaxResponseBytes.Text, MaxToolCallBytes: m.MaxResponseBytes.ToolCall, RequestTimeout: m.RequestTimeout, StreamIdleTimeout: m.StreamIdleTimeout,
		InitialBackoff: m.InitialBackoff, MaxBackoff: m.MaxBackoff, MaxRetryAfter: m.MaxRetryAfter, Headers: m.Headers,
		ContextWindows: m.ContextWindows, Pricing: pricing, Limiter: lim, RateLimits: RateLimits(m)}, log)
	if err != nil {
		return actors.Options{}, fmt.Errorf("model client: %w", err)
	}
	route, err := router(m)
	if err != nil {
		return actors.Options{}, err
	}
	kinds, err := loadKinds(cfg, workspace)
	if err != nil {
		return actors.Options{}, err
	}
	home, _ := os.UserHomeDir()
	box := Sandbox(cfg, home)
	warn, err := SandboxPreflight(box, slices.Sorted(maps.Keys(kinds)))
	if err != nil {
		return actors.Options{}, err
	}
	if warn != "" {
		log.Warn().Msg(warn)
	}
	if box != nil {
		sandbox.SetLogger(log) // a command's read-only trees kept by Landlock alone: said once
	}
	sources, err := MCPServers(cfg, workspace, kinds, getenv, log)
	if err != nil {
		return actors.Options{}, err
	}
	b := cfg.Budget
	return actors.Options{
		ToolSources:  sources,
		StreamDeltas: cfg.Events.Deltas,
		Workspace:    workspace, Client: client, Kinds: kinds, Settings: settings(cfg), Log: log, Secrets: Secrets(cfg),
		Models: actors.Models{Default: m.Default, Cheap: m.Cheap, Router: route, Window: m.Window, Cost: pricing.Cost},
		Tools:  toolsWithSandbox(ToolsConfig(cfg.Tools), box),
		Budget: budget.Limits{Tokens: b.Tokens, USD: b.USD, ToolCalls: b.ToolCalls, WallTime: b.WallTime,
			MaxConcurrent: b.MaxConcurrent, PerKind: b.PerKind, AcquireTimeout: b.AcquireTimeout},
	}, nil
}

// CheckModel refuses a configuration that cannot reach a model: no API
// key for OpenAI's own endpoint.
func CheckModel(cfg config.Config) error {
	if cfg.Model.APIKey == "" && cfg.Model.BaseURL == llm.DefaultBaseURL {
		return fmt.Errorf("no API key: set OPENAI_API_KEY, or point OPENAI_BASE_URL at a local server (Ollama, vLLM, llama.cpp, LM Studio)")
	}
	return nil
}

// settings are the agent settings with the run's priority, which travel
// with them to the run's agents on nodes.
func settings(cfg config.Config) actors.Settings {
	s := cfg.Agent
	s.RunPriority = cfg.Run.Priority
	return s
}

// RateLimits are model.rate_limit by model name, as llm.Config takes them.
func RateLimits(m config.Model) map[string]messages.RateLimits {
	out := map[string]messages.RateLimits{}
	for name, l := range m.RateLimits() {
		out[name] = messages.RateLimits{RPM: l.RPM, TPM: l.TPM}
	}
	return out
}

// router builds the run's model router from the configuration (flags
// and environment are already in it); llm.Router.Choose decides.
func router(m config.Model) (*llm.Router, error) {
	r := m.Routing
	var rounds []llm.RoundRoute
	for _, rr := range r.Rounds {
		rounds = append(rounds, llm.RoundRoute{From: rr.From, To: rr.To, Model: rr.Model})
	}
	rt, err := llm.NewRouter(llm.RouteConfig{Strategy: r.Strategy, Default: m.Default, Cheap: m.Cheap,
		PerKind: r.PerKind, CheapUntil: r.CheapUntil, Rounds: rounds})
	if err != nil {
		return nil, fmt.Errorf("config: model.routing: %w", err)
	}
	return rt, nil
}

// loadKinds merges the built-in kinds, the config's kinds and the agent
// definition files of ~/.config/troupe/agents and <workspace>/.troupe/agents
// (later ones win). The workspace's own definitions are written where its
// agents write, so they may only narrow (see workspaceDef).
func loadKinds(cfg config.Config, workspace string) (map[string]actors.Kind, error) {
	kinds := actors.BuiltinKinds()
	for name, k := range cfg.Kinds {
		k.Name = name
		kinds[name] = k
	}
	if home, err := os.UserHomeDir(); err == nil {
		defs, err := actors.LoadAgentDefs(filepath.Join(home, ".config", "troupe", "agents"))
		if err != nil {
			return nil, err
		}
		for _, k := range defs {
			kinds[k.Name] = k
		}
	}
	dir := filepath.Join(workspace, ".troupe", "agents")
	entries, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("agent definitions %s: %w", dir, err)
	}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".md") {
			continue
		}
		p := filepath.Join(dir, e.Name())
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("agent definition %s: %w", p, err)
		}
		k, err := actors.ParseAgentDef(data)
		if err != nil {
			return nil, fmt.Errorf("agent definition %s: %w", p, err)
		}
		if err := workspaceDef(k, kinds, cfg); err != nil {
			return nil, fmt.Errorf("agent definition %s: %w; put it in ~/.config/troupe/agents/ to give it more", p, err)
		}
		kinds[k.Name] = k
	}
	return kinds, nil
}

// workspaceDef refuses a workspace's own agent definition that widens:
// tools beyond those of the kind it replaces (for a new kind, a
// worker's), delegation the kind did not have, a model the user did not
// configure.
func workspaceDef(k actors.Kind, kinds map[string]actors.Kind, cfg config.Config) error {
	was, ok := kinds[k.Name]
	if !ok {
		was = kinds[actors.KindWorker]
		was.MayDelegate = false
	}
	for _, t := range k.Tools {
		if !slices.Contains(was.Tools, t) {
			return fmt.Errorf("tool %s: %w: a kind's tools may only narrow (%s has %s)", t, config.ErrWorkspaceKey, k.Name, strings.Join(was.Tools, ", "))
		}
	}
	if k.MayDelegate && !was.MayDelegate {
		return fmt.Errorf("delegation: %w: %s may not delegate", config.ErrWorkspaceKey, k.Name)
	}
	if !cfg.ModelAllowed(k.Model) {
		return fmt.Errorf("model %q: %w: it is not one the user configured (%s)", k.Model, config.ErrWorkspaceKey, strings.Join(cfg.ConfiguredModels(), ", "))
	}
	return nil
}

// ToolsConfig is the configuration of the tool framework and the built-in
// tools from the config's tools section.
func ToolsConfig(t config.Tools) builtin.Config {
	return builtin.Config{
		Config: tools.Config{Timeout: t.Timeout, CacheMaxAge: t.CacheMaxAge, SpillMaxAge: t.SpillMaxAge, Tiers: Tiers(t)},
		Shell:  shell.Config{Blocklist: t.ShellBlocklist, Env: t.ShellEnv},
		Web:    WebTools(t.Web),
	}
}

func toolsWithSandbox(c builtin.Config, s *sandbox.Settings) builtin.Config {
	c.Sandbox = s
	return c
}

// WebTools is the web tools' configuration from the config's tools.web.
func WebTools(w config.Web) web.Config {
	redirects := w.MaxRedirects
	if redirects == 0 {
		redirects = -1 // the config's 0 follows none; tools' 0 is its default
	}
	return web.Config{NoFetch: !w.Fetch, Explore: w.Explore, AllowPrivate: w.AllowPrivate,
		AllowHosts: w.AllowHosts, Timeout: w.Timeout, MaxBytes: w.MaxBytes, MaxRedirects: redirects,
		CacheTTL: w.CacheTTL, Search: web.SearchConfig{Provider: w.Search.Provider, URL: w.Search.URL,
			APIKey: w.Search.APIKey, Timeout: w.Search.Timeout}}
}
