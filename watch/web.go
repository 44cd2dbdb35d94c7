package watch

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"time"

	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/bus"
)

//go:embed web
var webFiles embed.FS

// webBatch is the most events one Server-Sent Event carries, and
// webFlush how long a batch may wait for more before it is sent: the page
// gets a few large messages a second rather than one per event.
const (
	webBatch = 512
	webFlush = 100 * time.Millisecond
)

// WebOptions configure a Web view.
type WebOptions struct {
	// Conn is the NATS connection the page's events are read from.
	Conn *bus.Conn
	// Metrics, when set, are served at /metrics.
	Metrics *PromMetrics
	// Stats, when set, are sent to the page every few seconds: the task
	// queue's depth and the registry's live nodes (a Monitor's Stats).
	Stats func() Stats
	Log   zerolog.Logger
}

// Web is the live web view: an embedded page (no outside scripts or
// styles) that draws runs, agent trees, timelines and nodes from events it
// receives as Server-Sent Events at /events, each stream an ordered
// consumer of the events stream that replays it from the start and then
// follows it live. /metrics serves the Prometheus metrics.
type Web struct {
	o WebOptions
}

// NewWeb returns the web view of o.
func NewWeb(o WebOptions) *Web { return &Web{o: o} }

// Handler serves the page, its events and the metrics.
func (w *Web) Handler() http.Handler {
	mux := http.NewServeMux()
	static, _ := fs.Sub(webFiles, "web")
	mux.Handle("GET /", http.FileServerFS(static))
	mux.Handle("GET /favicon.ico", http.RedirectHandler("favicon.svg", http.StatusMovedPermanently))
	mux.HandleFunc("GET /events", w.events)
	if w.o.Metrics != nil {
		mux.Handle("GET /metrics", w.o.Metrics.Handler())
	}
	return securityHeaders(mux)
}

// securityHeaders keeps the page to its own origin: no outside scripts,
// no framing.
func securityHeaders(h http.Handler) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		rw.Header().Set("Content-Security-Policy", "default-src 'self'; frame-ancestors 'none'")
		rw.Header().Set("X-Content-Type-Options", "nosniff")
		h.ServeHTTP(rw, r)
	})
}

// events streams the events of ?run= (or every run) as Server-Sent
// Events: "events" carries a JSON array of envelopes, "caught_up" says the
// replay reached the live end, "stats" carries the queue's depth and the
// live nodes (Stats).
func (w *Web) events(rw http.ResponseWriter, r *http.Request) {
	fl, ok := rw.(http.Flusher)
	if !ok {
		http.Error(rw, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	es, err := w.o.Conn.Events(ctx, bus.WatchOptions{Run: r.URL.Query().Get("run"), FromStart: true, Log: w.o.Log})
	if err != nil {
		http.Error(rw, err.Error(), http.StatusBadRequest)
		return
	}
	defer es.Stop()
	h := rw.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	rw.WriteHeader(http.StatusOK)
	caughtUp := es.Backlog == 0
	if caughtUp {
		fmt.Fprint(rw, "event: caught_up\ndata: {}\n\n")
	}
	w.stats(rw)
	fl.Flush()
	if err := w.pump(ctx, rw, fl, es, caughtUp); err != nil {
		w.o.Log.Debug().Err(err).Msg("web: events stream ended")
	}
}

// pump sends the stream's events in batches until the client goes.
func (w *Web) pump(ctx context.Context, rw http.ResponseWriter, fl http.Flusher, es *bus.EventStream, caughtUp bool) error {
	batch := make([][]byte, 0, webBatch)
	var buf bytes.Buffer
	flush := time.NewTicker(webFlush)
	defer flush.Stop()
	stats := time.NewTicker(2 * time.Second)
	defer stats.Stop()
	send := func() error {
		if len(batch) > 0 {
			buf.Reset()
			buf.WriteString("event: events\ndata: [")
			buf.Write(bytes.Join(batch, []byte{','}))
			buf.WriteString("]\n\n")
			if _, err := rw.Write(buf.Bytes()); err != nil {
				return err
			}
			batch = batch[:0]
		}
		fl.Flush()
		return nil
	}
	for {
		select {
		case d, ok := <-es.C:
			if !ok {
				return send()
			}
			if b := eventJSON(d); b != nil {
				batch = append(batch, b)
			}
			if len(batch) == webBatch {
				if err := send(); err != nil {
					return err
				}
			}
			if !caughtUp && d.Pending == 0 {
				caughtUp = true
				if err := send(); err != nil {
					return err
				}
				fmt.Fprint(rw, "event: caught_up\ndata: {}\n\n")
			}
		case <-flush.C:
			if err := send(); err != nil {
				return err
			}
		case <-stats.C:
			w.stats(rw)
		case <-ctx.Done():
			return nil
		}
	}
}

// stats writes the monitor's latest figures, when there is a monitor.
func (w *Web) stats(rw http.ResponseWriter) {
	if w.o.Stats == nil {
		return
	}
	b, err := json.Marshal(w.o.Stats())
	if err != nil {
		return
	}
	fmt.Fprintf(rw, "event: stats\ndata: %s\n\n", b)
}

// eventJSON is an event as one line of JSON: as stored (it was decoded
// and validated from those bytes) unless it spans lines, which would end
// the Server-Sent Event early, or nil when it cannot be encoded.
func eventJSON(d bus.Delivery) []byte {
	if len(d.Raw) > 0 && !bytes.ContainsAny(d.Raw, "\r\n") {
		return d.Raw
	}
	b, err := json.Marshal(d.Event)
	if err != nil {
		return nil
	}
	return b
}
