// Package cluster is the distributed half of troupe: agents that run on
// other machines. It carries a run's parts over NATS:
//
//   - the task queue: a child placed remotely is published to the
//     JetStream work queue TROUPE_TASKS on <prefix>.task.<kind>.v<protocol>;
//     node processes pull the tasks of their kinds and version through one
//     durable consumer per kind and version, with explicit acks, AckWait
//     and MaxDeliver, keeping a pull request open for their free slots,
//     and send InProgress from claiming a task to settling it (set-up,
//     agent, capture and result: node_alive.go), so a task whose node dies is
//     redelivered to another node and nothing is lost;
//   - results: a node publishes each agent's end on
//     <prefix>.result.<run>.<agent>.<tag> (stream TROUPE_RESULTS; one
//     subject per delivery, whose tag only holders of the task's secret
//     can name, and whose first message stays: result_subject.go) before
//     it acks the task; the parent takes the first proven result of a task
//     and drops duplicates from redelivery, so it sees exactly one result
//     per task;
//   - events: a node publishes no event about a run; it sends its tasks'
//     agents' events to the run's requester on
//     <prefix>.ctl.<run>.<agent>.events, proving the task's delivery, and
//     the requester publishes those it vouches for (relay_node.go,
//     relay_remote.go); the rest are refused and counted;
//   - changes: a result's changeset and nested patches, and a task's
//     snapshot bundles, are named with their SHA-256 in the proven message
//     and checked before use; the requester derives a result's merge base
//     and end state from the snapshot it sent and the patch
//     (snapshot_receive.go);
//   - the budget: the run's budget actor is served on
//     <prefix>.budget.<run>.<op> (acquire, usage, release, snapshot), so
//     remote agents draw on it exactly as local ones do and the tree's
//     ceilings hold across nodes;
//   - control: cancel, steer and status reach a remote agent on
//     <prefix>.ctl.<run>[.<agent>].<op> (a node subscribes once, with
//     wildcards); cancelling the run publishes <prefix>.ctl.<run>.cancel;
//   - the node registry: KV bucket troupe_nodes, one entry per live node
//     (kinds, slots, free slots, version), kept alive by a heartbeat. A
//     node silent for the lease timeout is lost: the run returns its
//     leases and emits node.left (reason lost) in its own events, as
//     agent NodesAgent; a drained node reports node.left itself.
//
// The orchestrator side plugs into actors through its placement seam: a
// Placer decides per kind (local, remote or auto) and a RemoteChild stands
// for each remote agent in its parent. The node side runs each task on one
// actors.Host (one actor system and tool set per node). docs/wire.md is
// the protocol.
package cluster
