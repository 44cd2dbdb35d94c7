package cluster

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/troupe-ai/troupe/bus"
	"github.com/troupe-ai/troupe/messages"
)

// A node's own identity. Credentials issued for one node (orchestrator
// auth node NAME) let it write only the registry key NAME and pull only
// its kinds' tasks: the node takes NAME as its ID, and refuses kinds its
// credentials do not grant before it asks the server for them. Its ID is
// then the same from one process to the next, so a node starting again
// first waits for the entry of its earlier process to go quiet: two live
// processes under one ID would be taken for one node.

// identify refuses an ID or kinds the node's credentials do not grant
// (defaults gives a node of its own identity its name as ID).
func (o *NodeOptions) identify() error {
	id := o.Bus.Identity()
	if id.Role != bus.RoleNode {
		return nil
	}
	if id.Node != "" && o.ID != id.Node {
		return fmt.Errorf("node ID %q: the credentials are node %q's, which may write only that registry entry", o.ID, id.Node)
	}
	tasks := o.Bus.Names().Tasks
	var refused []string
	for _, k := range o.Kinds {
		if !id.MayPublish("$JS.API.CONSUMER.MSG.NEXT." + tasks + "." + consumerName(o.Bus.Prefix(), k, o.Protocol)) {
			refused = append(refused, k)
		}
	}
	if len(refused) > 0 {
		return fmt.Errorf("%w: kinds %s: the credentials of %s do not grant them (orchestrator auth node %s --kinds ... issues them)",
			ErrKindNotGranted, strings.Join(refused, ","), id.Name, id.Node)
	}
	return nil
}

// identityQuiet is how long an entry under the node's key must go
// unwritten, beyond two of its heartbeats, before a node of the same
// identity takes the key over.
const identityQuiet = 500 * time.Millisecond

// claimKey returns once no other process holds the node's registry key:
// the key has no entry, or its entry was not rewritten for two of its
// heartbeats (the time after which a run counts that node lost). While
// it is, the node waits, saying so on its log. Only a node of its own
// identity (a fixed ID) waits; a random ID is nobody else's.
func (n *Node) claimKey(ctx context.Context) error {
	if n.o.Bus.Identity().Node == "" {
		return nil
	}
	said := false
	for {
		e, err := n.registry().Get(ctx, n.o.ID)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read the registry entry of %s: %w", n.o.ID, err)
		}
		wait := 2 * n.o.Heartbeat
		if info, err := messages.Decode[messages.NodeInfo](e.Value(), maxTaskBytes); err == nil && info.BeatMS > 0 {
			wait = 2 * time.Duration(info.BeatMS) * time.Millisecond
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait + identityQuiet):
		}
		again, err := n.registry().Get(ctx, n.o.ID)
		if errors.Is(err, jetstream.ErrKeyNotFound) || err == nil && again.Revision() == e.Revision() {
			return nil // it left, or went quiet: gone
		}
		if err != nil {
			return fmt.Errorf("read the registry entry of %s: %w", n.o.ID, err)
		}
		if !said {
			said = true
			n.o.Log.Warn().Str("node", n.o.ID).Msg("another process runs as this node (its registry entry is being rewritten); waiting for it to stop: one identity per node process")
		}
	}
}
