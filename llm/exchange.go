package llm

import (
	"bytes"
	"errors"
	"github.com/troupe-ai/troupe/internal/text"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/tidwall/gjson"
)

// maxErrorBody caps how much of an error answer is read.
const maxErrorBody = 64 << 10

// exchange watches one attempt's HTTP response through an openai-go
// middleware: the status and headers, an error answer's body, and for a
// stream whether it reached its [DONE]. The SDK cannot be relied on for the
// error: a body like Ollama's {"error": "text"} makes it return a JSON
// decoding error that has lost the status.
type exchange struct {
	stream bool
	caps   caps
	over   error // a non-streamed body passed caps.body(): reading stopped
	// onHeader hears the answer's headers as they arrive (the limiter
	// learns the provider's limits before the body streams).
	onHeader func(http.Header)
	status   int
	header   http.Header
	errBody  []byte
	watch    *doneWatcher // a streaming 2xx body
	// idle > 0 arms a timer when the stream begins, reset by every read;
	// when it fires, stall ends the attempt.
	idle  time.Duration
	stall func()
	timer *time.Timer
}

// stop disarms the idle timer.
func (x *exchange) stop() {
	if x.timer != nil {
		x.timer.Stop()
	}
}

func (x *exchange) middleware(req *http.Request, next func(*http.Request) (*http.Response, error)) (*http.Response, error) {
	res, err := next(req)
	if err != nil || res == nil {
		return res, err
	}
	x.status, x.header = res.StatusCode, res.Header
	if x.onHeader != nil {
		x.onHeader(res.Header)
	}
	switch {
	case res.Body == nil:
	case res.StatusCode >= 400:
		body, _ := io.ReadAll(io.LimitReader(res.Body, maxErrorBody))
		_ = res.Body.Close()
		x.errBody = body
		res.Body = io.NopCloser(bytes.NewReader(body))
	case !x.stream && res.StatusCode < 300:
		res.Body = &cappedBody{ReadCloser: res.Body, max: x.caps.body(), over: func() error {
			x.over = x.caps.overBody()
			return x.over
		}}
	case x.stream && res.StatusCode < 300:
		x.watch = &doneWatcher{inBody: res.Body, maxEvent: x.caps.event(), overEvent: x.caps.overEvent}
		if x.idle > 0 && x.stall != nil {
			x.timer = time.AfterFunc(x.idle, x.stall)
			x.watch.timer, x.watch.idle = x.timer, x.idle
		}
		res.Body = x.watch
	}
	return res, nil
}

// statusError turns an error answer into an *APIError, reading OpenAI's
// {"error": {"message", "code", "type"}} or, from other servers,
// {"error": "text"} (Ollama), {"detail": ...} (vLLM, FastAPI) or
// {"message": ...}, else the body itself, short. The API key is scrubbed.
func (c *OpenAIClient) statusError(status int, h http.Header, body []byte) *APIError {
	e := &APIError{Status: status, Retryable: retryableStatus(status)}
	if v := gjson.GetBytes(body, "error"); v.IsObject() {
		e.Message = v.Get("message").String()
		e.Code = v.Get("code").String()
		e.Type = v.Get("type").String()
	}
	if e.Message == "" {
		e.Message = foreignErrorMessage(body)
	}
	e.Message, e.Code = c.secret.String(e.Message), c.secret.String(e.Code)
	if h != nil {
		e.RetryAfter = parseRetryAfter(h, time.Now())
		switch strings.ToLower(h.Get("X-Should-Retry")) {
		case "true":
			e.Retryable = true
		case "false":
			e.Retryable = false
		}
	}
	return e
}

func foreignErrorMessage(body []byte) string {
	for _, path := range [...]string{"error", "detail", "message", "detail.0.msg"} {
		if v := gjson.GetBytes(body, path); v.Type == gjson.String && v.Str != "" {
			return text.Clip(v.Str, 500)
		}
	}
	if t := strings.TrimSpace(string(body)); t != "{}" {
		return text.Clip(t, 300)
	}
	return ""
}

// asStatusError returns the *APIError for an attempt that got an error
// answer, whatever error the SDK made of it; nil otherwise.
func (c *OpenAIClient) asStatusError(x *exchange, err error) error {
	if x.status < 400 || err == nil || errors.Is(err, ErrBadRequest) {
		return nil
	}
	return c.statusError(x.status, x.header, x.errBody)
}

// doneWatcher wraps a stream's body and notes whether a "data: [DONE]" line
// went by and whether the body ended cleanly (io.EOF).
// It is read by the goroutine that reads the stream, then inspected by the
// same goroutine after the stream ends.
type doneWatcher struct {
	done bool
	eof  bool
	// event counts the bytes of the event being read (since the last blank
	// line); past maxEvent the body ends with over, so that a server
	// sending one endless event cannot make the SSE decoder hold it.
	event     int64
	maxEvent  int64
	overEvent func() error
	over      error
	blank     bool   // the previous byte ended a line
	line      []byte // the start of the current line, up to 16 bytes
	inBody    io.ReadCloser
	timer     *time.Timer // the idle timer, reset by every read that got bytes
	idle      time.Duration
}

// Read passes bytes through, watching line starts for the end marker.
func (w *doneWatcher) Read(p []byte) (int, error) {
	if w.over != nil {
		return 0, w.over
	}
	n, err := w.inBody.Read(p)
	if n > 0 && w.timer != nil {
		w.timer.Reset(w.idle)
	}
	for _, b := range p[:n] {
		switch b {
		case '\r':
			w.endLine()
			continue
		case '\n':
			if w.blank {
				w.event = 0 // an empty line ends the event
			}
			w.blank = true
			w.endLine()
			continue
		}
		w.blank = false
		if w.event++; w.maxEvent > 0 && w.event > w.maxEvent {
			w.over = w.overEvent()
			return 0, w.over
		}
		if len(w.line) < 16 {
			w.line = append(w.line, b)
		}
	}
	if errors.Is(err, io.EOF) {
		w.endLine()
		w.eof = true
	}
	return n, err
}

func (w *doneWatcher) endLine() {
	l := strings.TrimSpace(string(w.line))
	if l == "data: [DONE]" || l == "data:[DONE]" {
		w.done = true
	}
	w.line = w.line[:0]
}

// Close closes the wrapped body.
func (w *doneWatcher) Close() error { return w.inBody.Close() }

// cappedBody ends a non-streamed answer's body with an error once it
// passes max bytes.
type cappedBody struct {
	io.ReadCloser
	read, max int64
	over      func() error
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.read > b.max {
		return 0, b.over()
	}
	if room := b.max - b.read + 1; int64(len(p)) > room {
		p = p[:room]
	}
	n, err := b.ReadCloser.Read(p)
	if b.read += int64(n); b.read > b.max {
		return 0, b.over()
	}
	return n, err
}
