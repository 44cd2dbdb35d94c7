package cluster

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go/jetstream"
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
		name := task.Run + "/" + task.ID + "-" + strconv.Itoa(task.Attempt) + "-" + s.Agent + ".patch"
		if err := n.shipNested(ctx, &s, name, min(maxInlineNestedPatch, messages.MaxNestedInline-inline)); err != nil {
			n.o.Log.Error().Err(err).Str("agent", s.Agent).Msg("store a nested agent's patch")
			lost = append(lost, s.Agent)
			continue
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

// shipNested makes a nested changeset's patch fit the result: spooled
// (Carry: its file removed once read or stored), or held in memory, it
// travels inline when no longer than inline bytes, else from the changes
// bucket as name.
func (n *Node) shipNested(ctx context.Context, s *messages.NestedChanges, name string, inline int) error {
	if s.PatchFile != "" {
		defer os.Remove(s.PatchFile)
		patch, ref, err := n.shipPatch(ctx, name, s.PatchFile, int64(inline))
		if err != nil {
			return err
		}
		s.Patch, s.PatchRef, s.PatchFile = patch, ref, ""
		return nil
	}
	s.PatchSHA256 = messages.Digest(s.Patch)
	if len(s.Patch) <= inline {
		return nil
	}
	obs, err := n.o.Bus.JetStream().ObjectStore(ctx, n.o.Bus.Names().Changes)
	if err == nil {
		_, err = obs.PutBytes(ctx, name, s.Patch)
	}
	if err != nil {
		return fmt.Errorf("store the patch: %w", err)
	}
	s.Patch, s.PatchRef = nil, name
	return nil
}

// shipPatch carries the patch spooled at file: its bytes when it is no
// longer than inline, else its name in the changes bucket (name), where
// it is streamed in chunks from the file.
func (n *Node) shipPatch(ctx context.Context, name, file string, inline int64) ([]byte, string, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, "", fmt.Errorf("store the patch: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, "", fmt.Errorf("store the patch: %w", err)
	}
	if st.Size() <= inline {
		patch, err := io.ReadAll(f)
		return patch, "", err
	}
	obs, err := n.o.Bus.JetStream().ObjectStore(ctx, n.o.Bus.Names().Changes)
	if err != nil {
		return nil, "", fmt.Errorf("store the patch: %w", err)
	}
	if _, err := obs.Put(ctx, jetstream.ObjectMeta{Name: name}, f); err != nil {
		return nil, "", fmt.Errorf("store the patch: %w", err)
	}
	return nil, name, nil
}
