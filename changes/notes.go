package changes

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/troupe-ai/troupe/messages"
)

// Note is what a parent reads about its child's changes, after the
// child's own text ("" for none).
func Note(c *messages.ChangeOutcome) string {
	if c == nil {
		return ""
	}
	return noteMain(c) + oversizeNote(c)
}

// noteMain is Note's sentence on the changes carried.
func noteMain(c *messages.ChangeOutcome) string {
	files := strings.Join(c.Files, ", ")
	switch c.Status {
	case messages.ChangeStatusApplied:
		return fmt.Sprintf("\n[changes: merged into the workspace: %s]", files)
	case messages.ChangeStatusConflict:
		why := "changed in the workspace since this agent started"
		if c.Reason != "" {
			why = c.Reason
		}
		return fmt.Sprintf("\n[changes: NOT applied: conflict in %s (%s). "+
			"The agent's whole changeset (%s) is kept as %s; it applies to the snapshot the agent started from with git apply]",
			strings.Join(c.Conflicts, ", "), why, files, keptAt(c.Patch))
	case messages.ChangeStatusBranch:
		return fmt.Sprintf("\n[changes: committed on branch %s (%s); the workspace is untouched]", c.Branch, files)
	case messages.ChangeStatusPatch:
		return fmt.Sprintf("\n[changes: written as the patch %s (%s); the workspace is untouched]", keptAt(c.Patch), files)
	}
	return fmt.Sprintf("\n[changes: could not be brought back (%s): %s]", files, c.Error)
}

// keptAt says where a kept patch is: a path, or, relative, where the
// requester keeps it (a node's agent's child's: see taskCarry).
func keptAt(patch string) string {
	if patch == "" || filepath.IsAbs(patch) {
		return patch
	}
	return patch + " in the requester's data directory, where it goes with your own result"
}

// NestedNote is what a parent reads about the changesets of its remote
// child's (agent's) descendants that the requester kept.
func NestedNote(agent string, outs []messages.ChangeOutcome) string {
	var b strings.Builder
	for _, c := range outs {
		if c.Agent == agent {
			fmt.Fprintf(&b, "\n[changes of the agents %s started on its node: could not be brought back: %s]", agent, c.Error)
			continue
		}
		b.WriteString(strings.Replace(Note(&c), "[changes:", "[changes of "+c.Agent+", started by "+agent+" on its node:", 1))
	}
	return b.String()
}

// oversizeList names files left out for their size, with their sizes.
func oversizeList(fs []messages.OversizeFile) string {
	var b strings.Builder
	for i, f := range fs {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s (%d bytes)", f.Path, f.Bytes)
	}
	return b.String()
}

// oversizeNote is what a parent reads of the files left out of its
// child's changes for their size ("" when none).
func oversizeNote(c *messages.ChangeOutcome) string {
	if len(c.Oversize) == 0 {
		return ""
	}
	where := "they stay only where the agent wrote them"
	if c.Worktree != "" {
		where = "its worktree is kept at " + c.Worktree
	}
	return fmt.Sprintf("\n[changes: NOT carried, over agent.max_change_bytes: %s; %s]", oversizeList(c.Oversize), where)
}
