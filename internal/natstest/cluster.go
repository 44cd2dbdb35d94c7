// Package natstest runs a NATS cluster with JetStream for tests, one
// process per server, so that a test can SIGKILL a server as a power cut
// or a crash would (an in-process server's Shutdown hands its leaderships
// over first, which a lost server never does). The processes are the
// test binary itself, started again: a test package that uses it calls
// Main from its TestMain.
package natstest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/troupe-ai/troupe/internal/testport"
)

// envServer carries a child process's server settings.
const envServer = "TROUPE_NATSTEST_SERVER"

// spec is one server of a cluster.
type spec struct {
	Name, Cluster, Store string
	Port, RoutePort      int
	Routes               []string
	SyncAlways           bool
}

// Main runs the tests, or, in a process a Cluster started, its server
// until the process is killed.
func Main(m *testing.M) {
	ServeIfChild()
	os.Exit(m.Run())
}

// ServeIfChild runs the server of a process a Cluster started, until it is
// killed, and does nothing in any other: for a TestMain that does more
// than Main.
func ServeIfChild() {
	if v := os.Getenv(envServer); v != "" {
		serve(v)
		os.Exit(0)
	}
}

func serve(v string) {
	var sp spec
	if err := json.Unmarshal([]byte(v), &sp); err != nil {
		fmt.Fprintln(os.Stderr, "natstest:", err)
		os.Exit(2)
	}
	opts := &server.Options{ServerName: sp.Name, Host: "127.0.0.1", Port: sp.Port, JetStream: true, StoreDir: sp.Store,
		NoLog: true, NoSigs: true, SyncAlways: sp.SyncAlways,
		Cluster: server.ClusterOpts{Name: sp.Cluster, Host: "127.0.0.1", Port: sp.RoutePort}}
	for _, r := range sp.Routes {
		u, err := url.Parse(r)
		if err != nil {
			fmt.Fprintln(os.Stderr, "natstest:", err)
			os.Exit(2)
		}
		opts.Routes = append(opts.Routes, u)
	}
	s, err := server.NewServer(opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "natstest:", err)
		os.Exit(2)
	}
	go s.Start()
	if !s.ReadyForConnections(time.Minute) {
		fmt.Fprintln(os.Stderr, "natstest: server not ready")
		os.Exit(2)
	}
	fmt.Println("ready")
	s.WaitForShutdown()
}

// Cluster is a cluster of server processes.
type Cluster struct {
	t     testing.TB
	specs []spec
	procs []*exec.Cmd
	exits []chan struct{}
}

// Options shape a cluster.
type Options struct {
	// SyncAlways flushes every write to disk before acknowledging it.
	SyncAlways bool
}

// Start starts n servers (named a, b, c, ...) routed to each other, each
// with a store of its own, and waits until JetStream answers. The test's
// end kills them.
func Start(t testing.TB, n int, o Options) *Cluster {
	t.Helper()
	c := &Cluster{t: t, procs: make([]*exec.Cmd, n), exits: make([]chan struct{}, n)}
	var routes []string
	for i := 0; i < n; i++ {
		sp := spec{Name: string(rune('a' + i)), Cluster: "natstest", Store: t.TempDir(), Port: testport.Free(t),
			RoutePort: testport.Free(t), SyncAlways: o.SyncAlways}
		routes = append(routes, "nats-route://127.0.0.1:"+strconv.Itoa(sp.RoutePort))
		c.specs = append(c.specs, sp)
	}
	for i := range c.specs {
		c.specs[i].Routes = routes
		c.Start(i)
	}
	t.Cleanup(func() {
		for i := range c.procs {
			c.Kill(i)
		}
	})
	c.WaitJetStream(2 * time.Minute)
	return c
}

// Start starts server i (again: same ports, same store) and waits until
// it accepts clients.
func (c *Cluster) Start(i int) {
	c.t.Helper()
	b, _ := json.Marshal(c.specs[i])
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envServer+"="+string(b))
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		c.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	exit := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exit) }()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "ready" {
		_ = cmd.Process.Kill()
		c.t.Fatalf("server %s did not start: %q %v", c.specs[i].Name, line, err)
	}
	c.procs[i], c.exits[i] = cmd, exit
}

// Kill SIGKILLs server i (a no-op when it is down) and waits for it to
// be gone.
func (c *Cluster) Kill(i int) {
	if c.procs[i] == nil {
		return
	}
	_ = c.procs[i].Process.Signal(syscall.SIGKILL)
	<-c.exits[i]
	c.procs[i] = nil
}

// URL is server i's client URL.
func (c *Cluster) URL(i int) string { return "nats://127.0.0.1:" + strconv.Itoa(c.specs[i].Port) }

// URLs are every server's client URLs, comma-separated, as clients are
// given them.
func (c *Cluster) URLs() string {
	var out []string
	for i := range c.specs {
		out = append(out, c.URL(i))
	}
	return strings.Join(out, ",")
}

// Index is the index of the server named name (-1 for none).
func (c *Cluster) Index(name string) int {
	for i, sp := range c.specs {
		if sp.Name == name {
			return i
		}
	}
	return -1
}

// WaitJetStream waits (at most d) until JetStream answers on the servers
// that are up.
func (c *Cluster) WaitJetStream(d time.Duration) {
	c.t.Helper()
	deadline := time.Now().Add(d)
	for i := range c.specs {
		if c.procs[i] == nil {
			continue
		}
		nc, err := nats.Connect(c.URL(i))
		if err != nil {
			c.t.Fatal(err)
		}
		js, _ := jetstream.New(nc)
		for {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			_, err := js.AccountInfo(ctx)
			cancel()
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				nc.Close()
				c.t.Fatalf("JetStream of server %s not ready after %v: %v", c.specs[i].Name, d, err)
			}
			<-time.After(100 * time.Millisecond)
		}
		nc.Close()
	}
}

// Leader is the name of the server leading stream's raft group, asked
// through nc.
func Leader(ctx context.Context, js jetstream.JetStream, stream string) (string, error) {
	s, err := js.Stream(ctx, stream)
	if err != nil {
		return "", err
	}
	info, err := s.Info(ctx)
	if err != nil {
		return "", err
	}
	if info.Cluster == nil || info.Cluster.Leader == "" {
		return "", fmt.Errorf("stream %s has no leader", stream)
	}
	return info.Cluster.Leader, nil
}
