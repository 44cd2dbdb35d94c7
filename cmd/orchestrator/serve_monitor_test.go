package main

import (
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"
)

// serve --monitor serves NATS's monitoring endpoint (what a KEDA scaler
// and a readiness probe read) and says where; beyond loopback only with
// --monitor-public.
func TestServeMonitor(t *testing.T) {
	s := startServe(t, "--ephemeral", "--listen", "127.0.0.1:0", "--monitor", "127.0.0.1:0")
	var url string
	deadline := time.Now().Add(30 * time.Second)
	for url == "" {
		if m := regexp.MustCompile(`monitoring: (http://127\.0\.0\.1:\d+) `).FindStringSubmatch(s.stderr.String()); m != nil {
			url = m[1]
		} else if time.Now().After(deadline) {
			t.Fatalf("serve did not say where it monitors:\n%s", s.stderr)
		} else {
			<-time.After(20 * time.Millisecond)
		}
	}
	for _, path := range []string{"/healthz", "/jsz?accounts=true"} {
		resp, err := http.Get(url + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s: %d %s", path, resp.StatusCode, body)
		}
		if path != "/healthz" && !strings.Contains(string(body), `"streams"`) {
			t.Errorf("GET %s: no JetStream figures: %s", path, body)
		}
	}
	var out, errb lockedBuffer
	code, err := cmdServe(t.Context(), []string{"--ephemeral", "--listen", "127.0.0.1:0", "--monitor", "0.0.0.0:0"},
		func(string) string { return "" }, &out, &errb)
	if code != exitUsage || err == nil || !strings.Contains(err.Error(), "--monitor-public") {
		t.Errorf("--monitor beyond loopback: exit %d, %v", code, err)
	}
}
