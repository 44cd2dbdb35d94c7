package bus

import (
	"context"
	"net"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/internal/peer"
	"github.com/troupe-ai/troupe/internal/testfiles"
	"github.com/troupe-ai/troupe/internal/testport"
	"github.com/troupe-ai/troupe/messages"
)

// embedded starts a real in-process server with JetStream on a random
// loopback port and connects to it.
func embedded(t testing.TB) (*Embedded, *Conn) {
	t.Helper()
	e, c := embeddedBare(t)
	if err := c.EnsureStreams(t.Context(), StreamLimits{}); err != nil {
		t.Fatal(err)
	}
	return e, c
}

// event builds agent's seq-th event.
func event(t testing.TB, run, agent string, seq uint64) messages.Event {
	t.Helper()
	ev, err := messages.NewEvent(run, agent, messages.EvtToolFinished, seq, map[string]any{"tool": "grep", "n": seq})
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

// checkFor polls fn until it returns nil or total passes.
func checkFor(t testing.TB, total time.Duration, fn func() error) {
	t.Helper()
	testfiles.PollEvery(t, total, 5*time.Millisecond, fn)
}

// externalServer is a real nats-server process (the Debian package) with
// JetStream on a free loopback port; stop and start it to test outages.
type externalServer struct {
	t     testing.TB
	bin   string
	port  int
	store string
	cmd   *exec.Cmd
}

func newExternalServer(t testing.TB) *externalServer {
	t.Helper()
	bin, err := exec.LookPath("nats-server")
	if err != nil {
		peer.Missing(t, "nats-server", "not installed (tests/run.sh installs the Debian package); skipping the external-server test")
	}
	s := &externalServer{t: t, bin: bin, port: testport.Free(t), store: t.TempDir()}
	s.start()
	t.Cleanup(s.stop)
	return s
}

func (s *externalServer) url() string { return "nats://127.0.0.1:" + strconv.Itoa(s.port) }

func (s *externalServer) start() {
	s.t.Helper()
	s.cmd = exec.Command(s.bin, "-a", "127.0.0.1", "-p", strconv.Itoa(s.port), "-js", "-sd", s.store)
	if err := s.cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	checkFor(s.t, 15*time.Second, func() error {
		c, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)))
		if err != nil {
			return err
		}
		c.Close()
		return nil
	})
}

func (s *externalServer) stop() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	_ = s.cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		<-done
	}
	s.cmd = nil
}

// embeddedBare is embedded without troupe's streams.
func embeddedBare(t testing.TB) (*Embedded, *Conn) {
	t.Helper()
	e, err := StartEmbedded(t.Context(), EmbeddedOptions{StoreDir: t.TempDir()}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Shutdown(context.Background()) })
	c, err := Connect(t.Context(), ConnectOptions{URLs: e.URL()}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return e, c
}
