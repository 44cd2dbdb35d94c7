package bus

import (
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/rs/zerolog"
)

// nats.sync is "always" or a positive interval; "" is the default; the
// embedded server's store takes it.
func TestParseSync(t *testing.T) {
	for _, c := range []struct {
		in     string
		always bool
		every  time.Duration
		bad    bool
	}{
		{in: "always", always: true}, {in: "", every: time.Second}, {in: "2m", every: 2 * time.Minute},
		{in: "500ms", every: 500 * time.Millisecond}, {in: "never", bad: true}, {in: "0s", bad: true}, {in: "-1s", bad: true},
	} {
		always, every, err := ParseSync(c.in)
		if c.bad {
			if err == nil || !strings.Contains(err.Error(), "nats.sync") {
				t.Errorf("%q: %v", c.in, err)
			}
			continue
		}
		if err != nil || always != c.always || every != c.every {
			t.Errorf("%q: always %v every %v err %v", c.in, always, every, err)
		}
	}
	e, err := StartEmbedded(t.Context(), EmbeddedOptions{Ephemeral: true, Sync: SyncAlways}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer e.Shutdown(t.Context())
	if cfg := e.Server().JetStreamConfig(); cfg == nil || !cfg.SyncAlways {
		t.Errorf("the store does not sync always: %+v", cfg)
	}
	if _, err := StartEmbedded(t.Context(), EmbeddedOptions{Ephemeral: true, Sync: "sometimes"}, zerolog.Nop()); err == nil {
		t.Error("a bad nats.sync started a server")
	}
}

// A cluster's size counts this server and each other one its routes name.
func TestClusterSize(t *testing.T) {
	routes := []string{"nats-route://10.0.0.1:6222", "nats-route://10.0.0.2:6222", "nats-route://10.0.0.3:6222"}
	for _, c := range []struct {
		o    EmbeddedOptions
		want int
	}{
		{EmbeddedOptions{}, 1},
		{EmbeddedOptions{ClusterName: "c", ClusterHost: "10.0.0.1", ClusterPort: 6222, Routes: routes}, 3},
		{EmbeddedOptions{ClusterName: "c", ClusterHost: "10.0.0.1", ClusterPort: 6222, Routes: routes[1:]}, 3},
		{EmbeddedOptions{ClusterName: "c", ClusterHost: "10.0.0.1", ClusterPort: 6222, Routes: routes[1:2]}, 2},
		{EmbeddedOptions{ClusterName: "c", Routes: routes}, 4}, // a random route port: none of them is this one
	} {
		if got := c.o.ClusterSize(); got != c.want {
			t.Errorf("%+v: size %d, want %d", c.o, got, c.want)
		}
	}
}

// A server without JetStream is refused at once, with the reason: only
// a JetStream that cannot answer yet is waited for.
func TestConnectWithoutJetStream(t *testing.T) {
	s, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("not ready")
	}
	defer s.Shutdown()
	_, err = Connect(t.Context(), ConnectOptions{URLs: s.ClientURL()}, zerolog.Nop())
	if err == nil || !strings.Contains(err.Error(), "the server has no JetStream") {
		t.Fatalf("connect to a server without JetStream: %v", err)
	}
}
