package llmtest

import (
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// ExhaustedText is the answer given when an agent has no scripted turns left
// or no script matches it.
const ExhaustedText = "(script exhausted)"

// maxStall bounds a stall failure, so a client without any timeout still
// gets an (incomplete) answer eventually.
const maxStall = 10 * time.Minute

// maxBody caps a request body the server reads.
const maxBody = 64 << 20

// Server is a scripted OpenAI-compatible Chat Completions server listening
// on a loopback port. It is safe for concurrent use.
type Server struct {
	script    Script
	scriptErr error
	srv       *http.Server
	ln        net.Listener
	url       string
	closing   chan struct{}
	closeOnce sync.Once
	served    sync.WaitGroup

	seq      atomic.Int64
	callSeq  atomic.Int64
	inFlight atomic.Int64

	mu      sync.Mutex
	cursors map[cursorKey]*cursor
	records []Recorded

	rate limiter
}

type cursorKey struct {
	script int
	agent  string
}

// cursor is one agent's position in its script.
type cursor struct {
	next  int // index of the next entry
	round int // completed rounds
}

// New starts a server playing script on 127.0.0.1 and a free port. An
// invalid script does not stop it: every request is then answered with
// HTTP 400 and the validation error (see Err), so the problem reaches the
// test through the client. It panics only if no loopback port can be
// opened, as httptest.NewServer does.
func New(script Script) *Server {
	s, err := Open(script)
	if err != nil && s == nil {
		panic(err)
	}
	return s
}

// Open is New returning the script's validation error (with a running
// server that reports it on every request) or a listen error (with nil).
func Open(script Script) (*Server, error) { return Listen("127.0.0.1:0", script) }

// Listen is Open on addr (host:port; port 0 picks a free one), for a
// scripted model that other processes reach at a port they were told.
func Listen(addr string, script Script) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("llmtest: listen: %w", err)
	}
	s := &Server{
		script:    script,
		scriptErr: script.Validate(),
		ln:        ln,
		url:       "http://" + ln.Addr().String() + "/v1",
		closing:   make(chan struct{}),
		cursors:   make(map[cursorKey]*cursor),
	}
	if script.RateLimit != nil {
		s.SetRateLimit(*script.RateLimit)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", s.handleChat)
	mux.HandleFunc("GET /v1/models", s.handleModels)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, &Failure{Message: "llmtest: no route for " + r.Method + " " + r.URL.Path +
			"; the server answers POST /v1/chat/completions", Type: "invalid_request_error", Code: "not_found"})
	})
	// Dropped connections are on purpose; keep net/http's log quiet.
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ErrorLog: log.New(io.Discard, "", 0)}
	s.served.Add(1)
	go func() {
		defer s.served.Done()
		_ = s.srv.Serve(ln)
	}()
	return s, s.scriptErr
}

// URL is the base URL of the API, ending in /v1.
func (s *Server) URL() string { return s.url }

// Err is the script's validation error, nil when the script is valid.
func (s *Server) Err() error { return s.scriptErr }

// Close stops the server, ending requests in flight (a turn waiting out its
// latency gives up at once).
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		close(s.closing)
		_ = s.srv.Close()
		s.served.Wait()
	})
}

// Requests returns every request received so far, in order of arrival. A
// request is listed just before the last bytes of its answer are written
// (or when it is abandoned), so a client that has received its whole answer
// or its error finds the request here; one still waiting out its latency is
// counted by InFlight instead.
func (s *Server) Requests() []Recorded {
	s.mu.Lock()
	out := slices.Clone(s.records)
	s.mu.Unlock()
	slices.SortFunc(out, func(a, b Recorded) int { return a.Seq - b.Seq })
	return out
}

// RequestsFrom returns the recorded requests of one agent (X-Troupe-Agent).
func (s *Server) RequestsFrom(agent string) []Recorded {
	return slices.DeleteFunc(s.Requests(), func(r Recorded) bool { return r.Agent != agent })
}

func (s *Server) record(rec *Recorded) {
	s.mu.Lock()
	s.records = append(s.records, *rec)
	s.mu.Unlock()
	s.inFlight.Add(-1)
}

// InFlight is the number of requests received and not yet answered or
// abandoned (for tests that wait until a call has reached the server).
func (s *Server) InFlight() int { return int(s.inFlight.Load()) }

func (s *Server) handleModels(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, `{"object":"list","data":[{"id":"llmtest","object":"model","created":1700000000,"owned_by":"llmtest"}]}`)
}

