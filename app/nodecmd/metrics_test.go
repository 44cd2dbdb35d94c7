package nodecmd

import (
	"context"
	"github.com/troupe-ai/troupe/internal/httpguard/guardtest"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/bus"
)

type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// poll polls cond every 50 ms for up to 30 s.
func poll(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not met in 30s: %s", what)
		}
		<-time.After(50 * time.Millisecond)
	}
}

// A node started with --http serves its own metrics: who it is and what
// it did with tasks, beside its process's health, and none of the swarm's
// figures that serve and watch --web count from events.
func TestNodeServesMetrics(t *testing.T) {
	emb, err := bus.StartEmbedded(t.Context(), bus.EmbeddedOptions{Ephemeral: true}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer emb.Shutdown(context.Background())
	ctx, cancel := context.WithCancel(t.Context())
	stderr := &syncBuffer{}
	done := make(chan int, 1)
	go func() {
		done <- Run(ctx, []string{"--nats", emb.URL(), "--workspace", t.TempDir(), "--slots", "3", "--http", "127.0.0.1:0"},
			func(k string) string { return map[string]string{"OPENAI_BASE_URL": "http://127.0.0.1:1/v1"}[k] }, io.Discard, stderr)
	}()
	defer func() { cancel(); <-done }()
	addr := regexp.MustCompile(`metrics at (http://\S+/metrics)`)
	var url string
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("node stderr:\n%s", stderr)
		}
	})
	poll(t, "the node says where its metrics are", func() bool {
		m := addr.FindStringSubmatch(stderr.String())
		if m != nil {
			url = m[1]
		}
		return m != nil
	})
	ready := regexp.MustCompile(`node (node-\S+) ready`)
	var id, body string
	poll(t, "the node is ready and its metrics name it", func() bool {
		m := ready.FindStringSubmatch(stderr.String())
		if m == nil {
			return false
		}
		id = m[1]
		resp, err := http.Get(url)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		body = string(b)
		return strings.Contains(body, `troupe_node_info{name="`)
	})
	host, _ := os.Hostname()
	for _, want := range []string{`troupe_node_info{name="` + host + `",node="` + id + `",version="dev"} 1`,
		"troupe_node_tasks_taken_total 0", `troupe_node_tasks_refused_total{reason="malformed"} 0`, "go_goroutines ", "process_resident_memory_bytes "} {
		if !strings.Contains(body, want) {
			t.Errorf("the node's /metrics lack %q", want)
		}
	}
	for _, swarm := range []string{"troupe_tokens_total", "troupe_agents", "troupe_nodes", "troupe_node_free_slots", "troupe_events_total"} {
		if strings.Contains(body, swarm) {
			t.Errorf("the node's /metrics have %s, which serve counts", swarm)
		}
	}
	checkNodeMetricsDoc(t, body)
}

// checkNodeMetricsDoc checks docs/metrics.md's table of a node's own
// metrics against a scrape of them: the same troupe_* families, types
// and label names.
func checkNodeMetricsDoc(t *testing.T, scrape string) {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "metrics.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(doc), "\nA node's own metrics")
	if !ok {
		t.Fatal("docs/metrics.md has no table of a node's own metrics")
	}
	want := map[string]string{} // name → "type label,label"
	for _, line := range strings.Split(table, "\n")[1:] {
		if line != "" && !strings.HasPrefix(line, "|") {
			break
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if len(cells) != 4 || !strings.HasPrefix(strings.TrimSpace(cells[0]), "`") {
			continue
		}
		var labels []string
		for _, m := range regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(regexp.MustCompile(`\([^)]*\)`).ReplaceAllString(cells[2], ""), -1) {
			labels = append(labels, m[1])
		}
		slices.Sort(labels)
		want[strings.Trim(strings.TrimSpace(cells[0]), "`")] = strings.TrimSpace(cells[1]) + " " + strings.Join(labels, ",")
	}
	got := map[string]string{}
	types := regexp.MustCompile(`(?m)^# TYPE (troupe_\S+) (\S+)$`)
	for _, m := range types.FindAllStringSubmatch(scrape, -1) {
		var labels []string
		for _, s := range regexp.MustCompile(`(?m)^`+m[1]+`\{([^}]*)\}`).FindAllStringSubmatch(scrape, -1) {
			for _, kv := range strings.Split(s[1], ",") {
				if k, _, ok := strings.Cut(kv, "="); ok && !slices.Contains(labels, k) {
					labels = append(labels, k)
				}
			}
		}
		slices.Sort(labels)
		got[m[1]] = m[2] + " " + strings.Join(labels, ",")
	}
	if len(want) == 0 || !maps.Equal(got, want) {
		t.Errorf("a node's troupe_* metrics are %v; docs/metrics.md says %v", got, want)
	}
}

// --http beyond loopback is refused without --http-public, and
// --http-public without a token.
func TestNodeMetricsLoopbackOnly(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--http", "0.0.0.0:0"}, "--http-public"},
		{[]string{"--http", "0.0.0.0:0", "--http-public"}, "--http-public needs --http-token-file"},
		{[]string{"--http-token-file", "x"}, "go with --http ADDR"},
	} {
		var errb syncBuffer
		code := Run(t.Context(), append([]string{"--nats", "nats://127.0.0.1:1", "--workspace", t.TempDir()}, c.args...),
			func(string) string { return "" }, io.Discard, &errb)
		if code != 2 || !strings.Contains(errb.String(), c.want) {
			t.Errorf("%v: exit %d, %s; want a usage error saying %q", c.args, code, errb.String(), c.want)
		}
	}
}

// A node's /metrics answers no foreign Host (DNS rebinding), and with
// --http-token-file only requests with the token.
func TestNodeMetricsGuarded(t *testing.T) {
	emb, err := bus.StartEmbedded(t.Context(), bus.EmbeddedOptions{Ephemeral: true}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer emb.Shutdown(context.Background())
	const tok = "node-metrics-token-0123456789abcdef"
	tf := filepath.Join(t.TempDir(), "http.token")
	if err := os.WriteFile(tf, []byte(tok+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	stderr := &syncBuffer{}
	done := make(chan int, 1)
	go func() {
		done <- Run(ctx, []string{"--nats", emb.URL(), "--workspace", t.TempDir(), "--http", "127.0.0.1:0", "--http-token-file", tf},
			func(k string) string { return map[string]string{"OPENAI_BASE_URL": "http://127.0.0.1:1/v1"}[k] }, io.Discard, stderr)
	}()
	defer func() { cancel(); <-done }()
	addr := regexp.MustCompile(`metrics at (http://\S+/metrics)`)
	poll(t, "the node says where its metrics are", func() bool { return addr.MatchString(stderr.String()) })
	url := addr.FindStringSubmatch(stderr.String())[1]
	get := func(header map[string]string) (int, string) { return guardtest.Send(t, "GET", url, "", header) }
	guardtest.Refusals(t, get, tok, "troupe_")
	poll(t, "the node's own metrics with the token", func() bool { // the node's figures once it has started
		code, body := get(map[string]string{"Authorization": "Bearer " + tok})
		return code == http.StatusOK && strings.Contains(body, "troupe_node_info{")
	})
}
