// Package guardtest holds what the tests of every guarded HTTP surface
// (the web view, /metrics, MCP over HTTP) send: a request with the headers
// a test chooses (a foreign Host among them), and the refusals each
// surface must give whoever lacks the token or comes from another host.
package guardtest

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// Send sends a request to url with body (none when "") and header, where
// "Host" sets the request's Host, and returns the status and the body.
func Send(t testing.TB, method, url, body string, header map[string]string) (int, string) {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, r)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		if k == "Host" {
			req.Host = v
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// Refusals checks the guard in front of send (a request with the given
// extra headers): no token and a wrong token get 401, the right token
// from another host (DNS rebinding) 403, and no answer holds leak.
func Refusals(t testing.TB, send func(header map[string]string) (int, string), token, leak string) {
	t.Helper()
	for _, c := range []struct {
		what   string
		header map[string]string
		want   int
	}{
		{"without the token", nil, http.StatusUnauthorized},
		{"with a wrong token", map[string]string{"Authorization": "Bearer wrong-token-0123456789"}, http.StatusUnauthorized},
		{"from another host", map[string]string{"Authorization": "Bearer " + token, "Host": "attacker.example"}, http.StatusForbidden},
	} {
		if code, body := send(c.header); code != c.want || strings.Contains(body, leak) {
			t.Errorf("%s: %d %q, want %d without %q", c.what, code, body, c.want, leak)
		}
	}
}
