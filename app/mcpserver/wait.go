package mcpserver

import (
	"context"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Progress pacing while a call waits: what changed is sent within
// progressCheck, and a notification goes at least every progressQuiet
// (the client's timeout restarts with each one).
const (
	progressCheck = time.Second
	progressQuiet = 3 * time.Second
)

// await waits for r to end and returns its status, sending progress when
// the call carries a progress token: at once (with the run's ID, so the
// client can cancel_run it), on each change, and at least every
// progressQuiet. When the call ends first (the client cancelled it, or
// went away), a run the call owns (started with wait) is cancelled;
// otherwise only the wait stops.
func (s *Server) await(ctx context.Context, req *mcp.CallToolRequest, r *run, owns bool) RunStatus {
	p := newProgress(ctx, req)
	p.send(r, true)
	tick := time.NewTicker(progressCheck)
	defer tick.Stop()
	for {
		select {
		case <-r.done:
			return r.status()
		case <-ctx.Done():
			if owns {
				r.cancel()
				s.o.Log.Info().Str("run", r.id).Msg("mcp: the call waiting for the run was cancelled; cancelling the run")
			}
			return r.status()
		case <-tick.C:
			p.send(r, false)
		}
	}
}

// progress sends one call's progress notifications.
type progress struct {
	ctx   context.Context
	req   *mcp.CallToolRequest
	token any // nil: the client asked for none
	n     float64
	seen  uint64
	last  time.Time
}

func newProgress(ctx context.Context, req *mcp.CallToolRequest) *progress {
	return &progress{ctx: ctx, req: req, token: req.Params.GetProgressToken()}
}

// send notifies the run's progress when it changed, when it has been
// quiet for progressQuiet, or when forced. The progress value counts the
// notifications (it must grow with each); the message says the rest.
func (p *progress) send(r *run, force bool) {
	if p.token == nil || p.req.Session == nil {
		return
	}
	msg, changed := r.progress()
	if !force && changed == p.seen && time.Since(p.last) < progressQuiet {
		return
	}
	p.n++
	p.seen, p.last = changed, time.Now()
	_ = p.req.Session.NotifyProgress(p.ctx, &mcp.ProgressNotificationParams{ProgressToken: p.token, Progress: p.n, Message: msg})
}
