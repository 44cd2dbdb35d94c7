package cluster

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/bus"
	"github.com/troupe-ai/troupe/llm/llmtest"
)

// logLines is a zerolog writer the test reads.
type logLines struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logLines) has(s string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Contains(l.b.String(), s)
}

// authBus is an embedded server in operator mode; dial connects with
// creds.
func authBus(t *testing.T) (*bus.Auth, func(creds []byte) *bus.Conn) {
	t.Helper()
	a, err := bus.NewAuth(bus.DefaultPrefix)
	if err != nil {
		t.Fatal(err)
	}
	e, err := bus.StartEmbedded(t.Context(), bus.EmbeddedOptions{Ephemeral: true, Auth: a}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Shutdown(context.Background()) })
	return a, func(creds []byte) *bus.Conn {
		c, err := bus.Connect(t.Context(), bus.ConnectOptions{URLs: e.URL(), Creds: creds}, zerolog.Nop())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		return c
	}
}

// A node of its own identity: it waits for the streams (its credentials
// may not make them), takes its name as its ID, refuses a kind or an ID
// its credentials do not grant, and a second process of the same identity
// waits until the first has left the registry.
func TestNodeOfItsOwnIdentity(t *testing.T) {
	a, dial := authBus(t)
	creds := func(b []byte, err error) []byte {
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	n1 := creds(a.NodeCreds("n1", []string{"explore"}))
	srv := llmtest.New(llmtest.Script{})
	defer srv.Close()
	opts := func(c *bus.Conn, log *logLines) NodeOptions {
		return NodeOptions{Bus: c, Kinds: []string{"explore"}, Heartbeat: 250 * time.Millisecond,
			Agent: actors.Options{Workspace: workspace(t), Client: modelClient(t, srv), Models: actors.Models{Default: "big"}, Log: zerolog.Nop()},
			Log:   zerolog.New(log)}
	}
	for _, bad := range []func(o *NodeOptions){
		func(o *NodeOptions) { o.Kinds = []string{"worker"} },
		func(o *NodeOptions) { o.ID = "n2" },
	} {
		o := opts(dial(n1), &logLines{})
		bad(&o)
		if n, err := StartNode(t.Context(), o); err == nil {
			n.Drain(context.Background())
			t.Fatalf("a node started with %v/%q its credentials do not grant", o.Kinds, o.ID)
		}
	}
	if _, err := StartNode(t.Context(), NodeOptions{Bus: dial(n1), Kinds: []string{"worker"}}); !errors.Is(err, ErrKindNotGranted) {
		t.Errorf("a kind not granted: %v", err)
	}

	// The first process: it waits for the streams the requester makes.
	log1 := &logLines{}
	first := make(chan *Node, 1)
	go func() {
		n, err := StartNode(t.Context(), opts(dial(n1), log1))
		if err != nil {
			t.Error(err)
		}
		first <- n
	}()
	checkFor(t, 30*time.Second, func() error {
		if !log1.has("waiting for troupe's streams") {
			return errors.New("the node does not say it waits for the streams")
		}
		return nil
	})
	if err := dial(creds(a.Creds(bus.RoleRequester))).EnsureStreams(t.Context(), bus.StreamLimits{}); err != nil {
		t.Fatal(err)
	}
	var a1 *Node
	select {
	case a1 = <-first:
	case <-time.After(30 * time.Second):
		t.Fatal("the node did not start once the streams existed")
	}
	if a1 == nil {
		t.FailNow()
	}
	if a1.ID() != "n1" {
		t.Errorf("ID %q, want its credentials' name n1", a1.ID())
	}

	// A second process of n1 waits while the first beats.
	log2 := &logLines{}
	var drained atomic.Bool
	second := make(chan *Node, 1)
	go func() {
		n, err := StartNode(t.Context(), opts(dial(n1), log2))
		if err != nil {
			t.Error(err)
		}
		if !drained.Load() {
			t.Error("a second process of n1 started while the first still ran")
		}
		second <- n
	}()
	checkFor(t, 30*time.Second, func() error {
		if !log2.has("another process runs as this node") {
			return errors.New("the second process does not say it waits for the first")
		}
		return nil
	})
	drained.Store(true)
	if err := a1.Drain(t.Context()); err != nil {
		t.Fatal(err)
	}
	select {
	case n := <-second:
		if n != nil {
			n.Drain(context.Background())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the second process did not start once the first left")
	}
}
