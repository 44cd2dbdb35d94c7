package bus

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/troupe-ai/troupe/messages"
)

// DefaultPrefix is the first token of every troupe subject.
const DefaultPrefix = "troupe"

// Stream and bucket names of the default prefix (NamesFor(DefaultPrefix)).
const (
	EventsStream  = "TROUPE_EVENTS"
	TasksStream   = "TROUPE_TASKS"
	ResultsStream = "TROUPE_RESULTS"
	NodesBucket   = "troupe_nodes"
	RunsBucket    = "troupe_runs"
)

// Names are the JetStream streams and buckets of one subject prefix, so
// that two prefixes share a server without touching each other's.
type Names struct {
	Events, Tasks, Results string // streams
	Nodes, Artifacts       string // KV bucket, object store
	Snapshots, Changes     string // object stores of workspace snapshots and changesets
	Runs                   string // KV bucket: the run leases
	Rate                   string // KV bucket: who owns the hub's rate limits
}

// NamesFor is prefix's names: streams <PREFIX>_EVENTS, _TASKS and
// _RESULTS, buckets <prefix>_nodes, <prefix>_runs, <prefix>_artifacts,
// <prefix>_snapshots and <prefix>_changes (the default prefix keeps the
// names troupe always used).
func NamesFor(prefix string) Names {
	up := strings.ToUpper(prefix)
	return Names{Events: up + "_EVENTS", Tasks: up + "_TASKS", Results: up + "_RESULTS",
		Nodes: prefix + "_nodes", Artifacts: prefix + "_artifacts", Snapshots: prefix + "_snapshots", Changes: prefix + "_changes",
		Runs: prefix + "_runs", Rate: prefix + "_rate"}
}

// checkPrefix refuses a prefix that cannot name streams and buckets.
func checkPrefix(prefix string) error {
	if err := CheckToken("nats.prefix", prefix); err != nil {
		return err
	}
	for _, r := range prefix {
		if !(r == '_' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return fmt.Errorf("nats.prefix %q: use letters, digits, _ and - only (it names streams and buckets too)", prefix)
		}
	}
	return nil
}

// EventSubject is <prefix>.evt.<run>.<agent>.<type>; the type's dots make
// further tokens (agent.finished → ...agent.finished).
func EventSubject(prefix, run, agent, typ string) string {
	return prefix + ".evt." + run + "." + agent + "." + typ
}

// EventsFilter is the subject filter of every event of run ("" = all runs).
func EventsFilter(prefix, run string) string {
	if run == "" {
		return prefix + ".evt.>"
	}
	return prefix + ".evt." + run + ".>"
}

// TaskSubject is <prefix>.task.<kind>.v<protocol>: the subject of kind's
// tasks in one protocol version. Each version has its own subject and its
// own durable consumer, so a node only ever receives tasks it can read: a
// node of another version never takes (and never spends the delivery
// attempts of) a task it would have to refuse.
func TaskSubject(prefix, kind string, protocol int) string {
	return prefix + ".task." + kind + ".v" + strconv.Itoa(protocol)
}

// ResultSubject is <prefix>.result.<run>.<agent>.<tag>: the subject of
// one delivery's result. The tag (cluster derives it from the task's
// secret and the delivery's attempt) makes it a subject only the run and
// the nodes that got the task can name, and the results stream keeps the
// first message of each subject: a result once stored cannot be replaced.
func ResultSubject(prefix, run, agent, tag string) string {
	return prefix + ".result." + run + "." + agent + "." + tag
}

// ResultsFilter is the subject filter of every result of run: the
// tagged subjects, the untagged ones of older troupes
// (<prefix>.result.<run>.<agent>, read only to be refused with a reason)
// and anything else published under run (refused). One filter: servers
// before 2.10 take no more.
func ResultsFilter(prefix, run string) string { return prefix + ".result." + run + ".>" }

// ParseResultSubject splits a result subject of prefix into its run,
// agent and tag; a subject of the untagged (legacy) form has tag "".
func ParseResultSubject(prefix, subject string) (run, agent, tag string, err error) {
	rest, ok := strings.CutPrefix(subject, prefix+".result.")
	if !ok {
		return "", "", "", fmt.Errorf("%w: %q is not under %s.result", ErrNotResultSubject, subject, prefix)
	}
	parts := strings.Split(rest, ".")
	if len(parts) < 2 || len(parts) > 3 {
		return "", "", "", fmt.Errorf("%w: %q has %d tokens after %s.result, want run.agent.tag", ErrNotResultSubject, subject, len(parts), prefix)
	}
	for i, p := range parts {
		if err := CheckToken([]string{"run", "agent", "tag"}[i], p); err != nil {
			return "", "", "", fmt.Errorf("%w: %w", ErrNotResultSubject, err)
		}
	}
	if len(parts) == 3 {
		tag = parts[2]
	}
	return parts[0], parts[1], tag, nil
}

// RateSubject is <prefix>.rate.v<protocol>.<op>: the hub's provider
// rate limits (op lease or report, requests to the quota's owner; frozen,
// the owner's notices to every process).
func RateSubject(prefix, op string) string {
	return prefix + ".rate.v" + strconv.Itoa(messages.ProtocolVersion) + "." + op
}

// BudgetSubject is <prefix>.budget.<run>.<op>.
func BudgetSubject(prefix, run, op string) string { return prefix + ".budget." + run + "." + op }

// CtlSubject is <prefix>.ctl.<run>.<op> for the whole run (agent "") or
// <prefix>.ctl.<run>.<agent>.<op> for one agent.
func CtlSubject(prefix, run, agent, op string) string {
	if agent == "" {
		return prefix + ".ctl." + run + "." + op
	}
	return prefix + ".ctl." + run + "." + agent + "." + op
}

// Heartbeats. A node's and a run's liveness travels as a core NATS
// message every heartbeat, besides the bucket entry that lists them: a
// core message crosses any server that is up, while a bucket write waits
// for its stream's leader, and a leader election (4 to 9 s after a server
// is lost) would otherwise look like every node and run gone silent.

// NodeBeatSubject is <prefix>.beat.node.<node>: the node's registry entry
// (messages.NodeInfo), every heartbeat.
func NodeBeatSubject(prefix, node string) string { return prefix + ".beat.node." + node }

// RunBeatSubject is <prefix>.beat.run.<run>: the run's lease
// (messages.RunLease), every quarter of the lease.
func RunBeatSubject(prefix, run string) string { return prefix + ".beat.run." + run }

// AskSubject is <prefix>.ask.<run>.<agent>.
func AskSubject(prefix, run, agent string) string { return prefix + ".ask." + run + "." + agent }

// CheckToken refuses a value that cannot be one subject token.
func CheckToken(what, s string) error {
	if s == "" || strings.ContainsAny(s, ". *>\t\r\n") {
		return fmt.Errorf("%s %q cannot be a NATS subject token (no dots, spaces, * or >)", what, s)
	}
	return nil
}
