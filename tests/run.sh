#!/usr/bin/env bash
# The project's test command (README): vet, the whole test suite with the
# race detector, and a few seconds of each fuzz target.
set -euo pipefail
cd "$(dirname "$0")/.."

FUZZTIME=${FUZZTIME:-5s}
# TEST_PKGS narrows the run (the README test runs this script on a subset,
# and skips the installs below); FUZZTIME=0 skips fuzzing.
PKGS=${TEST_PKGS:-./...}

# Outside peers the tests meet where a user would: ripgrep and fd for the
# differential search tests, a real nats-server process for the bus and
# worker-pool tests, git, python3 and perl, the reference MCP server
# @modelcontextprotocol/server-everything and the official MCP TypeScript
# SDK whose client meets `orchestrator mcp` (Node.js, pinned, installed
# into tests/.npm, which git ignores). Each is installed here or the run stops
# saying which is missing: a test whose peer is missing skips on a
# developer's machine but fails under CI=true (internal/peer), so a broken
# set-up never passes as skipped tests.
EVERYTHING_VERSION=2026.8.31
NATS_JS_VERSION=2.29.3
MCP_SDK_VERSION=1.32.2 # tests/e2e/mcp_e2e_test.go's MCPSDKVersion
stop() { echo "tests/run.sh: $*" >&2; exit 1; }
if [ -z "${TEST_PKGS:-}" ]; then
  missing=()
  command -v rg >/dev/null || missing+=(ripgrep)
  { command -v fdfind >/dev/null || command -v fd >/dev/null; } || missing+=(fd-find)
  command -v nats-server >/dev/null || missing+=(nats-server)
  command -v git >/dev/null || missing+=(git)
  # The README's "Parallel workers and their changes" pipes run --json to jq.
  command -v jq >/dev/null || missing+=(jq)
  command -v node >/dev/null || missing+=(nodejs)
  command -v npm >/dev/null || missing+=(npm)
  # The web view's test drives headless Chromium and has a real Prometheus
  # server scrape /metrics.
  command -v chromium >/dev/null || missing+=(chromium)
  command -v prometheus >/dev/null || missing+=(prometheus)
  # The sandbox's tests write outside the workspace through python3 -c and
  # perl -e, and start a server on a sandboxed command's own loopback.
  command -v python3 >/dev/null || missing+=(python3)
  command -v perl >/dev/null || missing+=(perl)
  if [ ${#missing[@]} -gt 0 ]; then
    if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
      stop "the tests need ${missing[*]}; install them (Debian/Ubuntu: sudo apt-get install ${missing[*]}) or run this script as root where apt-get can"
    fi
    echo "tests/run.sh: installing ${missing[*]}"
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"; } >/dev/null \
      || stop "apt-get could not install ${missing[*]}; install them and run again"
  fi
  for cmd in rg nats-server git node npm chromium prometheus python3 perl; do
    command -v "$cmd" >/dev/null || stop "$cmd is still missing after the install"
  done
  { command -v fdfind >/dev/null || command -v fd >/dev/null; } || stop "fd (fd-find) is still missing after the install"
  # The npm peers: the reference MCP server, the npm nats client the
  # bus's role tests hold each role's creds file with
  # (tests/e2e/testdata/nats_peer.cjs), and the MCP TypeScript SDK whose
  # client drives orchestrator mcp (tests/e2e/testdata/mcp_client.cjs). One
  # npm install for all three: a second --no-save install would prune what
  # the first put there.
  if ! grep -qs "\"version\": \"$EVERYTHING_VERSION\"" tests/.npm/node_modules/@modelcontextprotocol/server-everything/package.json \
    || ! grep -qs "\"version\": \"$NATS_JS_VERSION\"" tests/.npm/node_modules/nats/package.json \
    || ! grep -qs "\"version\": \"$MCP_SDK_VERSION\"" tests/.npm/node_modules/@modelcontextprotocol/sdk/package.json; then
    echo "tests/run.sh: installing @modelcontextprotocol/server-everything@$EVERYTHING_VERSION, nats@$NATS_JS_VERSION and @modelcontextprotocol/sdk@$MCP_SDK_VERSION into tests/.npm"
    npm install --prefix tests/.npm --no-save --no-package-lock --no-audit --no-fund --loglevel=error \
      "@modelcontextprotocol/server-everything@$EVERYTHING_VERSION" "nats@$NATS_JS_VERSION" "@modelcontextprotocol/sdk@$MCP_SDK_VERSION" >/dev/null \
      || stop "npm could not install server-everything@$EVERYTHING_VERSION, nats@$NATS_JS_VERSION and @modelcontextprotocol/sdk@$MCP_SDK_VERSION into tests/.npm"
  fi
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
