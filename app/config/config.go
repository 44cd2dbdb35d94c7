package config

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Config is troupe's whole configuration.
type Config struct {
	Model  Model           `yaml:"model"`
	Agent  Agent           `yaml:"agent"`
	Tools  Tools           `yaml:"tools"`
	Budget Budget          `yaml:"budget"`
	Kinds  map[string]Kind `yaml:"kinds"`
	NATS   NATS            `yaml:"nats"`
	// Placement says where each kind's agents run: local, remote or auto.
	Placement map[string]string `yaml:"placement"`
	Node      Node              `yaml:"node"`
	Events    Events            `yaml:"events"`
	MCP       MCP               `yaml:"mcp"`
	Sandbox   Sandbox           `yaml:"sandbox"`
	Telemetry Telemetry         `yaml:"telemetry"`
	Run       Run               `yaml:"run"`

	// origins says where each setting that is not a default was set (see
	// origins.go), for Settings and for Validate's errors.
	origins map[string]origin
}

// Run configures a run as one among others on its hub.
type Run struct {
	// Priority weighs the run's share of a rate-limited provider key
	// against other runs' (1 when 0).
	Priority int `yaml:"priority"`
}

// Events configures what goes into the event stream.
type Events struct {
	// Deltas emits the model's streamed text as llm.delta events.
	Deltas bool `yaml:"deltas"`
}

// Model configures model access.
type Model struct {
	BaseURL string `yaml:"base_url"`
	APIKey  string `yaml:"api_key"`
	Default string `yaml:"default"`
	Cheap   string `yaml:"cheap"`
	Stream  bool   `yaml:"stream"`
	// MaxRetries bounds the retries of one call (429s and transient
	// failures together).
	MaxRetries int `yaml:"max_retries"`
	// MaxAttempts is the older form of MaxRetries (attempts = retries +
	// 1); when a file sets it, it wins.
	MaxAttempts    int           `yaml:"max_attempts"`
	RequestTimeout time.Duration `yaml:"request_timeout"`
	// StreamIdleTimeout retries a stream that goes quiet this long.
	StreamIdleTimeout time.Duration `yaml:"stream_idle_timeout"`
	InitialBackoff    time.Duration `yaml:"initial_backoff"`
	MaxBackoff        time.Duration `yaml:"max_backoff"`
	// MaxRetryAfter caps how long a provider's Retry-After is honoured.
	MaxRetryAfter  time.Duration     `yaml:"max_retry_after"`
	Headers        map[string]string `yaml:"headers"`
	ContextWindows map[string]int    `yaml:"context_windows"`
	Pricing        map[string]Price  `yaml:"pricing"`
	Routing        Routing           `yaml:"routing"`
	// MaxResponseBytes caps one answer (see llm.Config.MaxTextBytes).
	MaxResponseBytes ResponseCaps `yaml:"max_response_bytes"`
	// RateLimit sets a provider's limits per model role (default, cheap)
	// or model name, for providers that send no x-ratelimit-* headers.
	RateLimit map[string]RateLimit `yaml:"rate_limit"`
}

// RateLimit is a provider's limit a minute, requests and tokens (0: none).
type RateLimit struct {
	RPM int64 `yaml:"rpm"`
	TPM int64 `yaml:"tpm"`
}

// RateLimits are model.rate_limit by model name: a role's entry applies
// to the role's model, a model's own entry wins over its role's.
func (m Model) RateLimits() map[string]RateLimit {
	out := map[string]RateLimit{}
	for name, l := range m.RateLimit {
		switch name {
		case "default":
			if _, own := m.RateLimit[m.Default]; !own {
				out[m.Default] = l
			}
		case "cheap":
			if _, own := m.RateLimit[m.Cheap]; !own && m.Cheap != "" {
				out[m.Cheap] = l
			}
		default:
			out[name] = l
		}
	}
	return out
}

// ResponseCaps cap one model answer, in bytes.
type ResponseCaps struct {
	Text     int64 `yaml:"text"`
	ToolCall int64 `yaml:"tool_call"`
}

// Attempts is the most attempts of one model call.
func (m Model) Attempts() int {
	if m.MaxAttempts > 0 {
		return m.MaxAttempts
	}
	return m.MaxRetries + 1
}

// Price is a model's price in USD per million tokens.
type Price struct {
	Input       float64 `yaml:"input"`
	CachedInput float64 `yaml:"cached_input"`
	Output      float64 `yaml:"output"`
}

// Routing picks models per agent kind and round.
type Routing struct {
	Strategy   string            `yaml:"strategy"` // single|per-kind|cheap-orchestrator|rounds
	PerKind    map[string]string `yaml:"per_kind"`
	CheapUntil int               `yaml:"cheap_until"`
	Rounds     []RoundModel      `yaml:"rounds"`
}

