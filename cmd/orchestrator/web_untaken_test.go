package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/troupe-ai/troupe/llm/llmtest"
)

// A remote child no node ever takes (no node serves its kind) ends
// failed where users look, each through the client they use: the web
// view in Chromium shows its row and its timeline bar failed, with the
// placement's reason on hover, and a plain scrape of serve's /metrics
// counts it ended failed and no explore agent still spawned.
func TestUntakenChildFailsInWebViewAndMetrics(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Chromium")
	}
	s, web := serveWithHTTP(t)
	srv := llmtest.New(llmtest.Script{Agents: []llmtest.AgentScript{
		{Match: llmtest.Matcher{Kind: "root"}, Turns: []llmtest.Turn{
			{ToolCalls: []llmtest.ToolCall{{Name: "delegate", Args: json.RawMessage(`{"type":"explore","task":"where is main?"}`)}}},
			{Text: "done without it"}}},
	}})
	t.Cleanup(srv.Close)
	cfg := filepath.Join(t.TempDir(), "troupe.yaml")
	if err := os.WriteFile(cfg, []byte("node:\n  placement_timeout: 1s\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runCmd(t, t.Context(), testEnv(srv, t.TempDir()), false, "--workspace", t.TempDir(), "--yes", "--quiet",
		"--config", cfg, "--nats", s.url, "--placement", "explore=remote", "find main")
	if code != exitSubFailed || !strings.Contains(out, "done without it") {
		t.Fatalf("run: exit %d\n%s\n%s", code, out, errs)
	}
	run, agents, _, _ := runEvents(t, s.url)
	child := ""
	for _, a := range agents {
		if strings.HasPrefix(a, "explore") {
			child = a
		}
	}
	if child == "" {
		t.Fatalf("no explore agent among %v", agents)
	}

	ended := regexp.MustCompile(`(?m)^troupe_agents_ended_total\{[^}]*kind="explore"[^}]*status="failed"[^}]*\} 1$`)
	spawned := regexp.MustCompile(`(?m)^troupe_agents\{[^}]*kind="explore"[^}]*status="spawned"[^}]*\} [1-9]`)
	var metrics string
	pollUntil(t, "serve's /metrics counts the child failed", func() bool {
		resp, err := http.Get("http://" + web + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		metrics = string(b)
		return ended.MatchString(metrics)
	})
	if spawned.MatchString(metrics) {
		t.Errorf("an explore agent still counted spawned:\n%s", metrics)
	}

	page := probedBrowser(t, len(agents))
	page.navigate("http://" + web + "/#/run/" + run)
	row := `(document.getElementById("agent-` + child + `") || {}).innerText || ""`
	pollUntil(t, "the web view shows the child failed", func() bool { return strings.Contains(page.eval(row), "failed") })
	bar := `document.querySelector('svg.timeline rect.bar[data-agent="` + child + `"]')`
	if got := page.eval(bar + `.getAttribute("class")`); got != "bar failed" {
		t.Errorf("the child's timeline bar is %q, want failed", got)
	}
	tip := page.eval(`(() => { const b = ` + bar + `; b.dispatchEvent(new MouseEvent("mouseover", {bubbles: true})); return b.querySelector("title").textContent; })()`)
	if !strings.Contains(tip, "failed") || !strings.Contains(tip, `no live node serves kind`) {
		t.Errorf("the child's hover text %q lacks its end and the reason", tip)
	}
}