func (s *Server) handleChat(w http.ResponseWriter, r *http.Request) {
	rec := Recorded{Seq: int(s.seq.Add(1)), Received: time.Now(), Script: -1}
	s.inFlight.Add(1)
	// The request is recorded just before the last bytes of its answer are
	// written, so a client that has its answer finds it in Requests.
	c := &commit{s: s, rec: &rec}
	defer c.done(false)
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err == nil {
		err = decodeRequest(&rec, r.Header, body)
	}
	if err != nil {
		rec.Err = err.Error()
		c.done(true)
		writeError(w, http.StatusBadRequest, &Failure{Message: "llmtest: " + err.Error(), Type: "invalid_request_error"})
		return
	}
	if s.scriptErr != nil {
		rec.Err = s.scriptErr.Error()
		c.done(true)
		writeError(w, http.StatusBadRequest, &Failure{Message: s.scriptErr.Error(), Type: "invalid_request_error", Code: "invalid_script"})
		return
	}
	h, refused, retryAfter := s.rate.admit(&rec)
	if refused {
		rec.Status, rec.RateLimited = http.StatusTooManyRequests, true
		c.done(true)
		s.rate.writeLimited(w, h, retryAfter)
		return
	}
	for k, v := range h {
		w.Header()[k] = v
	}
	turn := s.nextTurn(&rec)
	rec.Reply = turn
	rec.Status = http.StatusOK
	if turn.Latency > 0 && !s.wait(r.Context(), time.Duration(turn.Latency)) {
		rec.Canceled = true
		return
	}
	if f := turn.Fail; f != nil && f.Kind == FailStatus {
		rec.Status = f.Status
		c.done(true)
		writeError(w, f.Status, f)
		return
	}
	if turn.Flood != nil {
		s.writeFlood(w, &rec, turn.Flood, c)
		return
	}
	a := s.answer(&rec, turn)
	rec.Reply.ToolCalls = a.calls
	if rec.Stream {
		writeStream(w, a, turn.Fail, c, func() { s.wait(r.Context(), maxStall) })
	} else if f := turn.Fail; f != nil && f.Kind == FailStall {
		s.wait(r.Context(), maxStall)
		rec.Canceled = true
	} else {
		writeCompletion(w, a, turn.Fail, c)
	}
}

// commit records a request once.
type commit struct {
	s    *Server
	rec  *Recorded
	once bool
}

// done records the request; answered stamps Answered first.
func (c *commit) done(answered bool) {
	if c.once {
		return
	}
	c.once = true
	c.rec.Ended = time.Now()
	if answered {
		c.rec.Answered = c.rec.Ended
	}
	c.s.record(c.rec)
}

// gone records a request whose client went away mid-answer.
func (c *commit) gone() {
	c.rec.Canceled = true
	c.done(false)
}

// nextTurn picks the turn answering rec and advances the agent's cursor.
func (s *Server) nextTurn(rec *Recorded) Turn {
	idx := s.match(rec)
	rec.Script = idx
	if idx < 0 {
		rec.Exhausted = true
		rec.Round = 1
		return Text(ExhaustedText)
	}
	agent := rec.Agent
	if agent == "" {
		agent = "script#" + strconv.Itoa(idx)
	}
	if s.script.PerRun {
		agent = rec.Run + "/" + agent
	}
	as := &s.script.Agents[idx]
	turns := as.Turns
	s.mu.Lock()
	c := s.cursors[cursorKey{idx, agent}]
	if c == nil {
		c = &cursor{}
		s.cursors[cursorKey{idx, agent}] = c
	}
	rec.Round = c.round + 1
	var turn Turn
	if as.Repeat && c.next >= len(turns) && len(turns) > 0 {
		c.next = 0
	}
	if c.next >= len(turns) {
		rec.Exhausted = true
		turn = Text(ExhaustedText)
	} else {
		turn = turns[c.next]
		c.next++
	}
	dynamic := turn.Dynamic != nil
	if !dynamic && turn.Fail == nil {
		c.round++
	}
	s.mu.Unlock()
	if !dynamic {
		return turn
	}
	// A dynamic turn runs outside the lock (it may call Requests).
	turn = playDynamic(turn.Dynamic, *rec)
	if err := turn.validate(); err != nil {
		turn = Status(http.StatusInternalServerError, "llmtest: dynamic turn: "+err.Error())
	}
	if turn.Fail == nil {
		s.mu.Lock()
		c.round++
		s.mu.Unlock()
	}
	return turn
}

// playDynamic calls fn, turning a panic into a 500 answer that names it.
func playDynamic(fn func(Recorded) Turn, rec Recorded) (turn Turn) {
	defer func() {
		if p := recover(); p != nil {
			turn = Status(http.StatusInternalServerError, fmt.Sprintf("llmtest: dynamic turn panicked: %v", p))
		}
	}()
	turn = fn(rec)
	turn.Dynamic = nil
	return turn
}

// match returns the index of the script answering rec, or -1.
func (s *Server) match(rec *Recorded) int {
	fallback := -1
	for i, a := range s.script.Agents {
		m := a.Match
		if m.Fallback {
			fallback = i
			continue
		}
		if m.Kind != "" && m.Kind != rec.Kind {
			continue
		}
		if m.Agent != "" && m.Agent != rec.Agent {
			continue
		}
		if m.TaskContains != "" && !strings.Contains(rec.Task, m.TaskContains) {
			continue
		}
		return i
	}
	return fallback
}

// wait waits d, or until ctx ends or the server closes (then false).
func (s *Server) wait(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	case <-s.closing:
		return false
	}
}
