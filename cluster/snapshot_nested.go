package cluster

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/messages"
)

// Nested changesets: the changesets of a remote agent's descendants that
// did not merge into their parents' directories on the node (a conflict
// there, or an agent that did not complete) travel home in the remote
// agent's own result (messages.Result.Nested), so that only the node that
// holds the task's delivery delivers them. A patch too large to carry
// inline goes to the changes bucket, as the agent's own does.

// maxInlineNestedPatch is the largest nested patch a result carries
// inline; the inline ones together stay under messages.MaxNestedInline.
const maxInlineNestedPatch = 64 << 10

// packNested bounds the nested changesets of a task's result for the
// wire: beyond messages.MaxNestedChanges they are dropped, and a patch
// too large to carry inline is stored in the changes bucket; what could
// not travel is said in the result's error.
func (n *Node) packNested(task actors.ChildTask, res *actors.AgentResult) {
	if len(res.Nested) == 0 {
		return
	}
	var lost []string
	if len(res.Nested) > messages.MaxNestedChanges {
		for _, s := range res.Nested[messages.MaxNestedChanges:] {
			lost = append(lost, s.Agent)
		}
		res.Nested = res.Nested[:messages.MaxNestedChanges]
	}
	ctx, cancel := context.WithTimeout(n.ctx, snapshotFetchTimeout)
	defer cancel()
	inline := 0
	kept := res.Nested[:0]
	for _, s := range res.Nested {
		s.PatchSHA256 = messages.Digest(s.Patch)
		if len(s.Patch) > maxInlineNestedPatch || inline+len(s.Patch) > messages.MaxNestedInline {
			name := task.Run + "/" + task.ID + "-" + strconv.Itoa(task.Attempt) + "-" + s.Agent + ".patch"
			if err := n.storePatch(ctx, name, s.Patch); err != nil {
				n.o.Log.Error().Err(err).Str("agent", s.Agent).Msg("store a nested agent's patch")
				lost = append(lost, s.Agent)
				continue
			}
			s.Patch, s.PatchRef = nil, name
		}
		inline += len(s.Patch)
		kept = append(kept, s)
	}
	res.Nested = kept
	if len(lost) > 0 {
		res.Err = joinErr(res.Err, fmt.Sprintf("node %s could not send the changesets of %s, agents below %s that did not merge (at most %d travel in a result, or the changes bucket refused them)",
			n.o.Name, strings.Join(lost, ", "), task.ID, messages.MaxNestedChanges))
	}
}

// storePatch puts a patch in the changes bucket as name.
func (n *Node) storePatch(ctx context.Context, name string, patch []byte) error {
	obs, err := n.o.Bus.JetStream().ObjectStore(ctx, n.o.Bus.Names().Changes)
	if err != nil {
		return fmt.Errorf("store the patch: %w", err)
	}
	if _, err := obs.PutBytes(ctx, name, patch); err != nil {
		return fmt.Errorf("store the patch: %w", err)
	}
	return nil
}
