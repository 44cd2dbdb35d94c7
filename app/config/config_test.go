package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestDefaultsLoadAndValidate(t *testing.T) {
	t.Parallel()
	c, err := Load(Sources{})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("defaults invalid: %v", err)
	}
	if c.Model.Default == "" || c.Model.Cheap == "" || !c.Model.Stream || c.Model.Attempts() != 4 {
		t.Errorf("model defaults %+v", c.Model)
	}
	if c.Agent.RoundLimit() != 50 || c.Agent.DepthLimit() != 1 || c.Agent.ResultLimit() != 4000 || c.Agent.FanoutLimit() != 8 {
		t.Errorf("agent defaults %+v", c.Agent)
	}
	if c.Tools.Timeout != 60*time.Second || c.Budget.PerKind["explore"] != 16 {
		t.Errorf("tools/budget defaults %+v %+v", c.Tools, c.Budget)
	}
	if p := c.Model.Pricing["gpt-4.1-mini"]; p.Input != 0.40 || p.Output != 1.60 {
		t.Errorf("pricing %+v", p)
	}
}

func TestLayering(t *testing.T) {
	t.Parallel()
	home, ws := t.TempDir(), t.TempDir()
	write := func(p, s string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(home, ".config", "troupe", "config.yaml"), "model:\n  default: home-model\n  cheap: home-cheap\nagent:\n  max_rounds: 7\n")
	write(filepath.Join(ws, ".troupe", "config.yaml"), "model:\n  default: gpt-4.1\n") // a model the user's config names
	file := filepath.Join(t.TempDir(), "c.yaml")
	write(file, "model:\n  headers: {X-Title: troupe}\nbudget:\n  tokens: 1234\n")
	c, err := Load(Sources{Home: home, Workspace: ws, File: file,
		Getenv: env(map[string]string{"TROUPE_CHEAP_MODEL": "env-cheap", "OPENAI_BASE_URL": "http://127.0.0.1:1/v1", "OPENAI_API_KEY": "sk-env"})})
	if err != nil {
		t.Fatal(err)
	}
	for got, want := range map[string]string{
		c.Model.Default: "gpt-4.1", c.Model.Cheap: "env-cheap", c.Model.BaseURL: "http://127.0.0.1:1/v1",
		c.Model.APIKey: "sk-env", c.Model.Headers["X-Title"]: "troupe",
	} {
		if got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	}
	if c.Agent.MaxRounds != 7 || c.Budget.Tokens != 1234 {
		t.Errorf("file layers lost: rounds %d tokens %d", c.Agent.MaxRounds, c.Budget.Tokens)
	}
	// Keys a layer does not set keep the default's values.
	if c.Model.Attempts() != 4 || c.Budget.PerKind["worker"] != 4 {
		t.Errorf("defaults lost under layers: %+v", c.Model)
	}
}

func TestBadFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// Errors name the file, the line, the setting and what it accepts, in
	// words: never a Go type.
	cases := map[string]string{
		"model:\n  defualt: x\n":          "line 2: model.defualt is not a setting; under model the settings are: api_key, base_url, cheap,",
		"budget:\n  tokens: lots\n":       `line 2: budget.tokens: "lots" is not a whole number`,
		"model: [1, 2]\n":                 "line 1: model: ",
		"agent:\n  approval_timeout: 5\n": `line 2: agent.approval_timeout: "5" is not a duration such as 30s`,
		"nats:\n  ephemeral: maybe\n":     `line 2: nats.ephemeral: "maybe" is not true or false`,
		"node:\n  kinds: explore\n":       `line 2: node.kinds: "explore" is not a list`,
	}
	i := 0
	for body, want := range cases {
		i++
		p := filepath.Join(dir, "bad"+string(rune('0'+i))+".yaml")
		os.WriteFile(p, []byte(body), 0o644)
		_, err := Load(Sources{File: p})
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), p) ||
			strings.Contains(err.Error(), "config.") || strings.Contains(err.Error(), "time.Duration") {
			t.Errorf("%q: %v, want an error naming the file and %q", body, err, want)
		}
	}
	if _, err := Load(Sources{File: filepath.Join(dir, "missing.yaml")}); err == nil {
		t.Error("missing --config file accepted")
	}
}

