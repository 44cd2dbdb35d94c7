package mcp

import (
	"context"
	"errors"
	"fmt"
	"github.com/troupe-ai/troupe/tools/procguard"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/tools"
)

// MaxMessageBytes bounds one message from a server: a larger one ends the
// connection (the call is an error result and the server restarts).
const MaxMessageBytes = 8 << 20

// maxTools bounds how many tools one server may offer.
const maxTools = 256

// retryAfter is how long a server that failed to start is not tried again
// for tool listings (a call always tries).
const retryAfter = 30 * time.Second

// ErrClosed is the error of a server used after Close.
var ErrClosed = errors.New("mcp: server closed")

// Server is one configured MCP server, started on first need: the first
// listing of its tools or the first call. A call that finds it crashed,
// hung past its timeout or talking nonsense ends that connection (a stdio
// server's process group is killed) and reports an error result; the next
// call starts it again. It implements tools.ToolSource and is safe for
// concurrent use: the agents of a run share it.
type Server struct {
	cfg    Config
	log    zerolog.Logger
	client *sdk.Client

	mu        sync.Mutex
	live      *link
	starts    int
	evictions int
	listed    []tools.Tool
	skipped   []string // tools left out, with why
	failed    error
	failedAt  time.Time
	closed    bool

	home      string        // Dir, its symlinks resolved
	limit     *Limit        // bounds the worktree instances
	parent    *Server       // of a worktree instance: the run's
	trees     worktrees     // the run's: its worktree instances
	busy      atomic.Int32  // calls in flight
	done      chan struct{} // closed by Close
	closeOnce sync.Once
}

var _ tools.ToolSource = (*Server)(nil)

// link is one connection to the server.
type link struct {
	session *sdk.ClientSession
	proc    *process     // nil for an HTTP server
	over    *atomic.Bool // the server sent a message over MaxMessageBytes
}

// New returns the server of cfg, not started. cfg must be valid
// (Config.Validate).
func New(cfg Config, log zerolog.Logger) *Server {
	client := sdk.NewClient(&sdk.Implementation{Name: "troupe", Version: "1"}, nil)
	s := newServer(cfg, log.With().Str("mcp_server", cfg.Name).Logger(), client)
	s.home, s.limit = homeOf(cfg.Dir), cfg.Limit
	if s.limit == nil {
		s.limit = NewLimit(DefaultMaxInstances)
	}
	return s
}

func newServer(cfg Config, log zerolog.Logger, client *sdk.Client) *Server {
	return &Server{cfg: cfg, log: log, client: client, done: make(chan struct{})}
}

// Name is the server's configured name.
func (s *Server) Name() string { return s.cfg.Name }

// For reports whether agents of kind get the server's tools.
func (s *Server) For(kind string) bool { return slices.Contains(s.cfg.kinds(), kind) }

// Tools lists the server's tools as troupe tools, starting the server on
// the first call; later calls return the first listing. A server that
// failed to start is retried only after a pause, so agents starting in a
// burst do not each wait for it.
func (s *Server) Tools(ctx context.Context) ([]tools.Tool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	if s.listed != nil {
		return s.listed, nil
	}
	if s.failed != nil && time.Since(s.failedAt) < retryAfter {
		return nil, s.failed
	}
	l, err := s.linkLocked(ctx)
	if err == nil {
		err = s.listLocked(ctx, l)
	}
	if err != nil {
		s.failed, s.failedAt = err, time.Now()
		return nil, err
	}
	s.failed = nil
	return s.listed, nil
}

// Skipped lists the server's tools that were left out and why (a schema
// no model API takes, a name given twice), once Tools has listed them.
func (s *Server) Skipped() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.skipped)
}

