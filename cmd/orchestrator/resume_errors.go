package main

import (
	"errors"
	"strings"

	"github.com/troupe-ai/troupe/actors/convo"
)

// resumeErr says why resume found nothing to go on from, in a sentence
// for users (no package names): no checkpoint at all, none for the run
// named, or one that cannot be read.
func resumeErr(err error, run, workspace string) error {
	if workspace == "" {
		workspace = "."
	}
	switch {
	case errors.Is(err, convo.ErrNoCheckpoint) && run == "":
		return usageErr("resume: no interrupted run to resume in %s: a run that ended removed its checkpoints (run --keep-checkpoints keeps them)", workspace)
	case errors.Is(err, convo.ErrNoCheckpoint):
		return usageErr("resume: run %s has no checkpoint in %s: it ended (and removed them), or ran in another workspace", run, workspace)
	case errors.Is(err, convo.ErrCorruptCheckpoint):
		detail := strings.TrimPrefix(strings.TrimPrefix(err.Error(), convo.ErrCorruptCheckpoint.Error()), ": ")
		return usageErr("resume: the run's checkpoint cannot be read (%s); nothing was run", detail)
	}
	return usageErr("resume: %v", err)
}