// RoundModel runs rounds From..To (inclusive; To 0 = open) on Model.
type RoundModel struct {
	From  int    `yaml:"from"`
	To    int    `yaml:"to"`
	Model string `yaml:"model"`
}

// The routing strategies.
const (
	RouteSingle            = "single"
	RoutePerKind           = "per-kind"
	RouteCheapOrchestrator = "cheap-orchestrator"
	RouteRounds            = "rounds"
)

// Tools configures the tool framework.
type Tools struct {
	Timeout        time.Duration `yaml:"timeout"`
	CacheMaxAge    int           `yaml:"cache_max_age"`
	SpillMaxAge    time.Duration `yaml:"spill_max_age"`
	ShellBlocklist []string      `yaml:"shell_blocklist"`
	ShellEnv       []string      `yaml:"shell_env"`
	Web            Web           `yaml:"web"`
	// DefinitionBudget is the estimated tokens of optional tool
	// definitions sent each round before they are deferred to
	// search_tools (0: the default, -1: never defer).
	DefinitionBudget int `yaml:"definition_budget"`
	// Tiers override tools' tiers by name or pattern (mcp__github__*).
	Tiers map[string]string `yaml:"tiers"`
}

// Budget is the run's budget (see package budget).
type Budget struct {
	Tokens         int64          `yaml:"tokens"`
	USD            float64        `yaml:"usd"`
	ToolCalls      int64          `yaml:"tool_calls"`
	WallTime       time.Duration  `yaml:"wall_time"`
	MaxConcurrent  int            `yaml:"max_concurrent"`
	PerKind        map[string]int `yaml:"per_kind"`
	AcquireTimeout time.Duration  `yaml:"acquire_timeout"`
}

// NATS says where the bus is; an empty URL starts an embedded server.
type NATS struct {
	URL       string `yaml:"url"`
	Prefix    string `yaml:"prefix"`
	Token     string `yaml:"token"`
	User      string `yaml:"user"`
	Password  string `yaml:"password"`
	Creds     string `yaml:"creds"`
	TLSCA     string `yaml:"tls_ca"`
	TLSCert   string `yaml:"tls_cert"`
	TLSKey    string `yaml:"tls_key"`
	StoreDir  string `yaml:"store_dir"` // embedded server's store; "" = nats/ in the state directory
	Listen    string `yaml:"listen"`    // embedded server's address, host:port (port 0 = any free)
	Ephemeral bool   `yaml:"ephemeral"`
	// EventsMaxAge and EventsMaxBytes bound the TROUPE_EVENTS stream.
	EventsMaxAge   time.Duration `yaml:"events_max_age"`
	EventsMaxBytes int64         `yaml:"events_max_bytes"`
	// PublishQueue bounds the events waiting to be published.
	PublishQueue int `yaml:"publish_queue"`
	// Replicas of every stream, bucket and object store: 1 or 3; 0 lets
	// the hub choose (3 in a cluster of three or more servers).
	Replicas int `yaml:"replicas"`
	// Sync is how an embedded server's store reaches the disk: "always",
	// or an interval such as 1s.
	Sync string `yaml:"sync"`
}

// NodeEntryTTL is how long a node's registry entry outlives its last
// heartbeat (the TTL of the troupe_nodes bucket that bus creates).
const NodeEntryTTL = 15 * time.Second

// Node configures worker nodes (cmd/node) and how the orchestrator's
// remote tasks are delivered.
type Node struct {
	Kinds        []string      `yaml:"kinds"`
	Slots        int           `yaml:"slots"`
	AckWait      time.Duration `yaml:"ack_wait"`
	MaxDeliver   int           `yaml:"max_deliver"`
	Heartbeat    time.Duration `yaml:"heartbeat"`
	DrainTimeout time.Duration `yaml:"drain_timeout"`
	LeaseTimeout time.Duration `yaml:"lease_timeout"`
	// PlacementTimeout: a remote task not started while no live node
	// serves its kind fails after this long.
	PlacementTimeout time.Duration `yaml:"placement_timeout"`
	// RunLease: a run whose orchestrator has not heartbeaten it this long
	// is lost; nodes stop its agents (0: the default, 10s).
	RunLease time.Duration `yaml:"run_lease"`
	// BudgetTimeout: a node's agent whose run's budget does not answer
	// this long stops at its next model call (budget_unreachable).
	BudgetTimeout time.Duration `yaml:"budget_timeout"`
}

