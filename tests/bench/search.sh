#!/usr/bin/env bash
# Times troupe's grep and find_files against ripgrep and fd on the Go
# source tree, whole process against whole process, and checks that the
# results agree. Usage: tests/bench/search.sh [DIR]   (RUNS=5 by default)
set -euo pipefail

cd "$(dirname "$0")/../.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

go build -o "$tmp/orchestrator" ./cmd/orchestrator
go build -o "$tmp/searchbench" ./tests/bench/searchbench

find_fd() { command -v fdfind || command -v fd || true; }

if ! command -v rg >/dev/null || [ -z "$(find_fd)" ]; then
	echo "rg or fd is missing: installing ripgrep and fd-find with apt-get" >&2
	sudo=""
	if [ "$(id -u)" != 0 ]; then sudo="sudo -n"; fi
	if command -v apt-get >/dev/null &&
		{ $sudo apt-get install -y -qq ripgrep fd-find >/dev/null 2>&1 ||
			{ $sudo apt-get update -qq >/dev/null 2>&1 && $sudo apt-get install -y -qq ripgrep fd-find >/dev/null 2>&1; }; }; then
		echo "installed" >&2
	else
		echo "could not install them; measuring ours only" >&2
	fi
fi

rg=$(command -v rg || true)
fd=$(find_fd)
dir=${1:-$(go env GOROOT)/src}
"$tmp/searchbench" -ours "$tmp/orchestrator" -rg "$rg" -fd "$fd" -dir "$dir" -runs "${RUNS:-5}"
