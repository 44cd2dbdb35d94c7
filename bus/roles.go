package bus

import (
	"fmt"
	"time"

	"github.com/nats-io/jwt/v2"
)

// Role is what a NATS user of troupe may do. The server enforces it: each
// role's credentials carry the subjects it may publish and subscribe to,
// and everything else is refused with a permissions violation.
type Role string

// The roles. The server's own system account is a fourth, used by no
// troupe process.
const (
	// RoleRequester starts runs: it creates the streams, publishes tasks,
	// cancels, steers and asks nodes for their status, serves its runs'
	// budget and answers approval questions. It is the only role that may
	// answer a budget or approval request or publish a run.* event.
	RoleRequester Role = "requester"
	// RoleNode pulls tasks of its kinds, publishes events (but no run.*
	// event) and results, asks for budget and approvals, keeps its entry
	// in the node registry, reads workspace snapshots (never writes them)
	// and writes changesets.
	RoleNode Role = "node"
	// RoleWatcher reads events and the node registry, nothing else.
	RoleWatcher Role = "watcher"
)

// Roles lists the roles that have credentials, in the order they are
// written and shown.
var Roles = []Role{RoleRequester, RoleNode, RoleWatcher}

// ParseRole returns the role named s.
func ParseRole(s string) (Role, error) {
	for _, r := range Roles {
		if string(r) == s {
			return r, nil
		}
	}
	return "", fmt.Errorf("%w: %q (want requester, node or watcher)", ErrUnknownRole, s)
}

// Stream names of the node registry and the artifacts store as JetStream
// holds them.
const (
	nodesKVStream   = "KV_" + NodesBucket
	runsKVStream    = "KV_" + RunsBucket
	artifactsStream = "OBJ_" + ArtifactsBucket
)

// nodeResponseTTL bounds how long a node may answer a request it received
// (a status or steering request from the requester).
const nodeResponseTTL = 2 * time.Minute

// jsAPI returns the JetStream API subjects $JS.API.<op>.<stream> for each
// op and stream, plus $JS.API.<op>.<stream>.> when more tokens follow.
func jsAPI(streams []string, more bool, ops ...string) []string {
	var out []string
	for _, op := range ops {
		for _, s := range streams {
			subj := "$JS.API." + op + "." + s
			if more {
				subj += ".>"
			}
			out = append(out, subj)
		}
	}
	return out
}

// readStream is what reading a stream with an ordered (or any ephemeral)
// consumer, or getting one message of it, needs.
func readStream(streams ...string) []string {
	out := jsAPI(streams, false, "STREAM.INFO", "STREAM.MSG.GET", "DIRECT.GET")
	out = append(out, jsAPI(streams, true, "DIRECT.GET", "CONSUMER.CREATE", "CONSUMER.INFO",
		"CONSUMER.DELETE", "CONSUMER.MSG.NEXT")...)
	for _, s := range streams {
		out = append(out, "$JS.FC."+s+".>")
	}
	return out
}

