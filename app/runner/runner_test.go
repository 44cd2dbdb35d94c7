package runner

import (
	"errors"
	"testing"

	"github.com/troupe-ai/troupe/app/config"
	"github.com/troupe-ai/troupe/cluster"
	"github.com/troupe-ai/troupe/messages"
)

// Only events emitted on a node are taken from the bus: the run's own
// agents' events, and the run's own events about nodes (a node lost),
// reach the sinks in-process already.
func TestFromNode(t *testing.T) {
	for _, c := range []struct {
		name string
		ev   messages.Event
		want bool
	}{
		{"local agent", messages.Event{Agent: "root", Kind: "root"}, false},
		{"run's node.left", messages.Event{Agent: cluster.NodesAgent, Kind: "node", Node: "n1", Type: messages.EvtNodeLeft}, false},
		{"agent on a node", messages.Event{Agent: "explore-1", Kind: "explore", Node: "n1"}, true},
		{"node's task.redelivered", messages.Event{Agent: "n1", Kind: "node", Node: "n1", Type: messages.EvtTaskRedelivered}, true},
	} {
		if got := fromNode(c.ev); got != c.want {
			t.Errorf("%s: fromNode = %v", c.name, got)
		}
	}
}

// The command line's overrides win over the configuration and are
// recorded as set by their flags; a bad placement is a usage error.
func TestOverridesApply(t *testing.T) {
	cfg, err := config.Load(config.Sources{Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	o := Overrides{Model: "m9", MaxRounds: 7, KeepCheckpoints: true, NATS: "nats://127.0.0.1:1", Ephemeral: true, Placement: "explore=remote"}
	if err := o.Apply(&cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.Model.Default != "m9" || cfg.Agent.MaxRounds != 7 || !cfg.Agent.KeepCheckpoints || cfg.NATS.URL != "nats://127.0.0.1:1" ||
		!cfg.NATS.Ephemeral || cfg.Placement["explore"] != "remote" {
		t.Errorf("applied: %+v %+v %+v %v", cfg.Model, cfg.Agent, cfg.NATS, cfg.Placement)
	}
	settings, err := cfg.Settings()
	if err != nil {
		t.Fatal(err)
	}
	origins := map[string]string{}
	for _, s := range settings {
		origins[s.Key] = s.Origin
	}
	for key, flag := range map[string]string{"model.default": "--model", "agent.max_rounds": "--max-rounds", "nats.url": "--nats", "placement.explore": "--placement"} {
		if origins[key] != "flag "+flag {
			t.Errorf("%s: origin %q", key, origins[key])
		}
	}
	if err := (Overrides{Placement: "explore=moon"}).Apply(&cfg); !errors.Is(err, ErrUsage) {
		t.Errorf("bad placement: %v", err)
	}
	env := map[string]string{"TROUPE_NATS_URL": "nats://x:1"}
	if s := (Overrides{}).NATSSetting(func(k string) string { return env[k] }); s != "TROUPE_NATS_URL" {
		t.Errorf("setting %q", s)
	}
	if s := (Overrides{NATS: "nats://y:1"}).NATSSetting(func(k string) string { return env[k] }); s != "--nats" {
		t.Errorf("setting %q", s)
	}
}
