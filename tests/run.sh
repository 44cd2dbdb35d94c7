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
# worker-pool tests, git, python3 and perl, the reference MCP servers
# @modelcontextprotocol/server-everything and server-filesystem (one
# version: EVERYTHING_VERSION) and the official MCP TypeScript
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
  # Worktrees, captures and lands through a user's real Git LFS filter
  # (workspace/filter_lfs_test.go, tests/e2e).
  command -v git-lfs >/dev/null || missing+=(git-lfs)
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
  # The start-up check counts instructions under callgrind
  # (tests/bench/floor: TestStartupInstructionsWithinTheFloor).
  command -v valgrind >/dev/null || missing+=(valgrind)
  if [ ${#missing[@]} -gt 0 ]; then
    if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
      stop "the tests need ${missing[*]}; install them (Debian/Ubuntu: sudo apt-get install ${missing[*]}) or run this script as root where apt-get can"
    fi
    echo "tests/run.sh: installing ${missing[*]}"
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"; } >/dev/null \
      || stop "apt-get could not install ${missing[*]}; install them and run again"
  fi
  for cmd in rg nats-server git git-lfs node npm chromium prometheus python3 perl valgrind; do
    command -v "$cmd" >/dev/null || stop "$cmd is still missing after the install"
  done
  { command -v fdfind >/dev/null || command -v fd >/dev/null; } || stop "fd (fd-find) is still missing after the install"
  # The npm peers: the reference MCP servers, the npm nats client the
  # bus's role tests hold each role's creds file with
  # (tests/e2e/testdata/nats_peer.cjs), and the MCP TypeScript SDK whose
  # client drives orchestrator mcp (tests/e2e/testdata/mcp_client.cjs). One
  # npm install for all four: a second --no-save install would prune what
  # the first put there.
  if ! grep -qs "\"version\": \"$EVERYTHING_VERSION\"" tests/.npm/node_modules/@modelcontextprotocol/server-everything/package.json \
    || ! grep -qs "\"version\": \"$NATS_JS_VERSION\"" tests/.npm/node_modules/nats/package.json \
    || ! grep -qs "\"version\": \"$MCP_SDK_VERSION\"" tests/.npm/node_modules/@modelcontextprotocol/sdk/package.json \
    || ! grep -qs "\"version\": \"$EVERYTHING_VERSION\"" tests/.npm/node_modules/@modelcontextprotocol/server-filesystem/package.json; then
    echo "tests/run.sh: installing @modelcontextprotocol/server-everything and server-filesystem@$EVERYTHING_VERSION, nats@$NATS_JS_VERSION and @modelcontextprotocol/sdk@$MCP_SDK_VERSION into tests/.npm"
    npm install --prefix tests/.npm --no-save --no-package-lock --no-audit --no-fund --loglevel=error \
      "@modelcontextprotocol/server-everything@$EVERYTHING_VERSION" "@modelcontextprotocol/server-filesystem@$EVERYTHING_VERSION" \
      "nats@$NATS_JS_VERSION" "@modelcontextprotocol/sdk@$MCP_SDK_VERSION" >/dev/null \
      || stop "npm could not install server-everything and server-filesystem@$EVERYTHING_VERSION, nats@$NATS_JS_VERSION and @modelcontextprotocol/sdk@$MCP_SDK_VERSION into tests/.npm"
  fi
fi

# stage LABEL CMD...: runs one stage, saying every 2 minutes that it still
# runs and at its end how long it took.
stage() {
  local label=$1 start
  shift
  start=$(date +%s)
  echo "== $label"
  ( while sleep 120; do echo "tests/run.sh: still $label ($(( ($(date +%s) - start) / 60 )) min so far)"; done ) &
  local ticker=$! rc=0
  "$@" || rc=$?
  kill "$ticker" 2>/dev/null || true
  wait "$ticker" 2>/dev/null || true
  echo "tests/run.sh: $label: $(( $(date +%s) - start )) s"
  return "$rc"
}

stage "go vet" go vet $PKGS
stage "staticcheck (the first run downloads and builds it)" go run honnef.co/go/tools/cmd/staticcheck@v0.8.2 $PKGS
# Tests write in their temporary directories, never in the source tree:
# what git status shows after them must be what it showed before.
tree_state() { git status --porcelain=v1 --ignored=traditional --untracked-files=normal | sort; }
tree_before=$(tree_state)
tree_unchanged() {
  local left
  left=$(comm -13 <(echo "$tree_before") <(tree_state))
  [ -z "$left" ] && return 0
  echo "tests/run.sh: the tests left these in the source tree (git status):"
  echo "$left"
  return 1
}
# The big-file memory tests (child processes writing, hashing, shipping
# and landing hundreds of MB, locally and from a node) run in a stage of
# their own, without -race: under the race detector they took minutes of
# CI's time and measured the detector's shadow memory more than troupe's;
# every other test of their packages runs with it here.
BIG='TestCaptureAndLandOfBigFilesKeepMemoryBounded|TestBigConvertedFilesKeepMemoryBounded|TestRemoteBigChangesKeepMemoryBounded|TestRemoteHugeFileIsReportedNotShipped|TestRemoteBigSnapshotKeepsMemoryBounded'
stage "go test -race (each package prints ok when it ends; the longest run for minutes)" go test -race -timeout 25m -skip "^($BIG)\$" $PKGS
# The workspace suite again with every worktree an overlay mount
# (internal/overlay; TROUPE_TEST_WORKTREES): what a checkout passes, an
# overlay worktree passes. Without -race, to keep CI's time: the overlay
# paths' own tests ran with it above. The big-file tests run once, after
# it: once the files are in the worktree, capture and land read them the
# same way whatever the worktree's kind.
if [ -z "${TEST_PKGS:-}" ]; then
  stage "go test ./workspace with overlay worktrees" env TROUPE_TEST_WORKTREES=overlay go test -count=1 -timeout 15m -skip "^($BIG)\$" ./workspace
  stage "big files keep memory bounded (without -race)" go test -count=1 -timeout 15m -run "^($BIG)\$" ./workspace ./cluster
fi
stage "the source tree as the tests found it" tree_unchanged
if [ "$FUZZTIME" = 0 ]; then exit 0; fi

# fuzz: each package's fuzz binary is built once (go test -c -fuzz), then
# every target runs for FUZZTIME from its package's folder (its
# testdata/fuzz corpus), sharing go test's fuzz cache, two targets at a
# time with one fuzzing worker each (the machine's two cores busy, half
# the wall time of one target at a time with two workers). A passing
# target prints one line.
# Go 1.26's fuzz coordinator can report its own -fuzztime deadline as a
# failure when a worker is mid-call at that moment (golang/go#75804, fixed
# in Go 1.27): "context deadline exceeded" with no failing input written.
# That is not a finding and is said so, without go test's "--- FAIL" line;
# anything else fails the run with the target's whole output. (A count,
# FUZZTIME=20000x, has no deadline to race.)
fuzz_one() { # DIR PKG IMPORTPATH BINARY TARGET
  local dir=$1 pkg=$2 path=$3 bin=$4 fz=$5 log
  log=$(mktemp)
  if (cd "$dir" && "$bin" -test.run '^$' -test.fuzz "^${fz}\$" -test.fuzztime "$FUZZTIME" -test.parallel 1 \
    -test.fuzzcachedir "$FUZZCACHE/$path") >"$log" 2>&1; then
    echo "-- $pkg $fz: ok, $(grep -o 'execs: [0-9]*' "$log" | tail -1 || echo 'no execs line')"
  elif grep -q '^    context deadline exceeded$' "$log" && ! grep -q 'Failing input written to' "$log"; then
    echo "-- $pkg $fz: ok, $(grep -o 'execs: [0-9]*' "$log" | tail -1); Go 1.26 reported its own deadline (golang/go#75804), no failing input"
  else
    cat "$log"
    echo "tests/run.sh: fuzz target $pkg $fz found a failing input (above)"
    rm -f "$log"
    return 1
  fi
  rm -f "$log"
}
fuzz() {
  local bin dir pkg fz n=0 rc=0
  bin=$(mktemp -d)
  FUZZCACHE=$(go env GOCACHE)/fuzz
  export FUZZTIME FUZZCACHE
  export -f fuzz_one
  for dir in $(grep -rl --include='*_test.go' '^func Fuzz' . | xargs -n1 dirname | sort -u); do
    pkg=./${dir#./}
    n=$((n + 1))
    go test -c -fuzz=. -o "$bin/$n.test" "$pkg" || { rm -rf "$bin"; return 1; }
    for fz in $(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go | cut -d' ' -f2 | sort); do
      echo "$dir $pkg $(go list "$pkg") $bin/$n.test $fz" >>"$bin/targets"
    done
  done
  xargs -P 2 -L 1 bash -c 'fuzz_one "$@"' fuzz_one <"$bin/targets" || rc=1
  rm -rf "$bin"
  return "$rc"
}
stage "fuzz ($FUZZTIME per target)" fuzz