func (s *Server) listLocked(ctx context.Context, l *link) error {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.startTimeout())
	defer cancel()
	var out []tools.Tool
	seen := map[string]bool{}
	for t, err := range l.session.Tools(ctx, nil) {
		if err != nil {
			s.dropLocked(l)
			return fmt.Errorf("list the tools of MCP server %s: %w", s.cfg.Name, s.explain(l, err))
		}
		if len(out) == maxTools {
			s.skipped = append(s.skipped, fmt.Sprintf("tools beyond the first %d", maxTools))
			break
		}
		tool, err := newTool(s, t)
		switch {
		case err != nil:
			s.skipped = append(s.skipped, fmt.Sprintf("%s: %v", oneLine(t.Name, 80), err))
		case seen[tool.spec.Name]:
			s.skipped = append(s.skipped, fmt.Sprintf("%s: a second tool of that name", oneLine(t.Name, 80)))
		default:
			seen[tool.spec.Name] = true
			out = append(out, tool)
		}
	}
	for _, sk := range s.skipped {
		s.log.Warn().Str("skipped", sk).Msg("MCP tool left out")
	}
	if out == nil {
		out = []tools.Tool{}
	}
	s.listed = out
	return nil
}

// link returns the live connection, starting the server if there is none.
func (s *Server) link(ctx context.Context) (*link, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	return s.linkLocked(ctx)
}

func (s *Server) linkLocked(ctx context.Context) (*link, error) {
	if s.live != nil {
		return s.live, nil
	}
	if s.parent != nil { // a worktree instance takes a slot of the run's
		if err := s.limit.acquire(ctx, s); err != nil {
			return nil, fmt.Errorf("start MCP server %s in %s: %w", s.cfg.Name, s.cfg.Dir, err)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.startTimeout())
	defer cancel()
	l, err := s.dial(ctx)
	if err != nil {
		s.limit.release(s)
		if ctx.Err() == context.DeadlineExceeded {
			err = fmt.Errorf("no answer within %s: %w", s.cfg.startTimeout(), err)
		}
		return nil, fmt.Errorf("start MCP server %s: %w", s.cfg.Name, err)
	}
	s.live = l
	s.starts++
	if l.proc != nil {
		go func() { // a server that exits between calls is restarted by the next one
			<-l.proc.exited
			s.drop(l)
		}()
	}
	s.log.Debug().Int("start", s.starts).Msg("MCP server connected")
	return l, nil
}

func (s *Server) dial(ctx context.Context) (*link, error) {
	over := &atomic.Bool{}
	if s.cfg.URL != "" {
		hc := &http.Client{Transport: httpTransport{headers: s.cfg.Headers, base: http.DefaultTransport, over: over}}
		t := &sdk.StreamableClientTransport{Endpoint: s.cfg.URL, HTTPClient: hc, MaxRetries: -1,
			DisableStandaloneSSE: true, MaxEventSize: MaxMessageBytes}
		sess, err := s.client.Connect(ctx, t, nil)
		if err != nil {
			return nil, err
		}
		return &link{session: sess, over: over}, nil
	}
	proc, stdout, stdin, err := startProcess(s.cfg)
	if err != nil {
		return nil, err
	}
	guarded := &frameGuard{r: stdout, max: MaxMessageBytes, over: over}
	t := &sdk.IOTransport{Reader: guarded, Writer: stdin, MaxLineLength: -1}
	sess, err := s.client.Connect(ctx, t, nil)
	if err != nil {
		proc.kill()
		_ = stdout.Close()
		_ = stdin.Close()
		if how := proc.exit(time.Second); how != "" {
			err = fmt.Errorf("%w (the process ended: %s)", err, how)
		}
		return nil, err
	}
	return &link{session: sess, proc: proc, over: over}, nil
}

// drop ends l if it is still the live connection: a stdio server's group
// is killed at once, since it crashed, hung or misbehaved.
func (s *Server) drop(l *link) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dropLocked(l)
}

func (s *Server) dropLocked(l *link) {
	mine := s.live == l
	if mine {
		s.live = nil
	}
	if l.proc != nil {
		l.proc.kill()
	}
	closeSession(l.session)
	if mine {
		s.limit.release(s) // once the process is gone
	}
}

// closeSession closes a session without waiting more than stopGrace.
func closeSession(sess *sdk.ClientSession) {
	done := make(chan struct{})
	go func() {
		_ = sess.Close()
		close(done)
	}()
	procguard.WaitClosed(done, stopGrace)
}

