#!/usr/bin/env bash
# Times the orchestrator's start-up against its floor (tests/bench/floor: a
# main that links the same packages and does nothing): `orchestrator
# version` and `tools call grep` on a 10-file directory, side by side with
# hyperfine (installed with apt-get when missing), and prints troupe's own
# package initialisation as GODEBUG=inittrace=1 counts it. The tests that
# keep both from creeping count allocations, not time:
# TestStartupWithinBudgetOfTheFloor (tests/bench/floor) and
# TestGrepCallWithinBudget (app/toolcli).
# Usage: tests/bench/startup.sh   (RUNS=200 by default)
set -euo pipefail

cd "$(dirname "$0")/../.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

go build -o "$tmp/orchestrator" ./cmd/orchestrator
go build -o "$tmp/floor" ./tests/bench/floor

if ! command -v hyperfine >/dev/null; then
	echo "hyperfine is missing: installing it with apt-get" >&2
	sudo=""
	if [ "$(id -u)" != 0 ]; then sudo="sudo -n"; fi
	$sudo apt-get install -y -qq hyperfine >/dev/null 2>&1 ||
		{ $sudo apt-get update -qq >/dev/null 2>&1 && $sudo apt-get install -y -qq hyperfine >/dev/null 2>&1; } ||
		{ echo "could not install hyperfine" >&2; exit 1; }
fi

mkdir "$tmp/ten"
for i in $(seq 1 10); do
	printf 'package p\n\n// F%d says hello.\nfunc F%d() string { return "hello %d" }\n' "$i" "$i" "$i" >"$tmp/ten/f$i.go"
done

runs=${RUNS:-200}
hyperfine -N --warmup 10 --runs "$runs" --export-markdown "$tmp/table.md" \
	-n floor "$tmp/floor" \
	-n version "$tmp/orchestrator version" \
	-n "tools call grep" "$tmp/orchestrator tools call grep '{\"pattern\":\"hello\"}' --workspace $tmp/ten" >&2
cat "$tmp/table.md"
echo
echo "troupe's package initialisation (orchestrator version, GODEBUG=inittrace=1):"
GODEBUG=inittrace=1 "$tmp/orchestrator" version 2>&1 >/dev/null |
	awk '/^init (main|github.com\/troupe-ai\/troupe)/ { b += $8; a += $10; n++ } END { printf "%d packages, %d bytes, %d allocs\n", n, b, a }'

# Instructions under callgrind (the count TestStartupInstructionsWithinTheFloor
# bounds): the fewest of 3 runs of each, on one P, asynchronous preemption off.
if command -v valgrind >/dev/null; then
	count() {
		local least="" n
		for _ in 1 2 3; do
			n=$(GOMAXPROCS=1 GODEBUG=asyncpreemptoff=1 valgrind --tool=callgrind --callgrind-out-file=/dev/null "$@" 2>&1 >/dev/null |
				sed -n 's/.*Collected : \([0-9]*\).*/\1/p')
			if [ -z "$least" ] || [ "$n" -lt "$least" ]; then least=$n; fi
		done
		echo "$least"
	}
	floor=$(count "$tmp/floor")
	version=$(count "$tmp/orchestrator" version)
	grep=$(count "$tmp/orchestrator" tools call grep '{"pattern":"hello"}' --workspace "$tmp/ten")
	echo
	echo "instructions (callgrind): floor $floor, version $version ($(awk "BEGIN { printf \"%.3f\", $version / $floor }")x)," \
		"tools call grep $grep ($(awk "BEGIN { printf \"%.3f\", $grep / $floor }")x)"
fi
