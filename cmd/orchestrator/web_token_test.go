package main

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/troupe-ai/troupe/internal/peer"
	"github.com/troupe-ai/troupe/llm/llmtest"
)

// The web view served beyond loopback (--http-public) with a token: a
// request without the token gets nothing; headless Chromium, opening the
// page once with ?token=, gets an HttpOnly cookie (the page's scripts
// cannot read it), lands on the page without the token in its URL and
// shows the run live; a real Prometheus scrapes /metrics with the token
// in its authorization setting, and a job without it is refused.
func TestServeHTTPPublicWithToken(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Prometheus and Chromium")
	}
	peer.Need(t, "prometheus")
	peer.Need(t, "chromium")
	const tok = "serve-web-token-0123456789abcdef0123"
	tf := filepath.Join(t.TempDir(), "http.token")
	if err := os.WriteFile(tf, []byte(tok+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startServe(t, "--listen", "127.0.0.1:0", "--no-auth", "--http", "0.0.0.0:0", "--http-public", "--http-token-file", tf)
	m := regexp.MustCompile(`web view at http://\S+:(\d+)/`).FindStringSubmatch(s.stderr.String())
	if m == nil || !strings.Contains(s.stderr.String(), "?token=TOKEN") {
		t.Fatalf("serve did not say where the web view is and how to get in:\n%s", s.stderr)
	}
	web := net.JoinHostPort("127.0.0.1", m[1])
	for _, path := range []string{"/", "/metrics", "/events"} {
		resp, err := http.Get("http://" + web + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s without the token: %d, want 401", path, resp.StatusCode)
		}
	}
	prom := runPrometheus(t, fmt.Sprintf("  - job_name: troupe\n    authorization: {type: Bearer, credentials_file: %q}\n    static_configs:\n      - targets: [%q]\n"+
		"  - job_name: stranger\n    static_configs:\n      - targets: [%q]\n", tf, web, web))
	page := startBrowser(t, "http://"+web+"/")
	pollUntil(t, "the page without the token says it needs one", func() bool {
		return strings.Contains(page.eval("document.body && document.body.innerText"), "unauthorized")
	})
	page.navigate("http://" + web + "/?token=" + tok)
	pollUntil(t, "the browser lands on the page without the token in its URL", func() bool {
		return page.eval("location.href") == "http://"+web+"/" && strings.Contains(page.eval("document.title"), "troupe")
	})
	if c := page.eval("document.cookie"); c != "" {
		t.Errorf("the page's scripts read the cookie %q; want it HttpOnly", c)
	}

	srv := llmtest.New(webScript())
	t.Cleanup(srv.Close)
	code, out, errs := runCmd(t, t.Context(), testEnv(srv, t.TempDir()), false, "--workspace", metricsWorkspace(t), "--yes", "--quiet",
		"--nats", s.url, "look at everything")
	if code != exitOK || !strings.Contains(out, "all looked at") {
		t.Fatalf("run: exit %d\n%s\n%s", code, out, errs)
	}
	run, agents, total, _ := runEvents(t, s.url)
	page.navigate("http://" + web + "/#/run/" + run)
	checkPage(t, page, agents, total)
	page.screenshot(filepath.Join(t.ArtifactDir(), "web-view-token.png"))

	pollUntil(t, "prometheus scraped troupe with the token, and not the stranger", func() bool {
		up := promQueryBy(t, prom, "up", "job")
		runs := promQueryBy(t, prom, "sum(troupe_runs_finished_total)", "")
		return up["troupe"] == 1 && up["stranger"] == 0 && runs[""] >= 1
	})
}

// promQueryBy asks Prometheus' query API and returns each series' value
// by its label (or "" for an unlabelled result).
func promQueryBy(t *testing.T, addr, q, label string) map[string]float64 {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/api/v1/query?query=" + url.QueryEscape(q))
	if err != nil {
		return nil // not up yet
	}
	defer resp.Body.Close()
	var r struct {
		Data struct {
			Result []struct {
				Metric map[string]string `json:"metric"`
				Value  [2]any            `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if json.NewDecoder(resp.Body).Decode(&r) != nil {
		return nil
	}
	out := map[string]float64{}
	for _, s := range r.Data.Result {
		v, _ := strconv.ParseFloat(fmt.Sprint(s.Value[1]), 64)
		out[s.Metric[label]] = v
	}
	return out
}
