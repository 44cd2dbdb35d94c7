package runner

import (
	"io"
	"strings"
	"time"

	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/app/config"
	"github.com/troupe-ai/troupe/app/setup"
)

// Overrides are the settings a command line names. Each one given wins
// over the configuration and is recorded as set by its flag, so `config
// print` shows where a value came from.
type Overrides struct {
	Model           string // --model
	MaxRounds       int    // --max-rounds; 0 keeps the configuration's
	KeepCheckpoints bool   // --keep-checkpoints
	NATS            string // --nats
	Creds           string // --creds
	Ephemeral       bool   // --ephemeral
	Placement       string // --placement KIND=WHERE[,...]
	Changes         string // --changes apply|branch|patch
}

// Apply sets o's settings on cfg. A placement that does not parse is an
// ErrUsage naming --placement.
func (o Overrides) Apply(cfg *config.Config) error {
	set := func(key, flag string, apply func()) {
		apply()
		cfg.SetByFlag(key, flag)
	}
	if o.Model != "" {
		set("model.default", "--model", func() { cfg.Model.Default = o.Model })
	}
	if o.MaxRounds > 0 {
		set("agent.max_rounds", "--max-rounds", func() { cfg.Agent.MaxRounds = o.MaxRounds })
	}
	if o.KeepCheckpoints {
		set("agent.keep_checkpoints", "--keep-checkpoints", func() { cfg.Agent.KeepCheckpoints = true })
	}
	if o.NATS != "" {
		set("nats.url", "--nats", func() { cfg.NATS.URL = o.NATS })
	}
	if o.Creds != "" {
		set("nats.creds", "--creds", func() { cfg.NATS.Creds = o.Creds })
	}
	if o.Ephemeral {
		set("nats.ephemeral", "--ephemeral", func() { cfg.NATS.Ephemeral = true })
	}
	switch o.Changes {
	case "":
	case "apply", "branch", "patch":
		set("agent.changes", "--changes", func() { cfg.Agent.Changes = o.Changes })
	default:
		return Usage("--changes: want apply, branch or patch, got %q", o.Changes)
	}
	if o.Placement == "" {
		return nil
	}
	placement, err := parsePlacement(o.Placement, cfg.Placement)
	if err != nil {
		return Usage("--placement: %v", err)
	}
	cfg.Placement = placement
	for _, part := range strings.Split(o.Placement, ",") {
		kind, _, _ := strings.Cut(strings.TrimSpace(part), "=")
		cfg.SetByFlag("placement."+kind, "--placement")
	}
	return nil
}

// NATSSetting names where the NATS URL comes from, for the error when it
// does not work: the flag, the environment or the configuration.
func (o Overrides) NATSSetting(getenv func(string) string) string {
	switch {
	case o.NATS != "":
		return "--nats"
	case getenv("TROUPE_NATS_URL") != "":
		return "TROUPE_NATS_URL"
	}
	return "nats.url"
}

// LoadConfig loads the configuration from src, applies o and validates the
// result; every error is an ErrUsage.
func LoadConfig(src config.Sources, o Overrides) (config.Config, error) {
	if src.Kinds == nil {
		src.Kinds = actors.BuiltinKinds()
	}
	cfg, err := config.Load(src)
	if err != nil {
		return config.Config{}, Usage("%v", err)
	}
	if err := o.Apply(&cfg); err != nil {
		return config.Config{}, err
	}
	if err := cfg.Validate(); err != nil {
		return config.Config{}, Usage("config: %v", err)
	}
	return cfg, nil
}

// Logger is the run's log on w at level ("" logs nothing), with every
// configured secret redacted; a level that does not parse is an ErrUsage.
func Logger(cfg config.Config, level string, w io.Writer) (zerolog.Logger, error) {
	if level == "" {
		return zerolog.Nop(), nil
	}
	l, err := zerolog.ParseLevel(level)
	if err != nil {
		return zerolog.Nop(), Usage("--log-level: %v", err)
	}
	out := setup.Redactor(cfg).Writer(w) // no configured secret in a log line
	return zerolog.New(zerolog.ConsoleWriter{Out: out, TimeFormat: time.TimeOnly, NoColor: true}).Level(l).With().Timestamp().Logger(), nil
}
