#!/usr/bin/env bash
# The worker-pool numbers of issue 12, on this machine:
#   - tasks/s through 3 nodes (in-process nodes over a real NATS server on
#     loopback TCP, zero-latency scripted model), with the local fan-out
#     for comparison: wall and CPU time per task;
#   - remote (and local) spawn -> first model request;
#   - recovery after SIGKILL of a node process with the default timing
#     settings: kill -> the task started on another node (ms-restart, goal
#     <= 5 s) and -> its result (ms-recovery).
# CPU time per task does not depend on what else shares the machine; the
# wall-clock figures do. Usage: tests/bench/nodes.sh   (COUNT=5 by default)
set -euo pipefail
cd "$(dirname "$0")/../.."
count=${COUNT:-5}
go test -run '^$' -bench 'Fanout|Spawn' -benchtime "${count}x" ./cluster
go test -run '^$' -bench RecoveryAfterSIGKILL -benchtime 3x ./tests/e2e
