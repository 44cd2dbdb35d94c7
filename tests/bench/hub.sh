#!/usr/bin/env bash
# What a lost server costs a run (issue 32), on this machine: three
# `serve --cluster` processes (one `auth init`), two nodes, a watcher and a
# run of 40 remote tasks whose model takes LATENCY (default 2s) per answer:
#   - fault-free;
#   - SIGKILL of the task queue's leader a third of the way through, its
#     restart halfway, SIGKILL of another server two thirds through;
#   - one server of three down for the whole run.
# Each run is checked as the e2e tests check it (every result once, no task
# started twice: the duplicate starts would fail it, the watcher's events of
# every agent whole and in seq order: the gap check); the script prints the
# wall times and their ratios to the fault-free run. Then what each setting
# costs (BenchmarkHubEvents, BenchmarkHubTasks: events/s and tasks/s with one
# or three replicas, nats.sync `always` or the default interval).
# Usage: tests/bench/hub.sh  (LATENCY=3s, COUNT=2 runs of the benchmarks)
set -euo pipefail
cd "$(dirname "$0")/../.."
latency=${LATENCY:-2s}
count=${COUNT:-1}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
TROUPE_HUB_COST="$latency" go test -count 1 -timeout 30m -run '^TestHubLossCost$' -v ./tests/e2e | tee "$out"
grep -E -- '--- (PASS|FAIL)|model answer' "$out"
go test -run '^$' -bench 'Hub(Events|Tasks)$' -benchtime 1x -count "$count" -timeout 30m ./bus ./cluster
