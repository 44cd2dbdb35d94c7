package actors

import (
	"context"
	"fmt"
	"time"
)

// RootStatus asks a team's root agent for its state, for tests that check
// the agent answers while a model call or tool runs.
func RootStatus(ctx context.Context, t *Team) (*StatusReply, error) {
	res, err := t.rt.system.Root.RequestFuture(t.root, &Status{}, 5*time.Second).Result()
	if err != nil {
		return nil, fmt.Errorf("status: %w", err)
	}
	return res.(*StatusReply), nil
}

// BytesWritten is how many bytes a team's agents have written to their
// checkpoints and journals.
func BytesWritten(t *Team) int64 { return t.rt.written.Load() }
