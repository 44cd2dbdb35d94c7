package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/bus"
	"github.com/troupe-ai/troupe/internal/testport"
)

// hub is three `orchestrator serve --cluster` processes sharing the keys
// one `orchestrator auth init` wrote: the deployment the README offers.
type hub struct {
	t     *testing.T
	auth  string // the auth init folder: the creds of each role are there
	procs []*proc
	args  [][]string
	names []string
	urls  []string
}

// startHub starts the three servers and waits until they have made
// troupe's streams.
func startHub(t *testing.T) *hub {
	t.Helper()
	h := &hub{t: t, auth: filepath.Join(t.TempDir(), "auth")}
	ai := start(t, bin.orchestrator, nil, "auth", "init", h.auth)
	if code := ai.wait(time.Minute); code != 0 {
		t.Fatalf("auth init exited %d:\n%s", code, ai.errs())
	}
	var routes []string
	ports := make([][2]int, 3)
	for i := range ports {
		ports[i] = [2]int{testport.Free(t), testport.Free(t)}
		routes = append(routes, "nats-route://127.0.0.1:"+strconv.Itoa(ports[i][1]))
	}
	for i, p := range ports {
		name := string(rune('a' + i))
		h.names = append(h.names, name)
		h.urls = append(h.urls, "nats://127.0.0.1:"+strconv.Itoa(p[0]))
		h.args = append(h.args, []string{"serve", "--listen", "127.0.0.1:" + strconv.Itoa(p[0]), "--store", t.TempDir(),
			"--auth", h.auth, "--cluster", "hub", "--name", name, "--cluster-listen", "127.0.0.1:" + strconv.Itoa(p[1]),
			"--routes", strings.Join(routes, ",")})
	}
	h.procs = make([]*proc, 3)
	for i := range h.procs {
		h.start(i)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for !strings.Contains(h.procs[0].errs()+h.procs[1].errs()+h.procs[2].errs(), "troupe's streams are ready (3 replicas") {
		if time.Now().After(deadline) {
			t.Fatalf("the hub made no streams within 2 minutes:\n%s\n%s\n%s", h.procs[0].errs(), h.procs[1].errs(), h.procs[2].errs())
		}
		<-time.After(50 * time.Millisecond)
	}
	return h
}

// start starts server i (again, on its ports and store) and waits for its
// URL.
func (h *hub) start(i int) {
	h.t.Helper()
	h.procs[i] = start(h.t, bin.orchestrator, []string{"TROUPE_NATS_URL="}, h.args[i]...)
	if url := h.procs[i].firstLine(time.Minute); url != h.urls[i] {
		h.t.Fatalf("server %s serves at %q, want %s", h.names[i], url, h.urls[i])
	}
}

// kill SIGKILLs server i.
func (h *hub) kill(i int) {
	h.t.Helper()
	must(h.t, h.procs[i].cmd.Process.Signal(syscall.SIGKILL))
	<-h.procs[i].done
	h.t.Logf("server %s killed", h.names[i])
}

// url is every server's URL, as clients take them.
func (h *hub) url() string { return strings.Join(h.urls, ",") }

// creds is role's creds file.
func (h *hub) creds(role bus.Role) string { return filepath.Join(h.auth, string(role)+".creds") }

// conn connects to the hub as role.
func (h *hub) conn(role bus.Role) *bus.Conn {
	h.t.Helper()
	c, err := bus.Connect(h.t.Context(), bus.ConnectOptions{URLs: h.url(), CredsFile: h.creds(role)}, zerolog.Nop())
	must(h.t, err)
	h.t.Cleanup(c.Close)
	return c
}

// index is the index of the server named name.
func (h *hub) index(name string) int {
	for i, n := range h.names {
		if n == name {
			return i
		}
	}
	h.t.Fatalf("no server %q", name)
	return -1
}

// streams are the JetStream streams behind everything troupe makes.
func streams(c *bus.Conn) []string {
	n := c.Names()
	return []string{n.Events, n.Tasks, n.Results, "KV_" + n.Nodes, "KV_" + n.Runs, "OBJ_" + n.Artifacts, "OBJ_" + n.Snapshots, "OBJ_" + n.Changes}
}

// leader is the server leading stream (waiting out an election).
func (h *hub) leader(c *bus.Conn, stream string) int {
	h.t.Helper()
	var name string
	poll(h.t, time.Minute, func() error {
		s, err := c.JetStream().Stream(h.t.Context(), stream)
		if err != nil {
			return err
		}
		info, err := s.Info(h.t.Context())
		if err != nil {
			return err
		}
		if info.Cluster == nil || info.Cluster.Leader == "" {
			return fmt.Errorf("stream %s has no leader", stream)
		}
		name = info.Cluster.Leader
		return nil
	})
	return h.index(name)
}

// checkReplicas checks that every stream has three replicas, and, with
// current, that each has a leader and two current followers.
func (h *hub) checkReplicas(c *bus.Conn, current bool) {
	h.t.Helper()
	poll(h.t, 2*time.Minute, func() error {
		for _, name := range streams(c) {
			s, err := c.JetStream().Stream(h.t.Context(), name)
			if err != nil {
				return err
			}
			info, err := s.Info(h.t.Context())
			if err != nil {
				return err
			}
			if info.Config.Replicas != 3 {
				h.t.Fatalf("stream %s has %d replicas, want 3", name, info.Config.Replicas)
			}
			if !current {
				continue
			}
			if info.Cluster == nil || info.Cluster.Leader == "" || len(info.Cluster.Replicas) != 2 {
				return fmt.Errorf("stream %s: cluster %+v", name, info.Cluster)
			}
			for _, p := range info.Cluster.Replicas {
				if !p.Current || p.Offline {
					return fmt.Errorf("stream %s: replica %s not current", name, p.Name)
				}
			}
		}
		return nil
	})
}

// eventsOf reads every stored event of run, through a watcher's eyes.
func (h *hub) eventsOf(run string) []bus.Delivery {
	h.t.Helper()
	c := h.conn(bus.RoleWatcher)
	ctx, cancel := context.WithCancel(h.t.Context())
	defer cancel()
	es, err := c.Events(ctx, bus.WatchOptions{Run: run, FromStart: true})
	must(h.t, err)
	var out []bus.Delivery
	for n := uint64(0); n < es.Backlog; n++ {
		select {
		case d := <-es.C:
			out = append(out, d)
		case <-time.After(time.Minute):
			h.t.Fatalf("read %d of %d stored events", n, es.Backlog)
		}
	}
	return out
}