// Sources say where Load looks. Empty fields are skipped.
type Sources struct {
	// File is --config: it must exist.
	File string
	// Home and Workspace are probed for config.yaml files that may be absent.
	Home      string
	Workspace string
	// Getenv reads the environment (os.Getenv in the programs).
	Getenv func(string) string
	// Kinds are the built-in agent kinds: a workspace's own file may give
	// a kind only tools it already has (a new kind, a worker's at most).
	// Without them it may set no kind's tools.
	Kinds map[string]Kind
}

// Load builds the configuration from the defaults, the files and the
// environment of src. Flags are the caller's to apply afterwards.
func Load(src Sources) (Config, error) {
	c := defaults() // configs/default.yaml, decoded when built (defaults_value.go)
	var optional []string
	if src.Home != "" {
		optional = append(optional, filepath.Join(src.Home, ".config", "troupe", "config.yaml"))
	}
	if src.Workspace != "" {
		optional = append(optional, filepath.Join(src.Workspace, ".troupe", "config.yaml"))
	}
	for i, p := range optional {
		data, err := os.ReadFile(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return Config{}, fmt.Errorf("config %s: %w", p, err)
		}
		if src.Workspace != "" && i == len(optional)-1 {
			if err := c.decodeWorkspace(data, p, src.Kinds); err != nil {
				return Config{}, err
			}
		} else if err := decodeInto(&c, data, p); err != nil {
			return Config{}, err
		}
		c.markFile(data, p)
	}
	if src.File != "" {
		data, err := os.ReadFile(src.File)
		if err != nil {
			return Config{}, fmt.Errorf("config %s: %w", src.File, err)
		}
		if err := decodeInto(&c, data, src.File); err != nil {
			return Config{}, err
		}
		c.markFile(data, src.File)
	}
	if src.Getenv != nil {
		c.applyEnv(src.Getenv)
	}
	return c, nil
}

// decodeWorkspace overlays a workspace's own config file, which agents
// can write, refusing what it may not set (see workspace_rules.go): a key
// outside the allow-list, a ${VAR}, a value that widens what the layers
// under it set.
func (c *Config) decodeWorkspace(data []byte, file string, builtin map[string]Kind) error {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return explainYAML(err, data, file)
	}
	leaves, err := wsLeaves(&doc, file)
	if err != nil {
		return err
	}
	before, err := c.clone()
	if err != nil {
		return err
	}
	if err := decodeInto(c, data, file); err != nil {
		return err
	}
	if key := before.Sandbox.loosens(c.Sandbox); key != "" {
		return wsRefuse(file, keyLine(&doc, strings.Split(key, ".")), strings.Split(key, "."), "it may tighten the sandbox but not loosen it")
	}
	return checkWorkspaceValues(leaves, file, before, *c, builtin)
}

// clone is a deep copy of c (its maps and lists are its own).
func (c Config) clone() (Config, error) {
	out, err := yaml.Marshal(c)
	if err != nil {
		return Config{}, fmt.Errorf("config: %w", err)
	}
	var d Config
	if err := yaml.Unmarshal(out, &d); err != nil {
		return Config{}, fmt.Errorf("config: %w", err)
	}
	d.origins = c.origins
	return d, nil
}

// decodeInto overlays a YAML document on c; keys it does not set keep
// their values, unknown keys are errors.
func decodeInto(c *Config, data []byte, name string) error {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(c); err != nil {
		return explainYAML(err, data, name)
	}
	return nil
}

// applyEnv applies the environment's settings and records which
// variable set each.
func (c *Config) applyEnv(getenv func(string) string) {
	set := func(dst *string, key, env string) {
		if v := getenv(env); v != "" {
			*dst = v
			c.setOrigin(key, origin{at: "env " + env, whole: true})
		}
	}
	set(&c.Model.APIKey, "model.api_key", "OPENAI_API_KEY")
	set(&c.Model.BaseURL, "model.base_url", "OPENAI_BASE_URL")
	set(&c.Model.Default, "model.default", "TROUPE_MODEL")
	set(&c.Model.Cheap, "model.cheap", "TROUPE_CHEAP_MODEL")
	set(&c.NATS.URL, "nats.url", "TROUPE_NATS_URL")
	set(&c.NATS.Token, "nats.token", "TROUPE_NATS_TOKEN")
	set(&c.NATS.Creds, "nats.creds", "TROUPE_NATS_CREDS")
	set(&c.NATS.Password, "nats.password", "TROUPE_NATS_PASSWORD")
	set(&c.Telemetry.OTLPEndpoint, "telemetry.otlp_endpoint", "OTEL_EXPORTER_OTLP_ENDPOINT")
	for key, env := range c.Tools.Web.applyWebEnv(getenv) {
		c.setOrigin(key, origin{at: "env " + env, whole: true})
	}
}

// Window is the context window of model (default 128000).
func (m Model) Window(model string) int {
	if w := m.ContextWindows[model]; w > 0 {
		return w
	}
	return 128_000
}
