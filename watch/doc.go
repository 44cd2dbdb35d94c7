// Package watch turns a stream of lifecycle events into a live picture of
// a swarm: a Tree of runs and their agents (kind, status, round, current
// tool, tokens, cost, node, age) with run totals and a tail of recent
// events, and a View that draws it on a terminal, redrawn in place, or as
// plain lines. It reads events only, so the same view serves
// `orchestrator watch` (events from NATS), and `run` and `demo`
// (in-process). The view shows the last file change a tool made, with its
// diff.
//
// MetricsCollector computes a run's tool and token metrics from the same
// events (docs/metrics.md): shell calls spent on file operations, grep
// calls in files mode, blind writes, the tool-result share of each prompt,
// cache hits, rounds whose calls could run in parallel, and tokens per
// agent kind.
package watch
