package convo

import "errors"

// Sentinel errors. Functions wrap them with the detail (file, index, id).
var (
	// ErrPendingToolCalls means the last assistant message still has tool
	// calls without results, so the operation would break the pairing.
	ErrPendingToolCalls = errors.New("convo: tool calls are still waiting for results")
	// ErrNothingToCompact means no message lies between the pinned prefix
	// and the recency window, so a summary would save nothing.
	ErrNothingToCompact = errors.New("convo: nothing to compact")
	// ErrNoCheckpoint means no checkpoint file exists where one was looked for.
	ErrNoCheckpoint = errors.New("convo: no checkpoint")
	// ErrCorruptCheckpoint means a checkpoint file exists but cannot be
	// decoded (corrupt, truncated, or of an unknown version).
	ErrCorruptCheckpoint = errors.New("convo: corrupt checkpoint")
)