// Close stops the server (its process group, for a stdio server) and
// its worktree instances, and refuses later use. It is idempotent.
func (s *Server) Close() error {
	s.closeOnce.Do(func() { close(s.done) }) // a start waiting for a slot gives up
	s.closeWorktrees()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	if s.parent != nil {
		s.parent.forget(s)
	}
	if s.cfg.Sandbox != nil {
		defer func() { _ = s.cfg.Sandbox.Close() }() // its TMPDIR, once the process is gone
	}
	s.stopLocked()
	return nil
}

// stopLocked stops the live connection, if any: a stdio server is asked
// to exit (its stdin closes), then signalled; its slot is given back once
// it is gone.
func (s *Server) stopLocked() {
	l := s.live
	s.live = nil
	if l == nil {
		return
	}
	defer s.limit.release(s)
	if l.proc == nil {
		closeSession(l.session)
		return
	}
	done := make(chan struct{})
	go func() { // closing stdin asks the server to exit
		_ = l.session.Close()
		close(done)
	}()
	l.proc.stop()
	procguard.WaitClosed(done, stopGrace)
}

// Starts reports how many times the server was started (connected).
func (s *Server) Starts() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.starts
}

// Pid is the process ID of a running stdio server, 0 when none runs.
func (s *Server) Pid() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.live == nil || s.live.proc == nil {
		return 0
	}
	return s.live.proc.pgid
}

// call runs one tool call. A failure the model should read is an error
// result; the Go error is nil unless ctx was cancelled.
func (s *Server) call(ctx context.Context, name, remote string, args []byte) (tools.Result, error) {
	s.busy.Add(1) // an instance in a call is never stopped to make room
	defer s.busy.Add(-1)
	l, err := s.link(ctx)
	if err != nil {
		if ctx.Err() == context.Canceled {
			return tools.Result{}, ctx.Err()
		}
		return tools.Errorf("%s: %v", name, err), nil
	}
	res, err := l.session.CallTool(ctx, &sdk.CallToolParams{Name: remote, Arguments: rawArgs(args)})
	if err == nil {
		if res == nil {
			return tools.Errorf("%s: the MCP server sent no result", name), nil
		}
		out := tools.Result{Text: resultText(res), IsError: res.IsError}
		if out.IsError && out.Text == "" {
			out.Text = "the tool reported an error without a message"
		}
		return out, nil
	}
	var rpc *jsonrpc.Error
	switch {
	case errors.As(err, &rpc):
		return tools.Errorf("%s: the MCP server refused the call: %s", name, oneLine(rpc.Message, 2000)), nil
	case ctx.Err() == context.Canceled:
		return tools.Result{}, ctx.Err()
	case ctx.Err() == context.DeadlineExceeded && l.proc == nil:
		// An HTTP server answers each request on its own: one slow call
		// is no reason to drop the session (the server was told to cancel).
		return tools.Errorf("%s: no answer before the timeout; the call was cancelled", name), nil
	case ctx.Err() == context.DeadlineExceeded:
		s.drop(l)
		return tools.Errorf("%s: no answer before the timeout; the MCP server %s was stopped and will be started again on the next call", name, s.cfg.Name), nil
	}
	how := s.explain(l, err)
	s.drop(l)
	return tools.Errorf("%s: %v; it will be started again on the next call", name, how), nil
}

// explain turns a broken connection's error into words: how the process
// ended, or what the server sent.
func (s *Server) explain(l *link, err error) error {
	if l.over.Load() {
		return fmt.Errorf("the MCP server %s sent a message over the %d MiB limit", s.cfg.Name, MaxMessageBytes>>20)
	}
	if l.proc != nil {
		if how := l.proc.exit(time.Second); how != "" {
			if l.proc.ours.Load() {
				return fmt.Errorf("the MCP server %s was stopped while the call ran (another call timed out, or the run is ending)", s.cfg.Name)
			}
			return fmt.Errorf("the MCP server %s exited during the call (%s)", s.cfg.Name, how)
		}
	}
	return fmt.Errorf("the connection to MCP server %s broke (%s)", s.cfg.Name, oneLine(err.Error(), 600))
}