func TestValidateNamesTheField(t *testing.T) {
	t.Parallel()
	base, err := Load(Sources{})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		mut  func(*Config)
		want string
	}{
		{func(c *Config) { c.Model.Default = "" }, "model.default"},
		{func(c *Config) { c.Model.MaxRetries = -1 }, "model.max_retries"},
		{func(c *Config) { c.Model.MaxResponseBytes.ToolCall = 10 }, "model.max_response_bytes"},
		{func(c *Config) { c.Budget.Tokens = 0 }, "budget.tokens"},
		{func(c *Config) { c.Model.Routing.Strategy = "fastest" }, "model.routing.strategy"},
		{func(c *Config) { c.Model.Routing.Rounds = []RoundModel{{From: 3, To: 2, Model: "m"}} }, "model.routing.rounds[0]"},
		{func(c *Config) { c.Agent.Approval = map[string]string{"shell": "maybe"} }, "agent.approval.shell"},
		{func(c *Config) { c.Agent.FanoutPolicy = "sometimes" }, "agent.fanout_policy"},
		{func(c *Config) { c.Agent.OnParentFinish = "abandon" }, "agent.on_parent_finish"},
		{func(c *Config) { c.Agent.Isolation = "private" }, "agent.isolation"},
		{func(c *Config) { c.Agent.Changes = "merge" }, "agent.changes"},
		{func(c *Config) { c.Model.Pricing = map[string]Price{"m": {Input: -1}} }, "model.pricing.m"},
		{func(c *Config) { c.Model.ContextWindows = map[string]int{"m": 10} }, "model.context_windows.m"},
		{func(c *Config) { c.Agent.DoomRepeats = 1 }, "agent.doom_repeats"},
		{func(c *Config) { c.Tools.SpillMaxAge = -time.Hour }, "tools.spill_max_age"},
		{func(c *Config) { c.Tools.ShellBlocklist = []string{`\bok\b`, `(unclosed`} }, "tools.shell_blocklist[1]"},
		{func(c *Config) { c.Node.Heartbeat = NodeEntryTTL }, "node.heartbeat"},
		{func(c *Config) { c.Node.Heartbeat = NodeEntryTTL/3 + time.Millisecond }, "node.heartbeat"},
	}
	for _, tc := range cases {
		c := base
		c.Agent.Approval = nil
		c.Model.Pricing = map[string]Price{}
		c.Model.ContextWindows = map[string]int{}
		tc.mut(&c)
		if err := c.Validate(); err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("want error naming %s, got %v", tc.want, err)
		}
	}
}

// A heartbeat of a third of the registry TTL is the longest accepted, and
// the refusal says why in words.
func TestValidateHeartbeat(t *testing.T) {
	t.Parallel()
	c, err := Load(Sources{})
	if err != nil {
		t.Fatal(err)
	}
	c.Node.Heartbeat = NodeEntryTTL / 3
	if err := c.Validate(); err != nil {
		t.Fatalf("heartbeat %s: %v", c.Node.Heartbeat, err)
	}
	c.Node.Heartbeat = NodeEntryTTL
	err = c.Validate()
	if err == nil || !strings.Contains(err.Error(), "expires 15s after its last heartbeat") || !strings.Contains(err.Error(), "at most 5s") {
		t.Fatalf("heartbeat of 15s: %v", err)
	}
}

