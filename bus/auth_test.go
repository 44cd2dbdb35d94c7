package bus

import (
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/rs/zerolog"
)

// User and password: the right pair connects, a wrong one is a clear
// error naming the settings.
func TestConnectUserPassword(t *testing.T) {
	opts := &server.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true, JetStream: true, StoreDir: t.TempDir(),
		Username: "agent", Password: "correct-horse"}
	s, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("not ready")
	}
	defer s.Shutdown()
	c, err := Connect(t.Context(), ConnectOptions{URLs: s.ClientURL(), User: "agent", Password: "correct-horse"}, zerolog.Nop())
	if err != nil {
		t.Fatalf("right password: %v", err)
	}
	c.Close()
	_, err = Connect(t.Context(), ConnectOptions{URLs: s.ClientURL(), User: "agent", Password: "wrong", Setting: "nats.url"}, zerolog.Nop())
	if err == nil || !strings.Contains(err.Error(), "refused the credentials") || strings.Contains(err.Error(), "wrong") {
		t.Errorf("wrong password: %v", err)
	}
}
