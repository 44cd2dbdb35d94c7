package main

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/troupe-ai/troupe/internal/peer"
)

// browser is a headless Chromium driven over the DevTools protocol.
type browser struct {
	t    testing.TB
	ws   *websocket.Conn
	next int
	pgid int // Chromium's process group
}

// startBrowser runs headless Chromium with a fresh profile and opens a
// page at pageURL.
func startBrowser(t testing.TB, pageURL string) *browser {
	t.Helper()
	bin := peer.Need(t, "chromium")
	// The profile is removed by this test's own cleanup, once every process
	// of Chromium's group has gone (t.TempDir's removal could race its
	// helper processes still writing there).
	profile, err := os.MkdirTemp("", "troupe-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
		"--disable-component-update", "--disable-sync", "--no-first-run", "--disable-dev-shm-usage",
		"--user-data-dir="+profile, "--remote-debugging-address=127.0.0.1", "--remote-debugging-port=0",
		"--window-size=1280,900", "about:blank")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stopBrowser(t, cmd, profile) })
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if _, ws, ok := strings.Cut(sc.Text(), "DevTools listening on "); ok {
				found <- ws
			}
		}
		close(found)
	}()
	var browserWS string
	select {
	case browserWS = <-found:
	case <-time.After(30 * time.Second):
		t.Fatal("chromium printed no DevTools address")
	}
	if browserWS == "" {
		t.Fatal("chromium ended without a DevTools address")
	}
	u, err := url.Parse(browserWS)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPut, "http://"+u.Host+"/json/new?"+url.QueryEscape(pageURL), nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var target struct {
		WS string `json:"webSocketDebuggerUrl"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&target); err != nil || target.WS == "" {
		t.Fatalf("open a page: %v (%s)", err, resp.Status)
	}
	ws, _, err := websocket.Dial(t.Context(), target.WS, nil)
	if err != nil {
		t.Fatal(err)
	}
	ws.SetReadLimit(64 << 20)
	t.Cleanup(func() { ws.CloseNow() })
	return &browser{t: t, ws: ws, pgid: cmd.Process.Pid}
}

// call sends one DevTools command and returns its result.
func (b *browser) call(method string, params any) json.RawMessage {
	b.t.Helper()
	b.next++
	id := b.next
	msg, _ := json.Marshal(map[string]any{"id": id, "method": method, "params": params})
	ctx, cancel := context.WithTimeout(b.t.Context(), 30*time.Second)
	defer cancel()
	if err := b.ws.Write(ctx, websocket.MessageText, msg); err != nil {
		b.t.Fatal(err)
	}
	for {
		_, data, err := b.ws.Read(ctx)
		if err != nil {
			b.t.Fatalf("%s: %v", method, err)
		}
		var r struct {
			ID     int             `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  *struct{ Message string }
		}
		if json.Unmarshal(data, &r) != nil || r.ID != id {
			continue // an event, or another command's answer
		}
		if r.Error != nil {
			b.t.Fatalf("%s: %s", method, r.Error.Message)
		}
		return r.Result
	}
}

// eval evaluates a JavaScript expression in the page and returns its
// value (a promise's, once it settles) as a string.
func (b *browser) eval(expr string) string {
	b.t.Helper()
	var r struct {
		Result struct {
			Value any `json:"value"`
		} `json:"result"`
	}
	_ = json.Unmarshal(b.call("Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true, "awaitPromise": true}), &r)
	return fmt.Sprint(r.Result.Value)
}

// navigate loads pageURL in the page.
func (b *browser) navigate(pageURL string) {
	b.t.Helper()
	b.call("Page.navigate", map[string]any{"url": pageURL})
}

// screenshot saves the page as a PNG at path.
func (b *browser) screenshot(path string) {
	b.t.Helper()
	var r struct {
		Data string `json:"data"`
	}
	if err := json.Unmarshal(b.call("Page.captureScreenshot", map[string]any{"format": "png"}), &r); err != nil {
		b.t.Fatal(err)
	}
	png, err := base64.StdEncoding.DecodeString(r.Data)
	if err != nil || len(png) == 0 {
		b.t.Fatalf("screenshot: %v", err)
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		b.t.Fatal(err)
	}
}

// stopBrowser kills Chromium's whole process group, waits until none of
// its processes is left, and removes its profile.
func stopBrowser(t testing.TB, cmd *exec.Cmd, profile string) {
	pgid := cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	_ = cmd.Wait()
	deadline := time.Now().Add(30 * time.Second)
	for syscall.Kill(-pgid, 0) == nil && time.Now().Before(deadline) {
		<-time.After(20 * time.Millisecond)
	}
	if err := os.RemoveAll(profile); err != nil {
		t.Errorf("remove the browser profile: %v", err)
	}
}