// A value Validate refuses is reported with where it was set (the file
// and line, the environment variable, the flag) and what the setting
// accepts, in words.
func TestValidateNamesFileLineAndAcceptedValues(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, body string
		env        map[string]string
		want       string // after the file's path, or the whole error when it starts with "env "
	}{
		{"policy", "agent:\n  max_rounds: 3\n  fanout_policy: sometimes\n", nil,
			` line 3: agent.fanout_policy: must be auto, ask or deny, got "sometimes"`},
		{"price", "model:\n  pricing:\n    m:\n      input: 1\n      output: -2\n", nil,
			" line 5: model.pricing.m.output: must be a price in US dollars per million tokens, 0 or more, got -2"},
		{"flow price", "model:\n  pricing: {m: {input: -1}}\n", nil,
			" line 2: model.pricing.m.input: must be a price in US dollars per million tokens, 0 or more, got -1"},
		{"list item", "tools:\n  shell_blocklist:\n    - '\\bok\\b'\n    - '(unclosed'\n", nil,
			` line 4: tools.shell_blocklist[1]: must be a regular expression (RE2 syntax)`},
		{"placement", "placement:\n  explore: elsewhere\n", nil, ` line 2: placement.explore: must be local, remote or auto, got "elsewhere"`},
		{"timeout", "tools:\n  timeout: -5s\n", nil, " line 2: tools.timeout: must be a duration such as 60s, or 0 for the default (60s); got -5s"},
		{"budget", "\nbudget:\n\n  tokens: 0\n", nil, " line 4: budget.tokens: must be a positive number of tokens, got 0"},
		// The key is not in the file, the setting that needs it is.
		{"needs key", "tools:\n  web:\n    search:\n      provider: brave\n", nil,
			" line 4: tools.web.search.api_key: brave needs its API key; set BRAVE_API_KEY"},
		{"env", "", map[string]string{"SEARXNG_URL": "ftp://search.example"},
			`env SEARXNG_URL: tools.web.search.url: must be an http:// or https:// URL, got "ftp://search.example"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			file := filepath.Join(t.TempDir(), "troupe.yaml")
			if err := os.WriteFile(file, []byte(tc.body), 0o644); err != nil {
				t.Fatal(err)
			}
			c, err := Load(Sources{File: file, Getenv: env(tc.env)})
			if err != nil {
				t.Fatal(err)
			}
			want := file + tc.want
			if strings.HasPrefix(tc.want, "env ") {
				want = tc.want
			}
			if err := c.Validate(); err == nil || !strings.HasPrefix(err.Error(), want) {
				t.Errorf("got  %v\nwant %s", err, want)
			}
		})
	}
}

// The last layer that set a value is the one named: the workspace's file
// over the home one, a flag over both.
func TestValidateNamesTheLayerThatWon(t *testing.T) {
	t.Parallel()
	home, ws := t.TempDir(), t.TempDir()
	homeFile := filepath.Join(home, ".config", "troupe", "config.yaml")
	wsFile := filepath.Join(ws, ".troupe", "config.yaml")
	for p, body := range map[string]string{homeFile: "agent:\n  on_parent_finish: abandon\n", wsFile: "# mine\nagent:\n  doom_repeats: 0\n  on_parent_finish: linger\n"} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c, err := Load(Sources{Home: home, Workspace: ws})
	if err != nil {
		t.Fatal(err)
	}
	want := wsFile + ` line 4: agent.on_parent_finish: must be cancel or wait, got "linger"`
	if err := c.Validate(); err == nil || err.Error() != want {
		t.Errorf("got  %v\nwant %s", err, want)
	}
	c.Agent.OnParentFinish = "wait"
	c.Agent.MaxRounds = -1
	c.SetByFlag("agent.max_rounds", "--max-rounds")
	want = "flag --max-rounds: agent.max_rounds: must be a number of rounds, or 0 for the default (50); got -1"
	if err := c.Validate(); err == nil || err.Error() != want {
		t.Errorf("got  %v\nwant %s", err, want)
	}
	// A default has no origin to name.
	d, _ := Load(Sources{})
	d.Budget.Tokens = -1
	if err := d.Validate(); err == nil || !strings.HasPrefix(err.Error(), "budget.tokens: must be a positive number") {
		t.Errorf("default: %v", err)
	}
}
