package bus

import (
	"context"
	"errors"
	"fmt"

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
