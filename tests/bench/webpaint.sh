#!/usr/bin/env bash
# The web view's first paint (issue 33: goal < 1 s): how soon after
# navigation headless Chromium has the timeline of a stored run of 1,000
# agents on screen (7,000 events replayed from NATS through /events, the
# page built, laid out and painted), with the processor time each load
# costs the browser and the server, which other work on the machine sways
# less than the wall time. Measured, never asserted. Usage:
# tests/bench/webpaint.sh (LOADS=10 loads per run, COUNT=3 runs).
set -euo pipefail
cd "$(dirname "$0")/../.."
loads=${LOADS:-10}
count=${COUNT:-3}
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
go test -run '^$' -bench 'WebViewFirstPaint$' -benchtime "${loads}x" -count "$count" ./cmd/orchestrator |
  awk '/^Benchmark/ { for (i = 1; i < NF; i++) { if ($(i+1) == "ms/paint") p = $i; if ($(i+1) == "browser-cpu-ms/paint") b = $i; if ($(i+1) == "server-cpu-ms/paint") s = $i }
    printf "first paint %6.0f ms   browser CPU %5.0f ms   server CPU %4.0f ms   (mean of '"$loads"' loads)\n", p, b, s }'
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
