#!/usr/bin/env bash
# The event bus numbers of issue 11, on this machine (embedded nats-server
# with JetStream on loopback TCP, file storage):
#   - publish cost per event: what Emit costs an agent (goal < 2 µs);
#   - events/s from 16 agents emitting at once to one subscriber on its own
#     connection, end to end, with zero loss (goal >= 100,000/s);
#   - the hop of node events through their run's requester (issue 29: at
#     most 10 % of events/s): 16 agents' events published directly (the path
#     before) against 16 tasks on a node relaying theirs to the requester,
#     which checks and publishes them (the path now); with the CPU time per
#     event each path costs (every party runs in the benchmark's process), a
#     figure less swayed than events/s by what else shares the cores.
# All benchmarks fail on a single dropped or missing event. The figures
# depend on what else shares the machine. Usage: tests/bench/events.sh
# (EMITS=2000000 events for the publish cost, EVENTS=300000 for throughput,
# COUNT=3 runs of each by default).
set -euo pipefail
cd "$(dirname "$0")/../.."
emits=${EMITS:-2000000}
events=${EVENTS:-300000}
count=${COUNT:-3}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
go test -run '^$' -bench 'PublisherEmit$' -benchtime "${emits}x" -count "$count" ./bus | tee "$out"
go test -run '^$' -bench 'EventsThroughput(Agents)?$' -benchtime "${events}x" -count "$count" ./bus | tee -a "$out"
go test -run '^$' -bench 'Events(Direct|Relayed)$' -benchtime "${events}x" -count "$count" ./cluster | tee -a "$out"
awk '
  /^BenchmarkPublisherEmit/ { for (i = 1; i < NF; i++) if ($(i+1) == "ns/op") e = e sprintf(" %.0f", $i) }
  /^BenchmarkEventsThroughputAgents/ { for (i = 1; i < NF; i++) if ($(i+1) == "events/s") a = a sprintf(" %.0f", $i) }
  /^BenchmarkEventsThroughput-/ { for (i = 1; i < NF; i++) if ($(i+1) == "events/s") o = o sprintf(" %.0f", $i) }
  /^BenchmarkEventsDirect/ { for (i = 1; i < NF; i++) {
      if ($(i+1) == "events/s") { d = d sprintf(" %.0f", $i); ds += $i; dn++ }
      if ($(i+1) == "cpu-µs/event") { dc = dc sprintf(" %.2f", $i); dcs += $i } } }
  /^BenchmarkEventsRelayed/ { for (i = 1; i < NF; i++) {
      if ($(i+1) == "events/s") { r = r sprintf(" %.0f", $i); rs += $i; rn++ }
      if ($(i+1) == "cpu-µs/event") { rc = rc sprintf(" %.2f", $i); rcs += $i } } }
  END {
    printf "\npublish cost per event (Emit), ns:%s   (goal < 2000)\n", e
    printf "events/s, 16 agents -> 1 subscriber, zero loss:%s   (goal >= 100000)\n", a
    printf "events/s, 1 agent -> 1 subscriber, zero loss:%s\n", o
    printf "events/s, 16 agents published directly:%s\n", d
    printf "events/s, 16 node tasks relayed through the requester:%s\n", r
    if (dn && rn) printf "relayed / direct, means: %.1f %%   (goal >= 90 %%)\n", 100 * (rs / rn) / (ds / dn)
    printf "CPU µs per event, all parties in one process, direct:%s   relayed:%s\n", dc, rc
    if (dcs && rcs) printf "relayed / direct CPU per event, means: %.1f %%\n", 100 * (rcs / rn) / (dcs / dn)
  }' "$out"
