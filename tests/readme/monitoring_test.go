package readme

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/troupe-ai/troupe/internal/peer"
)

const monitoringHeading = "## Web view, Prometheus metrics and troupe over MCP"

// get polls url until its body holds want.
func get(t *testing.T, url, want string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		if resp, err := http.Get(url); err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if strings.Contains(string(b), want) {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never held %q", url, want)
		}
		<-time.After(100 * time.Millisecond)
	}
}

// curlUntil runs a README curl line until its output holds want (the
// metrics are read in the background: a scrape shows a new node a moment
// after it joined).
func curlUntil(t *testing.T, s *session, line, want string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		out, errs, code := s.run(line, time.Minute)
		if strings.Contains(out, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: exit %d, no %q in\n%s\n%s", s.repl.Replace(line), code, want, out, errs)
		}
		<-time.After(100 * time.Millisecond)
	}
}

// The monitoring section's commands work as written, after the try-out
// block and the worker pool's (ports and folders made free): serve --http
// serves the page and /metrics (the queue's depth, the node), watch --web
// with the watcher's credentials the same page, the node with --http its
// own metrics; the token block serves a second hub beyond loopback with
// the token auth init wrote, which curl and Prometheus (with the README's
// configuration) use; the .mcp.json line starts an MCP server whose tools
// an MCP client lists, and mcp --http answers only with the token.
func TestReadmeMonitoring(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the README's commands")
	}
	readme := readmeText(t)
	store, auth := t.TempDir(), t.TempDir()
	s := repoSession(t, strings.NewReplacer("4222", freePort(t), "8080", freePort(t), "8081", freePort(t), "9101", freePort(t),
		"4223", freePort(t), "8082", freePort(t), "8765", freePort(t), "/tmp/troupe-nats-2", t.TempDir(), "/tmp/troupe-nats", store,
		"/tmp/troupe-auth", auth), "OPENAI_API_KEY=", "OPENAI_BASE_URL=", "TROUPE_NATS_URL=", "TROUPE_NATS_CREDS=")
	tryOut(t, s, readme)
	pool := commandLines(shBlocks(t, readme, "## A worker pool across machines")[0])
	serveErr := ""
	for _, line := range pool {
		out, errs := s.must(line, 3*time.Minute)
		if serveErr == "" {
			serveErr = errs
		}
		if !strings.HasSuffix(line, "&") && !strings.HasPrefix(out, "(scripted model)") {
			t.Fatalf("%s: %s\n%s", line, out, errs)
		}
	}
	addr := regexp.MustCompile(`web view at (http://\S+?)/`)
	serveAt := addr.FindStringSubmatch(serveErr)
	if serveAt == nil {
		t.Fatalf("serve did not say where its page is:\n%s", serveErr)
	}
	get(t, serveAt[1]+"/", "<title>troupe</title>")
	lines := commandLines(shBlocks(t, readme, monitoringHeading)[0])
	if len(lines) != 3 {
		t.Fatalf("want the watch, serve curl and node curl lines, got %q", lines)
	}
	_, watchErr := s.must(lines[0], time.Minute)
	watchAt := addr.FindStringSubmatch(watchErr)
	if watchAt == nil {
		t.Fatalf("watch --web did not say where its page is:\n%s", watchErr)
	}
	get(t, watchAt[1]+"/", "<title>troupe</title>")
	get(t, watchAt[1]+"/metrics", "troupe_queue_depth 0")
	curlUntil(t, s, lines[1], "troupe_nodes 1") // serve sees the node in the registry
	curlUntil(t, s, lines[1], "troupe_queue_depth 0")
	curlUntil(t, s, lines[2], "troupe_node_info{")

	mcpStdio(t, s, readme)
	blocks := shBlocks(t, readme, monitoringHeading)
	if len(blocks) != 3 {
		t.Fatalf("want the watcher, token and MCP-over-HTTP blocks, got %d", len(blocks))
	}
	tokenCommands(t, s, readme)

	// MCP over HTTP with the token, its events on the first hub.
	mcpLines := commandLines(blocks[2])
	s.env = append(s.env, "TROUPE_NATS_URL="+s.repl.Replace("nats://127.0.0.1:4222"),
		"TROUPE_NATS_CREDS="+filepath.Join(store, "creds", "requester.creds"))
	_, errs := s.must(mcpLines[0], time.Minute)
	at := regexp.MustCompile(`MCP over streamable HTTP at (http://\S+)`).FindStringSubmatch(errs)
	if at == nil {
		t.Fatalf("%s said:\n%s", mcpLines[0], errs)
	}
	tok, _ := os.ReadFile(filepath.Join(auth, "http.token"))
	for _, bearer := range []string{"", strings.TrimSpace(string(tok))} {
		req, _ := http.NewRequest("POST", at[1], strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"readme","version":"1"}}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if ok := resp.StatusCode == http.StatusOK && strings.Contains(string(b), "serverInfo"); ok != (bearer != "") {
			t.Errorf("MCP initialize with token %v: %d %s", bearer != "", resp.StatusCode, b)
		}
	}
}

