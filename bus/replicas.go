package bus

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/nats-io/nats.go/jetstream"
)

// Replication. In a cluster of three or more servers every stream,
// bucket and object store troupe makes keeps three replicas (nats.replicas
// 3): one server lost loses nothing, and the others go on once they have
// elected new leaders. A single server, or a cluster of two, keeps one.

// ClusterReplicas is the replicas nats.replicas takes by default in a
// cluster of at least that many servers.
const ClusterReplicas = 3

// CheckReplicas refuses a nats.replicas other than 0 (chosen by the hub),
// 1 or 3.
func CheckReplicas(n int) error {
	if n != 0 && n != 1 && n != ClusterReplicas {
		return fmt.Errorf("nats.replicas %d: want 1 or %d (0 or unset: %d in a cluster of %d or more servers, else 1)",
			n, ClusterReplicas, ClusterReplicas, ClusterReplicas)
	}
	return nil
}

// HubReplicas is the replicas the hub this connection reaches calls for:
// ClusterReplicas when it is a cluster (its server says so) of which the
// connection knows at least that many servers (the URLs it was given and
// those the cluster told it of), else 1.
func (c *Conn) HubReplicas() int {
	if c.nc.ConnectedClusterName() != "" && len(c.nc.Servers()) >= ClusterReplicas {
		return ClusterReplicas
	}
	return 1
}

// replicasFor is the replicas l asks for, the hub's choice when l does not
// say.
func (c *Conn) replicasFor(l StreamLimits) int {
	switch {
	case l.Replicas > 0:
		return l.Replicas
	case l.HubSize >= ClusterReplicas:
		return ClusterReplicas
	case l.HubSize > 0:
		return 1
	}
	return c.HubReplicas()
}

// streamNames are the JetStream streams behind every stream, bucket and
// object store of names, in the order they are reconciled.
func streamNames(names Names) []string {
	return []string{names.Events, names.Tasks, names.Results, "KV_" + names.Nodes, "KV_" + names.Runs,
		"OBJ_" + names.Artifacts, "OBJ_" + names.Snapshots, "OBJ_" + names.Changes}
}

// reconcileReplicas brings the replicas of every existing stream of names
// to want: raised in place when they are fewer (JetStream copies the
// messages to the new replicas and keeps serving meanwhile), lowered only
// when the operator set nats.replicas explicitly (apply). What could not
// be changed is reported, with the command that changes it.
func reconcileReplicas(ctx context.Context, js jetstream.JetStream, names Names, want int, apply bool) []LimitDiff {
	var diffs []LimitDiff
	for _, name := range streamNames(names) {
		s, err := js.Stream(ctx, name)
		if err != nil {
			continue // not made (yet): it is created with want
		}
		cfg := s.CachedInfo().Config
		have := max(cfg.Replicas, 1)
		if have == want || have > want && !apply {
			continue
		}
		d := LimitDiff{Stream: name, Setting: "nats.replicas", Had: strconv.Itoa(have), Want: strconv.Itoa(want), Applied: true}
		cfg.Replicas = want
		if _, err := js.UpdateStream(ctx, cfg); err != nil {
			d.Applied = false
			d.Failed = fmt.Sprintf("%v; once every server is up, start `orchestrator serve` (or a run) again with nats.replicas: %d, "+
				"or run `nats stream edit %s --replicas %d`", err, want, name, want)
		}
		diffs = append(diffs, d)
	}
	return diffs
}

// errTooFewServers says a stream asked for more replicas than the servers
// up can hold.
func errTooFewServers(err error) bool {
	var api *jetstream.APIError
	return errors.As(err, &api) && (api.ErrorCode == jsInsufficientResources || api.ErrorCode == jsNoPeers ||
		api.ErrorCode == jsReplicasNotSupported)
}

// nats-server's error codes (errors.json) for replicas that cannot be
// placed.
const (
	jsInsufficientResources jetstream.ErrorCode = 10023 // insufficient resources
	jsNoPeers               jetstream.ErrorCode = 10005 // no suitable peers for placement
	jsReplicasNotSupported  jetstream.ErrorCode = 10074 // replicas > 1 not supported in non-clustered mode
)
