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
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/troupe-ai/troupe/internal/peer"
)

const monitoringHeading = "## Web view, Prometheus metrics and troupe over MCP"

// startLine runs a README command line in the background (its ports
// replaced) and waits for its stderr to match ready; it returns the match.
func startLine(t *testing.T, dir string, env []string, line string, ready *regexp.Regexp) []string {
	t.Helper()
	c := exec.Command("bash", "-c", "exec "+line)
	c.Dir, c.Env = dir, append(os.Environ(), env...)
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	errb := &syncBuffer{}
	c.Stderr = errb
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(-c.Process.Pid, syscall.SIGINT); _ = c.Wait() })
	deadline := time.Now().Add(3 * time.Minute)
	for {
		if m := ready.FindStringSubmatch(errb.String()); m != nil {
			return m
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never got ready:\n%s", line, errb.String())
		}
		<-time.After(50 * time.Millisecond)
	}
}

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

// The monitoring section's commands work as written (ports made free):
// serve --http serves the page and /metrics, watch --web the page, a node
// with --http its own metrics counting itself; the token block serves
// beyond loopback with the token auth init wrote, which curl and
// Prometheus (with the README's configuration) use; the .mcp.json line
// starts an MCP server whose tools an MCP client lists, and mcp --http
// answers only with the token.
func TestReadmeMonitoring(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the README's commands")
	}
	root := repoRoot(t)
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	lines := commandLines(shBlocks(t, string(readme), monitoringHeading)[0])
	if len(lines) != 3 {
		t.Fatalf("want the serve, watch and node lines, got %q", lines)
	}
	nats, web, watchWeb, nodeHTTP := freePort(t), freePort(t), freePort(t), freePort(t)
	store := t.TempDir()
	ports := strings.NewReplacer("4222", nats, "8080", web, "8081", watchWeb, "9101", nodeHTTP, "/tmp/troupe-nats", store)
	base := []string{"OPENAI_API_KEY=", "TROUPE_NATS_URL=", "NO_COLOR=1", "OPENAI_BASE_URL=http://127.0.0.1:1/v1"}
	addr := regexp.MustCompile(`(?:web view|metrics) at (http://\S+?)/`)
	serveAt := startLine(t, root, base, ports.Replace(lines[0]), addr)[1]
	get(t, serveAt+"/", "<title>troupe</title>")
	get(t, serveAt+"/metrics", "troupe_nodes 0")
	watchAt := startLine(t, root, base, ports.Replace(lines[1]), addr)[1]
	get(t, watchAt+"/", "<title>troupe</title>")
	nodeAt := startLine(t, root, base, ports.Replace(lines[2]), addr)[1]
	get(t, nodeAt+"/metrics", "troupe_nodes 1")
	get(t, serveAt+"/metrics", "troupe_nodes 1") // serve saw it join

	// The .mcp.json line, with go run in place of an installed binary.
	m := regexp.MustCompile("(?s)```json\n(.*?)```").FindStringSubmatch(string(readme)[strings.Index(string(readme), monitoringHeading):])
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
	s := cfg.MCPServers["troupe"]
	if s.Command != "orchestrator" {
		t.Fatalf(".mcp.json runs %q", s.Command)
	}
	cmd := exec.Command("go", append([]string{"run", "./cmd/orchestrator"}, s.Args...)...)
	cmd.Dir, cmd.Env = root, append(os.Environ(), append(base, "TROUPE_NATS_URL=nats://127.0.0.1:"+nats,
		"TROUPE_NATS_CREDS="+filepath.Join(store, "creds", "requester.creds"))...)
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

	blocks := shBlocks(t, string(readme), monitoringHeading)
	if len(blocks) != 3 {
		t.Fatalf("want the loopback, token and MCP-over-HTTP blocks, got %d", len(blocks))
	}
	auth := t.TempDir()
	tokenCommands(t, root, base, string(readme), auth)

	// MCP over HTTP with the token, its events on the first serve.
	mcpLines := commandLines(blocks[2])
	mcpPort := freePort(t)
	mcpEnv := append(base, "TROUPE_NATS_URL=nats://127.0.0.1:"+nats, "TROUPE_NATS_CREDS="+filepath.Join(store, "creds", "requester.creds"))
	at := startLine(t, root, mcpEnv, strings.NewReplacer("8765", mcpPort, "/tmp/troupe-auth", auth).Replace(mcpLines[0]),
		regexp.MustCompile(`MCP over streamable HTTP at (http://\S+)`))[1]
	tok, _ := os.ReadFile(filepath.Join(auth, "http.token"))
	for _, bearer := range []string{"", strings.TrimSpace(string(tok))} {
		req, _ := http.NewRequest("POST", at, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"readme","version":"1"}}}`))
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

// tokenCommands runs the token block as written (ports and folders made
// free): auth init writes the token, serve beyond loopback serves with it,
// the curl line reads /metrics with it, and a real Prometheus configured
// with the README's scrape configuration scrapes it.
func tokenCommands(t *testing.T, root string, base []string, readme, auth string) {
	t.Helper()
	lines := commandLines(shBlocks(t, readme, monitoringHeading)[1])
	if len(lines) != 3 {
		t.Fatalf("want the auth init, serve and curl lines, got %q", lines)
	}
	nats, web := freePort(t), freePort(t)
	ports := strings.NewReplacer("4222", nats, "8080", web, "/tmp/troupe-nats", t.TempDir(), "/tmp/troupe-auth", auth)
	if _, errs, code := sh(t, root, base, ports.Replace(lines[0]), 3*time.Minute); code != 0 {
		t.Fatalf("%s: exit %d\n%s", lines[0], code, errs)
	}
	startLine(t, root, base, ports.Replace(lines[1]), regexp.MustCompile(`web view at (http://\S+?)/`))
	if resp, err := http.Get("http://127.0.0.1:" + web + "/metrics"); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("/metrics without the token: %v %v", err, resp)
	} else {
		resp.Body.Close()
	}
	if out, errs, code := sh(t, root, base, ports.Replace(lines[2]), time.Minute); code != 0 || !strings.Contains(out, "troupe_nodes 0") {
		t.Errorf("%s: exit %d\n%s\n%s", lines[2], code, out, errs)
	}
	m := regexp.MustCompile("(?s)```yaml\n(.*?)```").FindStringSubmatch(readme[strings.Index(readme, monitoringHeading):])
	if m == nil {
		t.Fatal("no Prometheus block")
	}
	prometheus(t, ports.Replace(m[1]))
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