// mcpStdio starts the .mcp.json line's command as Claude Code would (the
// orchestrator on PATH, events to the hub with the requester's creds): an
// MCP client lists its tools, and its explore tool, waited for, answers
// (the scripted model's answer).
func mcpStdio(t *testing.T, s *session, readme string) {
	t.Helper()
	m := regexp.MustCompile("(?s)```json\n(.*?)```").FindStringSubmatch(readme[strings.Index(readme, monitoringHeading):])
	if m == nil {
		t.Fatal("no .mcp.json block")
	}
	var cfg struct {
		MCPServers map[string]struct {
			Command string   `json:"command"`
			Args    []string `json:"args"`
		} `json:"mcpServers"`
	}
	if err := json.Unmarshal([]byte(m[1]), &cfg); err != nil {
		t.Fatalf(".mcp.json: %v", err)
	}
	srv := cfg.MCPServers["troupe"]
	if srv.Command != "orchestrator" {
		t.Fatalf(".mcp.json runs %q", srv.Command)
	}
	cmd := exec.Command("bash", append([]string{"-c", `exec "$0" "$@"`, srv.Command}, srv.Args...)...)
	cmd.Dir = s.dir
	cmd.Env = append(os.Environ(), append(slices.Clone(s.env), "TROUPE_NATS_URL="+s.repl.Replace("nats://127.0.0.1:4222"),
		"TROUPE_NATS_CREDS="+s.repl.Replace("/tmp/troupe-nats/creds/requester.creds"))...)
	client := mcp.NewClient(&mcp.Implementation{Name: "readme", Version: "1"}, nil)
	cs, err := client.Connect(t.Context(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	tools, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
	}
	if !slices.Contains(names, "start_run") || !slices.Contains(names, "explore") {
		t.Errorf("tools %v", names)
	}
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "explore", Arguments: map[string]any{"question": "Where is the budget enforced?", "wait": true}})
	if err != nil || res.IsError {
		t.Fatalf("explore: %v %+v", err, res)
	}
	if b, _ := json.Marshal(res.StructuredContent); !strings.Contains(string(b), "(scripted model)") {
		t.Errorf("explore answered %s", b)
	}
}

// tokenCommands runs the token block as written (ports and folders made
// free): auth init writes the token, a second hub beyond loopback serves
// with it, the curl line reads /metrics with it, and a real Prometheus
// configured with the README's scrape configuration scrapes it.
func tokenCommands(t *testing.T, s *session, readme string) {
	t.Helper()
	lines := commandLines(shBlocks(t, readme, monitoringHeading)[1])
	if len(lines) != 3 {
		t.Fatalf("want the auth init, serve and curl lines, got %q", lines)
	}
	s.must(lines[0], 3*time.Minute)
	s.must(lines[1], 3*time.Minute)
	if resp, err := http.Get(s.repl.Replace("http://127.0.0.1:8082/metrics")); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("/metrics without the token: %v %v", err, resp)
	} else {
		resp.Body.Close()
	}
	curlUntil(t, s, lines[2], "troupe_nodes 0")
	m := regexp.MustCompile("(?s)```yaml\n(.*?)```").FindStringSubmatch(readme[strings.Index(readme, monitoringHeading):])
	if m == nil {
		t.Fatal("no Prometheus block")
	}
	prometheus(t, s.repl.Replace(m[1]))
}

// prometheus runs a real Prometheus with the README's scrape
// configuration (every second) until its troupe job is up.
func prometheus(t *testing.T, scrape string) {
	t.Helper()
	bin := peer.Need(t, "prometheus")
	dir := t.TempDir()
	cfg := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfg, []byte("global:\n  scrape_interval: 1s\n"+scrape), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := "127.0.0.1:" + freePort(t)
	c := exec.Command(bin, "--config.file="+cfg, "--storage.tsdb.path="+filepath.Join(dir, "data"), "--web.listen-address="+addr)
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Process.Kill(); _ = c.Wait() })
	get(t, "http://"+addr+"/api/v1/query?query=up%7Bjob%3D%22troupe%22%7D%3D%3D1", `"job":"troupe"`)
}
