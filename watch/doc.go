// Package watch turns a stream of lifecycle events into a live picture of
// a swarm: a Tree of runs and their agents (kind, status, round, current
// tool, tokens, cost, node, age) with run totals, the nodes seen and a
// tail of recent events, and a View that draws it on a terminal, redrawn
// in place, or as plain lines. It reads events only, so the same view
// serves `orchestrator watch` (events from NATS), and `run` and `demo`
// (in-process).
//
// Node events (node.joined, node.left) fill the nodes line and a node's
// task.redelivered marks the agent it concerns; neither is an agent. A
// run counts the events its watcher missed: gaps in an agent's seq, and
// the tail events that run.finished's last_seq says were never seen.
//
// Everything drawn comes from the wire or from a model, so every text is
// made Printable (control characters shown escaped) before it reaches the
// terminal, and a frame never holds more lines than the terminal has rows:
// the parts that matter least give way first (see Frame).
//
// The view shows the last file change a tool made, with its diff.
//
// MetricsCollector computes a run's tool and token metrics from the same
// events (docs/metrics.md): shell calls spent on file operations, grep
// calls in files mode, blind writes, the tool-result share of each prompt,
// cache hits, rounds whose calls could run in parallel, and tokens per
// agent kind.
//
// PromMetrics turns the same events into Prometheus metrics labelled by
// kind, model, tool and status, never by run or agent (those are
// unbounded); a Monitor reads what events do not say, the task queue's
// depth and the node registry's live nodes, in the background, so a
// scrape or the web view takes its latest figures without waiting on
// NATS. Web serves the live page (runs, a run's timeline, charts, budget
// and agent tree, nodes) from the events stream as Server-Sent Events.
package watch