// RolePermissions are the subjects role may publish and subscribe to for
// the subject prefix.
func RolePermissions(role Role, prefix string) (jwt.Permissions, error) {
	if err := CheckToken("nats.prefix", prefix); err != nil {
		return jwt.Permissions{}, err
	}
	p := prefix + "."
	var perm jwt.Permissions
	common := []string{"$JS.API.INFO", "$JS.API.STREAM.NAMES"}
	// Only the server speaks for JetStream and for itself.
	perm.Pub.Deny = []string{"$JS.EVENT.>", "$SYS.>"}
	switch role {
	case RoleRequester:
		perm.Pub.Allow = append(common, p+"evt.>", p+"task.>", p+"ctl.>", p+"ask.>", p+"budget.>", p+"beat.run.*",
			"$JS.API.>", "$JS.ACK.>", "$JS.FC.>", "$KV.>", "$O.>", "_INBOX.>")
		perm.Sub.Allow = []string{p + ">", "$JS.EVENT.ADVISORY.>", "_INBOX.>"}
		// Provider rate limits: a requester asks the quota's owner, and may
		// be the owner (serving leases and reports, sending freeze notices).
		perm.Pub.Allow = append(perm.Pub.Allow, p+"rate.>")
	case RoleNode:
		own := []string{EventsStream, TasksStream, ResultsStream, nodesKVStream, artifactsStream, runsKVStream, snapshotsStream, changesStream}
		// Snapshots are read only; changesets written (and read back).
		perm.Pub.Allow = append(common, p+"evt.>", p+"result.>", p+"budget.>", p+"ask.>", p+"ctl.*.*.started", p+"beat.node.*",
			p+"ctl.*.*.snapshot", "$KV."+NodesBucket+".>", "$O."+ArtifactsBucket+".>", "$O."+ChangesBucket+".>",
			"$JS.ACK."+TasksStream+".>")
		// A node creates what is missing (it may start before any run).
		perm.Pub.Allow = append(perm.Pub.Allow, jsAPI(own, false, "STREAM.INFO", "STREAM.CREATE")...)
		perm.Pub.Allow = append(perm.Pub.Allow, jsAPI([]string{TasksStream}, true, "CONSUMER.CREATE",
			"CONSUMER.DURABLE.CREATE", "CONSUMER.INFO", "CONSUMER.MSG.NEXT")...)
		perm.Pub.Allow = append(perm.Pub.Allow, readStream(nodesKVStream, artifactsStream, runsKVStream)...)
		perm.Pub.Allow = append(perm.Pub.Allow, jsAPI([]string{ResultsStream}, false, "STREAM.MSG.GET", "DIRECT.GET")...)
		// Whether a task it runs is still its own (node_claims.go).
		perm.Pub.Allow = append(perm.Pub.Allow, jsAPI([]string{TasksStream}, false, "STREAM.MSG.GET")...)
		perm.Pub.Allow = append(perm.Pub.Allow, jsAPI([]string{artifactsStream}, false, "STREAM.PURGE")...)
		// Reading an object (its meta, then its chunks through an ordered
		// consumer) and looking one up before a put; each changeset has a
		// name of its own, so no put replaces (purges) another.
		perm.Pub.Allow = append(perm.Pub.Allow, jsAPI([]string{snapshotsStream, changesStream}, true, "DIRECT.GET")...)
		perm.Pub.Allow = append(perm.Pub.Allow, jsAPI([]string{snapshotsStream}, true, "CONSUMER.CREATE", "CONSUMER.DELETE")...)
		perm.Pub.Allow = append(perm.Pub.Allow, jsAPI([]string{snapshotsStream}, false, "CONSUMER.CREATE")...)
		perm.Pub.Allow = append(perm.Pub.Allow, "$JS.FC."+snapshotsStream+".>")
		// Nothing of the run's own: its start and end are the requester's.
		perm.Pub.Deny = append(perm.Pub.Deny, p+"evt.*.*.run.>")
		perm.Sub.Allow = []string{p + "ctl.>", p + "beat.run.*", "_INBOX.>"}
		// Provider rate limits: a node asks the quota's owner for leases and
		// reports 429s; it hears freeze notices; it never owns the quota.
		perm.Pub.Allow = append(perm.Pub.Allow, p+"rate.*.lease", p+"rate.*.report")
		perm.Sub.Allow = append(perm.Sub.Allow, p+"rate.*.frozen")
		perm.Resp = &jwt.ResponsePermission{MaxMsgs: 1, Expires: nodeResponseTTL}
	case RoleWatcher:
		perm.Pub.Allow = append(common, readStream(EventsStream, nodesKVStream, runsKVStream)...)
		perm.Sub.Allow = []string{p + "evt.>", p + "beat.run.*", "_INBOX.>"}
	default:
		return jwt.Permissions{}, fmt.Errorf("%w: %q", ErrUnknownRole, role)
	}
	perm.Pub.Allow = uniq(perm.Pub.Allow)
	return perm, nil
}

// uniq drops the repeats of subjects, keeping the first of each.
func uniq(subjects []string) []string {
	seen := map[string]bool{}
	out := subjects[:0]
	for _, s := range subjects {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}
