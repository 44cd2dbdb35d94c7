package bus

import (
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/troupe-ai/troupe/messages"
)

// Role is what a NATS user of troupe may do. The server enforces it: each
// role's credentials carry the subjects it may publish and subscribe to,
// and everything else is refused with a permissions violation.
type Role string

// The roles. The server's own system account is a fourth, used by no
// troupe process but `orchestrator auth revoke`.
const (
	// RoleRequester starts runs: it creates the streams, publishes tasks,
	// cancels, steers and asks nodes for their status, serves its runs'
	// budget and answers approval questions. It is the only role that may
	// answer a budget or approval request or publish a run.* event.
	RoleRequester Role = "requester"
	// RoleNode pulls tasks of its kinds, publishes results, asks for
	// budget and approvals, keeps its own entry in the node registry, reads
	// workspace snapshots (never writes them) and writes changesets. It
	// publishes no event about a run: it sends its agents' events to the
	// run's requester (<prefix>.ctl.<run>.<agent>.events), which checks
	// and publishes them; only its own lifecycle events (run "nodes") it
	// publishes itself.
	RoleNode Role = "node"
	// RoleWatcher reads events, the node and run registries and the task
	// queue's depth (its stream's info, never its tasks); nothing else.
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

// Response windows: how long a user may answer a request it received
// (allow_responses), once. A node answers status and steering requests;
// a requester answers budget, snapshot and approval requests, and an
// approval waits for a person (agent.approval_timeout, default 2 min).
const (
	nodeResponseTTL      = 2 * time.Minute
	requesterResponseTTL = time.Hour
)

// InboxPrefix is the inbox prefix of the user with public key user: its
// replies (request/reply, JetStream API answers, pulled tasks, consumer
// deliveries) arrive under InboxPrefix(user) + ".", which only that user
// may subscribe to. Everyone else's replies go elsewhere.
func InboxPrefix(user string) string { return "_INBOX_" + user }

// Grant is what one user of troupe may do: its role, the subject prefix
// of its streams and subjects, its user key (which names its inbox) and,
// for a node of its own identity, its name (its key in the node
// registry) and the kinds it may take.
type Grant struct {
	Role   Role
	Prefix string
	// User is the user's public key (nkeys); the user subscribes to
	// InboxPrefix(User).> and to no other inbox.
	User string
	// Node is a node's own name (checked where it is issued: see
	// CheckName): the only registry key it may write. "" is the shared
	// node.creds of earlier troupes, which may write any key.
	Node string
	// Kinds are the agent kinds a node may take; none means any kind.
	Kinds []string
}

// names are the streams a grant names, as JetStream holds them.
type streams struct {
	events, tasks, results, nodes, runs, artifacts, snapshots, changes string
}

func streamsOf(n Names) streams {
	return streams{events: n.Events, tasks: n.Tasks, results: n.Results, nodes: "KV_" + n.Nodes, runs: "KV_" + n.Runs,
		artifacts: "OBJ_" + n.Artifacts, snapshots: "OBJ_" + n.Snapshots, changes: "OBJ_" + n.Changes}
}

func (s streams) all() []string {
	return []string{s.events, s.tasks, s.results, s.nodes, s.runs, s.artifacts, s.snapshots, s.changes}
}

// Permissions are the subjects g's user may publish and subscribe to.
// Every grant names the prefix's own streams, buckets and subjects, so no
// user of one prefix reaches another's.
func (g Grant) Permissions() (jwt.Permissions, error) {
	if err := CheckToken("nats.prefix", g.Prefix); err != nil {
		return jwt.Permissions{}, err
	}
	if g.User == "" {
		return jwt.Permissions{}, fmt.Errorf("%w: a grant needs the user's key", ErrBadKeys)
	}
	var perm jwt.Permissions
	// Only the server speaks for JetStream and for itself.
	perm.Pub.Deny = []string{"$JS.EVENT.>", "$SYS.>"}
	inbox := InboxPrefix(g.User) + ".>"
	switch g.Role {
	case RoleRequester:
		perm.Pub.Allow, perm.Sub.Allow = g.requester()
		perm.Resp = &jwt.ResponsePermission{MaxMsgs: 1, Expires: requesterResponseTTL}
	case RoleNode:
		for _, k := range g.Kinds {
			if err := CheckToken("kind", k); err != nil {
				return jwt.Permissions{}, err
			}
		}
		perm.Pub.Allow, perm.Sub.Allow = g.node()
		// Nothing of the run's own: its start and end are the requester's.
		perm.Pub.Deny = append(perm.Pub.Deny, g.Prefix+".evt.*.*.run.>")
		perm.Resp = &jwt.ResponsePermission{MaxMsgs: 1, Expires: nodeResponseTTL}
	case RoleWatcher:
		perm.Pub.Allow, perm.Sub.Allow = g.watcher()
	default:
		return jwt.Permissions{}, fmt.Errorf("%w: %q", ErrUnknownRole, g.Role)
	}
	// $JS.API.STREAM.NAMES: the stream names of the account (nats stream ls
	// --names), names only; nothing of another prefix's streams beyond them.
	perm.Pub.Allow = uniq(append([]string{"$JS.API.INFO", "$JS.API.STREAM.NAMES"}, perm.Pub.Allow...))
	perm.Sub.Allow = append(perm.Sub.Allow, inbox)
	return perm, nil
}

// requester: everything of its prefix's streams and subjects but deleting
// a stream; replies only to the requests it received.
func (g Grant) requester() (pub, sub []string) {
	p, n := g.Prefix+".", NamesFor(g.Prefix)
	s := streamsOf(n)
	pub = []string{p + "evt.>", p + "task.>", p + "ctl.>", p + "ask.>", p + "budget.>", p + "beat.run.*"}
	for _, st := range s.all() {
		pub = append(pub, jsStream(st, "INFO", "CREATE", "UPDATE", "PURGE", "MSG.GET", "MSG.DELETE")...)
		pub = append(pub, jsConsumer(st, "CREATE", "INFO", "DELETE", "MSG.NEXT")...)
		pub = append(pub, "$JS.API.CONSUMER.CREATE."+st, "$JS.FC."+st+".>")
	}
	pub = append(pub, "$KV."+n.Nodes+".>", "$KV."+n.Runs+".>", "$O."+n.Artifacts+".>", "$O."+n.Snapshots+".>", "$O."+n.Changes+".>")
	// Provider rate limits: a requester asks the quota's owner and may be
	// the owner (the rate bucket's lease; serving leases and reports,
	// sending freeze notices).
	rate := "KV_" + n.Rate
	pub = append(pub, p+"rate.>", "$KV."+n.Rate+".>", "$JS.API.CONSUMER.CREATE."+rate, "$JS.FC."+rate+".>")
	pub = append(pub, jsStream(rate, "INFO", "CREATE", "UPDATE", "MSG.GET")...)
	pub = append(pub, jsConsumer(rate, "CREATE", "INFO", "DELETE")...)
	// The task queue's advisories: a task out of attempts, or terminated.
	sub = []string{p + ">", "$JS.EVENT.ADVISORY.CONSUMER.*." + s.tasks + ".*"}
	return pub, sub
}

// node: pull and settle tasks of its kinds, write results, start notices,
// snapshot requests, its events, changesets and artifacts, its own
// registry entry; read what it runs against. No stream is created,
// updated or purged; no object store purged.
func (g Grant) node() (pub, sub []string) {
	p, n := g.Prefix+".", NamesFor(g.Prefix)
	s := streamsOf(n)
	// Events: its own lifecycle events (run "nodes") only; its agents' go
	// to their run's requester (ctl.<run>.<agent>.events), which publishes.
	pub = []string{p + "evt.nodes.>", p + "ctl.*.*.events", p + "result.>", p + "budget.>", p + "ask.>", p + "ctl.*.*.started", p + "ctl.*.*.snapshot"}
	key := g.Node
	if key == "" {
		key = "*" // the shared node.creds: any node's key
	}
	// Its registry entry and heartbeat (its own, unless shared).
	pub = append(pub, "$KV."+n.Nodes+"."+key, p+"beat.node."+key, "$O."+n.Artifacts+".>", "$O."+n.Changes+".>")
	// Whether what it needs exists (it waits for the requester to make it).
	pub = append(pub, jsStreamAll(s.all(), "INFO")...)
	// The queue: its kinds' consumers, made, pulled from and settled.
	cons := []struct{ name, filter string }{{"*", TaskSubject(g.Prefix, "*", messages.ProtocolVersion)}}
	if len(g.Kinds) > 0 {
		cons = cons[:0]
		for _, k := range g.Kinds {
			cons = append(cons, struct{ name, filter string }{ConsumerName(g.Prefix, k, messages.ProtocolVersion),
				TaskSubject(g.Prefix, k, messages.ProtocolVersion)})
		}
	}
	for _, c := range cons {
		q := s.tasks + "." + c.name
		pub = append(pub, "$JS.API.CONSUMER.CREATE."+q+"."+c.filter, "$JS.API.CONSUMER.INFO."+q,
			"$JS.API.CONSUMER.MSG.NEXT."+q, "$JS.ACK."+q+".>")
	}
	// Whether a task it runs is still its own (node_claims.go), whether an
	// earlier attempt stored its result, its registry entry (an earlier
	// process of its own name), a changeset's name before a put: single
	// messages, read with STREAM.MSG.GET only (see disallowDirect).
	pub = append(pub, jsStreamAll([]string{s.tasks, s.results, s.nodes, s.changes}, "MSG.GET")...)
	// The run leases followed, the artifacts and snapshots read: an object
	// or a bucket read through an ordered push consumer into its inbox, and
	// never pulled (a pull's reply subject is the puller's to name).
	pub = append(pub, follow(s.runs, s.artifacts, s.snapshots)...)
	// Control of the agents it runs, and the runs' heartbeats; nothing
	// else of the runs'.
	sub = []string{p + "ctl.*.cancel", p + "ctl.*.*.cancel", p + "ctl.*.*.input", p + "ctl.*.*.status", p + "beat.run.*"}
	// Provider rate limits: a node asks the quota's owner for leases and
	// reports 429s; it hears freeze notices; it never owns the quota.
	pub = append(pub, p+"rate.*.lease", p+"rate.*.report")
	sub = append(sub, p+"rate.*.frozen")
	return pub, sub
}

// watcher: the events and the registries, read (the events through
// pulled ordered consumers, the registries through pushed ones), and the
// task queue's info for monitoring (its depth), never its tasks.
func (g Grant) watcher() (pub, sub []string) {
	s := streamsOf(NamesFor(g.Prefix))
	pub = append(readStream(s.events), follow(s.nodes, s.runs)...)
	pub = append(pub, jsStream(s.tasks, "INFO")...)
	return pub, []string{g.Prefix + ".evt.>", g.Prefix + ".beat.run.*"}
}

// jsStream is $JS.API.STREAM.<op>.<stream> for each op.
func jsStream(stream string, ops ...string) []string {
	return jsStreamAll([]string{stream}, ops...)
}

func jsStreamAll(streams []string, ops ...string) []string {
	var out []string
	for _, op := range ops {
		for _, s := range streams {
			out = append(out, "$JS.API.STREAM."+op+"."+s)
		}
	}
	return out
}

// jsConsumer is $JS.API.CONSUMER.<op>.<stream>.> for each op: the op on
// any consumer of stream (and only of stream: the stream is the token
// after the op, never a wildcard).
func jsConsumer(stream string, ops ...string) []string {
	var out []string
	for _, op := range ops {
		out = append(out, "$JS.API.CONSUMER."+op+"."+stream+".>")
	}
	return out
}

// readStream is what reading a stream with an ordered (or any ephemeral)
// consumer, pulled or pushed, or getting one message of it, needs.
func readStream(streams ...string) []string {
	var out []string
	for _, s := range streams {
		out = append(out, jsStream(s, "INFO", "MSG.GET")...)
		out = append(out, jsConsumer(s, "CREATE", "INFO", "DELETE", "MSG.NEXT")...)
		out = append(out, "$JS.FC."+s+".>")
	}
	return out
}

// follow is what reading a stream through ordered consumers pushed into
// the reader's inbox (nats.go's bucket watches and object reads), or one
// message of it, needs: no pull (MSG.NEXT), whose reply subject the
// puller names.
func follow(streams ...string) []string {
	var out []string
	for _, s := range streams {
		out = append(out, jsStream(s, "INFO", "MSG.GET")...)
		out = append(out, jsConsumer(s, "CREATE", "INFO", "DELETE")...)
		out = append(out, "$JS.API.CONSUMER.CREATE."+s, "$JS.FC."+s+".>")
	}
	return out
}

// ConsumerName is the durable consumer of kind's tasks in one protocol
// version, shared by every node of that version that runs the kind:
// <prefix>_<kind>_v<protocol>.
func ConsumerName(prefix, kind string, protocol int) string {
	return prefix + "_" + kind + "_v" + fmt.Sprint(protocol)
}

// CheckName refuses a name that cannot be a registry key and a subject
// token: letters, digits, _ and - only, at most 64 of them.
func CheckName(what, s string) error {
	if s == "" || len(s) > 64 || strings.IndexFunc(s, func(r rune) bool {
		return !(r == '_' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')
	}) >= 0 {
		return fmt.Errorf("%s %q: use 1 to 64 letters, digits, _ and -", what, s)
	}
	return nil
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
