#!/usr/bin/env bash
# The soak of issue 19: one node process serves 1,000 explore tasks from
# 100 runs (10 each) that one orchestrator process runs one after another
# over a real nats-server, against the scripted model. The node's
# goroutines and resident memory after the last run must be within 10 %
# of those after its 100th task; the orchestrator's likewise (after its
# 10th run). Usage: tests/bench/soak.sh [RUNS] [TASKS]   (100 and 10)
set -euo pipefail
cd "$(dirname "$0")/../.."
command -v nats-server >/dev/null || { echo "soak.sh: needs nats-server (apt-get install nats-server)" >&2; exit 1; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
go build -o "$dir/node" ./cmd/node
go build -o "$dir/soak" ./tests/bench/soak
"$dir/soak" -node "$dir/node" -runs "${1:-100}" -tasks "${2:-10}"
