package serve

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/app/config"
	"github.com/troupe-ai/troupe/app/runner"
	"github.com/troupe-ai/troupe/bus"
)

func loadConfig(t *testing.T) config.Config {
	t.Helper()
	cfg, err := config.Load(config.Sources{Home: t.TempDir(), Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// A negative stream limit or an unknown sync setting is the user's error.
func TestCheckConfig(t *testing.T) {
	cfg := loadConfig(t)
	if err := CheckConfig(cfg); err != nil {
		t.Fatalf("the default config: %v", err)
	}
	bad := cfg
	bad.NATS.EventsMaxAge = -1
	if err := CheckConfig(bad); !errors.Is(err, runner.ErrUsage) {
		t.Errorf("negative events_max_age: %v", err)
	}
	bad = cfg
	bad.NATS.Sync = "sometimes"
	if err := CheckConfig(bad); !errors.Is(err, runner.ErrUsage) {
		t.Errorf("sync %q: %v", bad.NATS.Sync, err)
	}
}

// On a single server the hub makes troupe's streams at once and owns the
// rate limits; the banner names the server to nodes, runs and watchers.
func TestHubOnASingleServer(t *testing.T) {
	o := bus.EmbeddedOptions{Ephemeral: true}
	emb, err := bus.StartEmbedded(t.Context(), o, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer emb.Shutdown(context.Background())
	cfg := loadConfig(t)
	var stderr strings.Builder
	leave, err := Hub(t.Context(), emb, o, cfg, "", &stderr, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer leave()
	conn, err := bus.Connect(t.Context(), bus.ConnectOptions{URLs: emb.URL()}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, name := range []string{bus.EventsStream, bus.TasksStream, bus.ResultsStream} {
		if _, err := conn.JetStream().Stream(t.Context(), name); err != nil {
			t.Errorf("stream %s: %v", name, err)
		}
	}
	var stdout, banner strings.Builder
	Banner(&stdout, &banner, emb, o, nil)
	if stdout.String() != emb.URL()+"\n" || !strings.Contains(banner.String(), "nodes:    node --nats "+emb.URL()) {
		t.Errorf("banner:\n%s%s", stdout.String(), banner.String())
	}
}
