#!/usr/bin/env bash
# The project's test command (README): vet, the whole test suite with the
# race detector, and a few seconds of each fuzz target.
set -euo pipefail
cd "$(dirname "$0")/.."

# Outside peers the tests meet where a user would: ripgrep and fd for the
# differential search tests, and a real nats-server process for the bus and
# worker-pool tests. Each test skips with a message when its peer is
# missing, so install them where we can.
missing=()
command -v rg >/dev/null || missing+=(ripgrep)
{ command -v fdfind >/dev/null || command -v fd >/dev/null; } || missing+=(fd-find)
command -v nats-server >/dev/null || missing+=(nats-server)
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "tests/run.sh: installing ${missing[*]}"
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"; } >/dev/null \
      || echo "tests/run.sh: could not install ${missing[*]}; the tests that need them will skip"
  else
    echo "tests/run.sh: ${missing[*]} missing and not root; the tests that need them will skip"
  fi
fi

FUZZTIME=${FUZZTIME:-5s}
# TEST_PKGS narrows the run (the README test runs this script on a subset);
# FUZZTIME=0 skips fuzzing.
PKGS=${TEST_PKGS:-./...}

# The MCP tests also meet a real third-party MCP server: the reference
# @modelcontextprotocol/server-everything (Node.js), pinned, installed into
# tests/.npm (ignored by git) when node and npm are present; the tests
# that need it skip with a message otherwise. A run narrowed by TEST_PKGS
# skips the install.
EVERYTHING_VERSION=2026.8.31
if [ -n "${TEST_PKGS:-}" ]; then
  :
elif command -v node >/dev/null && command -v npm >/dev/null; then
  if ! grep -qs "\"version\": \"$EVERYTHING_VERSION\"" tests/.npm/node_modules/@modelcontextprotocol/server-everything/package.json; then
    echo "tests/run.sh: installing @modelcontextprotocol/server-everything@$EVERYTHING_VERSION into tests/.npm"
    npm install --prefix tests/.npm --no-save --no-package-lock --no-audit --no-fund --loglevel=error \
      "@modelcontextprotocol/server-everything@$EVERYTHING_VERSION" >/dev/null \
      || echo "tests/run.sh: could not install server-everything; the tests that need it will skip"
  fi
else
  echo "tests/run.sh: node or npm missing; the tests against server-everything will skip"
fi
# The bus's role tests have an outside peer: the npm nats client, pinned,
# holding each role's creds file in turn (tests/e2e/testdata/nats_peer.cjs).
NATS_JS_VERSION=2.29.3
if [ -z "${TEST_PKGS:-}" ] && command -v npm >/dev/null \
  && ! grep -qs "\"version\": \"$NATS_JS_VERSION\"" tests/.npm/node_modules/nats/package.json; then
  echo "tests/run.sh: installing nats@$NATS_JS_VERSION into tests/.npm"
  npm install --prefix tests/.npm --no-save --no-package-lock --no-audit --no-fund --loglevel=error \
    "nats@$NATS_JS_VERSION" >/dev/null \
    || echo "tests/run.sh: could not install the npm nats client; the role tests against it will skip"
fi

echo "== go vet"
go vet $PKGS
echo "== staticcheck"
go run honnef.co/go/tools/cmd/staticcheck@v0.8.2 $PKGS
echo "== go test -race"
go test -race -timeout 25m $PKGS
if [ "$FUZZTIME" = 0 ]; then exit 0; fi
echo "== fuzz ($FUZZTIME each)"
# Each target: package and name, found from the source so new targets join.
grep -rl --include='*_test.go' '^func Fuzz' . | sort | while read -r f; do
  pkg=./$(dirname "${f#./}")
  for fz in $(grep -o '^func Fuzz[A-Za-z0-9_]*' "$f" | cut -d' ' -f2); do
    echo "-- $pkg $fz"
    log=$(mktemp)
    if ! go test -run '^$' -fuzz "^${fz}\$" -fuzztime "$FUZZTIME" "$pkg" 2>&1 | tee "$log"; then
      # Go 1.26's fuzz coordinator can report its own -fuzztime deadline as
      # a failure when a worker is mid-call at that moment (golang/go#75804,
      # fixed in Go 1.27): "context deadline exceeded" with no failing input
      # written. That alone is not a finding; anything else fails the run.
      if grep -q '^    context deadline exceeded$' "$log" && ! grep -q 'Failing input written to' "$log"; then
        echo "tests/run.sh: $fz stopped at its deadline with Go's known fuzz-coordinator race (golang/go#75804), no failing input; not a finding"
      else
        rm -f "$log"
        exit 1
      fi
    fi
    rm -f "$log"
  done
done
