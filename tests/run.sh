#!/usr/bin/env bash
# The project's test command (README): vet, the whole test suite with the
# race detector, and a few seconds of each fuzz target.
set -euo pipefail
cd "$(dirname "$0")/.."

# The differential search tests compare our grep/find_files with ripgrep and
# fd; they skip when those are missing, so install them where we can.
if ! command -v rg >/dev/null || ! { command -v fdfind >/dev/null || command -v fd >/dev/null; }; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "tests/run.sh: installing ripgrep and fd-find for the differential search tests"
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq ripgrep fd-find; } >/dev/null \
      || echo "tests/run.sh: could not install ripgrep/fd-find; the differential tests will skip"
  else
    echo "tests/run.sh: rg/fd missing and not root; the differential tests will skip"
  fi
fi

FUZZTIME=${FUZZTIME:-5s}
echo "== go vet"
go vet ./...
echo "== go test -race"
go test -race -timeout 20m ./...
echo "== fuzz ($FUZZTIME each)"
# Each target: package and name, found from the source so new targets join.
grep -rl --include='*_test.go' '^func Fuzz' . | sort | while read -r f; do
  pkg=./$(dirname "${f#./}")
  for fz in $(grep -o '^func Fuzz[A-Za-z0-9_]*' "$f" | cut -d' ' -f2); do
    echo "-- $pkg $fz"
    go test -run '^$' -fuzz "^${fz}\$" -fuzztime "$FUZZTIME" "$pkg"
  done
done
