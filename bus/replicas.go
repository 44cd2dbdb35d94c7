package bus

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go/jetstream"
)

// Replication. In a cluster of three or more servers every stream,
// bucket and object store troupe makes keeps three replicas (nats.replicas
// 3): one server lost loses nothing, and the others go on once they have
// elected new leaders. A single server, or a cluster of two, keeps one.
// An existing stream keeps what its creator chose (below).

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

// Whose replicas. The stream's creator decides: a party that leaves
// nats.replicas unset (the hub's choice) creates what is missing with the
// hub's choice and never changes the replicas of a stream that exists,
// so an operator's nats.replicas 1 (or 3) holds whatever the runs and
// nodes that come later leave unset. A party that sets nats.replicas
// explicitly brings every existing stream to it, up or down. The one
// exception is a stream troupe made with one replica only because the
// cluster's servers were not all up (fewerMark in its description): it
// is raised to the replicas its creator wanted by the next party that
// finds the servers up, whatever it sets.

// fewerMark ends the description of a stream made with fewer replicas
// than its creator asked for, servers missing.
const fewerMark = " [troupe: 1 replica until the cluster's servers are up]"

// reconcileReplicas brings the replicas of existing streams of names to
// want: every one when the operator set nats.replicas explicitly
// (apply), else only those made with fewer for want of servers. What
// could not be changed is reported, with the command that changes it.
func reconcileReplicas(ctx context.Context, js jetstream.JetStream, names Names, want int, apply bool) []LimitDiff {
	var diffs []LimitDiff
	for _, name := range streamNames(names) {
		s, err := js.Stream(ctx, name)
		if err != nil {
			continue // not made (yet): it is created with want
		}
		cfg := s.CachedInfo().Config
		have := max(cfg.Replicas, 1)
		marked := strings.HasSuffix(cfg.Description, fewerMark)
		switch {
		case apply && (have != want || marked):
		case !apply && marked && have < want:
		default:
			continue // as it is, or its creator's choice
		}
		cfg.Replicas = want
		cfg.Description = strings.TrimSuffix(cfg.Description, fewerMark)
		_, err = js.UpdateStream(ctx, cfg)
		if have == want {
			continue // only the mark went
		}
		d := LimitDiff{Stream: name, Setting: "nats.replicas", Had: strconv.Itoa(have), Want: strconv.Itoa(want), Applied: err == nil}
		if err != nil {
			d.Failed = fmt.Sprintf("%v; once every server is up, start `orchestrator serve` (or a run) again with nats.replicas: %d, "+
				"or run `nats stream edit %s --replicas %d`", err, want, name, want)
		}
		diffs = append(diffs, d)
	}
	return diffs
}

// markFewer marks stream as made with fewer replicas than asked for.
func markFewer(ctx context.Context, js jetstream.JetStream, stream string) error {
	s, err := js.Stream(ctx, stream)
	if err != nil {
		return err
	}
	cfg := s.CachedInfo().Config
	if strings.HasSuffix(cfg.Description, fewerMark) {
		return nil
	}
	cfg.Description += fewerMark
	_, err = js.UpdateStream(ctx, cfg)
	return err
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
