package bus

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/troupe-ai/troupe/messages"
)

// RunEnded says whether run's latest run.started or run.finished in the
// events stream is its run.finished: the run ended (and was not resumed
// since). A run with neither stored has not ended.
func (c *Conn) RunEnded(ctx context.Context, run string) (bool, error) {
	if err := CheckToken("run", run); err != nil {
		return false, err
	}
	st, err := c.js.Stream(ctx, c.Names().Events)
	if err != nil {
		return false, fmt.Errorf("read runs: %w", err)
	}
	m, err := st.GetLastMsgForSubject(ctx, c.prefix+".evt."+token(run)+".run.run.*")
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read run %s: %w", run, err)
	}
	return m.Subject == EventSubject(c.prefix, token(run), "run", messages.EvtRunFinished), nil
}

// OpenRun is what the events stream says of a run that started and has
// not finished: the lease its run.started names and the time of its
// latest event, from which a watcher judges it lost.
type OpenRun struct {
	Lease time.Duration
	Last  time.Time
}

// RunOpen reports whether run's latest run.started or run.finished in the
// events stream is its run.started (it started, or was resumed, and has
// not finished since) and, if so, its lease and latest event's time.
func (c *Conn) RunOpen(ctx context.Context, run string) (OpenRun, bool, error) {
	if err := CheckToken("run", run); err != nil {
		return OpenRun{}, false, err
	}
	st, err := c.js.Stream(ctx, c.Names().Events)
	if err != nil {
		return OpenRun{}, false, fmt.Errorf("read runs: %w", err)
	}
	m, err := st.GetLastMsgForSubject(ctx, c.prefix+".evt."+token(run)+".run.run.*")
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return OpenRun{}, false, nil
	}
	if err != nil {
		return OpenRun{}, false, fmt.Errorf("read run %s: %w", run, err)
	}
	started, err := DecodeEvent(c.prefix, m.Subject, m.Data, 0)
	if err != nil || started.Type != messages.EvtRunStarted {
		return OpenRun{}, false, err
	}
	d, err := messages.DecodeAs[messages.RunStarted](started)
	if err != nil {
		return OpenRun{}, false, fmt.Errorf("read run %s: %w", run, err)
	}
	open := OpenRun{Lease: time.Duration(d.LeaseMS) * time.Millisecond, Last: started.Time}
	latest, err := st.GetLastMsgForSubject(ctx, c.prefix+".evt."+token(run)+".>")
	if err != nil {
		return OpenRun{}, false, fmt.Errorf("read run %s: %w", run, err)
	}
	if ev, err := DecodeEvent(c.prefix, latest.Subject, latest.Data, 0); err == nil && ev.Time.After(open.Last) {
		open.Last = ev.Time
	}
	return open, true, nil
}
