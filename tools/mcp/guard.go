package mcp

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"sync/atomic"
)

// errTooLarge ends a connection whose server sent a message over
// MaxMessageBytes.
var errTooLarge = errors.New("mcp: message over the size limit")

// frameGuard counts the bytes of the message being read from a stdio
// server (one message a line) and fails the read once one passes max, so
// a runaway server costs at most max bytes of memory and the failure can
// be named.
type frameGuard struct {
	r    io.ReadCloser
	max  int
	cur  int
	over *atomic.Bool
}

func (g *frameGuard) Read(p []byte) (int, error) {
	if g.over.Load() {
		return 0, errTooLarge
	}
	n, err := g.r.Read(p)
	if i := bytes.LastIndexByte(p[:n], '\n'); i >= 0 {
		g.cur = n - i - 1
	} else {
		g.cur += n
	}
	if g.cur > g.max {
		g.over.Store(true)
		return 0, errTooLarge
	}
	return n, err
}

func (g *frameGuard) Close() error { return g.r.Close() }

// bodyGuard does the same for one HTTP response (a JSON answer, or the
// event stream of one request).
type bodyGuard struct {
	r    io.ReadCloser
	max  int
	n    int
	over *atomic.Bool
	done func() // releases the request's context
}

func (g *bodyGuard) Read(p []byte) (int, error) {
	n, err := g.r.Read(p)
	g.n += n
	if g.n > g.max {
		g.over.Store(true)
		return 0, errTooLarge
	}
	return n, err
}

func (g *bodyGuard) Close() error {
	err := g.r.Close()
	g.done()
	return err
}

// httpTransport adds the configured headers to every request and guards
// every response's size.
type httpTransport struct {
	headers map[string]string
	base    http.RoundTripper
	over    *atomic.Bool
}

func (h httpTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if len(h.headers) > 0 {
		r = r.Clone(r.Context())
		for k, v := range h.headers {
			r.Header.Set(k, v)
		}
	}
	var cancel context.CancelFunc = func() {}
	if r.Method == http.MethodDelete {
		// Ending the session must not wait on a server that hangs.
		var ctx context.Context
		ctx, cancel = context.WithTimeout(r.Context(), stopGrace)
		r = r.WithContext(ctx)
	}
	resp, err := h.base.RoundTrip(r)
	if err != nil {
		cancel()
		return nil, err
	}
	if resp.Body != nil {
		resp.Body = &bodyGuard{r: resp.Body, max: MaxMessageBytes, over: h.over, done: cancel}
	} else {
		cancel()
	}
	return resp, nil
}
