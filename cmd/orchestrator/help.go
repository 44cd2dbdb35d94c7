package main

import (
	"io"

	"slices"
	"strings"

	"github.com/troupe-ai/troupe/app/nodecmd"
)

// commandHelp holds each command's help: usage, what it does, its flags and
// examples. `orchestrator help CMD` and `CMD --help` print it.
var commandHelp = map[string]string{
	"demo": `Usage: orchestrator demo [--workspace DIR [--in-place]] [--nodes N] [--keep]

Runs a real team offline: agent actors, real tools on real files, the budget
actor and streaming HTTP, against a local scripted OpenAI-compatible server
that stands in for the model (it says so when it starts). No API key, no
network.

Flags:
  --workspace DIR   add the sample repository to a copy of DIR and work there
                    (DIR must exist; it is left unchanged)
  --in-place        with --workspace: work in DIR itself, which must not hold
                    any of the sample's files (go.mod, cart.go, checkout.go,
                    discount.go, pricing.go): the demo changes no file it did
                    not create
  --nodes N         also start N local node processes (0 to 16) and run the
                    explore agents on them: the distributed path, task queue
                    and node events, on one machine
  --keep            keep the temporary workspace and print where it is

Examples:
  orchestrator demo
  orchestrator demo --keep
  orchestrator demo --nodes 2
  orchestrator demo --workspace ~/src/scratch --in-place
`,
	"run": `Usage: orchestrator run [flags] "task"

Runs a team on a task in a workspace: the root agent plans, delegates to
explore, planner and worker agents, and acts. Progress goes to stderr, the
final answer to stdout.

` + runFlagsHelp + `
Model: OPENAI_API_KEY and OPENAI_BASE_URL reach any OpenAI-compatible endpoint
(OpenAI, OpenRouter, Ollama, vLLM, llama.cpp server, LM Studio).
Traces: OTEL_EXPORTER_OTLP_ENDPOINT (or telemetry.otlp_endpoint) sends
OpenTelemetry GenAI spans to an OTLP/HTTP collector (docs/telemetry.md).
Exit codes: 0 finished, 1 the agent failed, 2 usage or config error,
3 round or budget limit reached, 4 finished but some sub-agents failed
(the summary and --json's sub_agents count them), 130 interrupted.

Examples:
  orchestrator run --workspace ~/src/app "Find why the cache is never invalidated and fix it"
  OPENAI_BASE_URL=http://localhost:11434/v1 orchestrator run --model qwen3 "Explain the build"
`,
	"resume": `Usage: orchestrator resume [RUN] [--workspace DIR] [--model M] [--json] [flags]

Continues an interrupted run from its last checkpoint (the run written last
when RUN is not given), on the model the run was on (--model switches).
Calls that had completed before the run stopped are not run again; a
mutating call cut off mid-run is reported to the model as interrupted.
Takes the same flags as run.

` + runFlagsHelp + `
Examples:
  orchestrator resume
  orchestrator resume 5f1c0e9a-... --workspace ~/src/app
`,
	"tools": `Usage: orchestrator tools list [--config FILE] [--workspace DIR]
       orchestrator tools call NAME 'JSON-ARGS' [--workspace DIR] [--config FILE] [--json]
       orchestrator tools call --script FILE [--workspace DIR] [--config FILE]

Lists the tools, or runs one exactly as an agent would and prints what the
model would see. The tools of the MCP servers in the configuration
(mcp.servers) are mcp__<server>__<tool>; a server is started for the command
that needs it and stopped when it ends.

Examples:
  orchestrator tools list
  orchestrator tools call grep '{"pattern":"func main"}'
  orchestrator tools call read_file '{"path":"go.mod","limit":5}' --json
  orchestrator tools call mcp__everything__echo '{"message":"hi"}' --config mcp.yaml
`,
	"tools list": `Usage: orchestrator tools list [--config FILE] [--workspace DIR]

Lists every tool: name, visibility tier (after tools.tiers), read-only,
mutating or spawns (delegate: as read-only as the kind it starts), and what
it does; with MCP servers configured, their tools too
(each server is started to list them, and a server that cannot start is
reported on stderr). Last comes the effective sandbox of the commands the
tools start (see orchestrator sandbox --help).

Flags:
  --workspace DIR   the workspace whose .troupe/config.yaml applies (default: .)
  --config FILE     a config file over the usual layers (tools.tiers, mcp.servers)

Examples:
  orchestrator tools list
  orchestrator tools list --config mcp.yaml | grep mcp__
`,
	"tools call": `Usage: orchestrator tools call NAME 'JSON-ARGS' [--workspace DIR] [--config FILE] [--json]
       orchestrator tools call --script FILE [--workspace DIR] [--config FILE]

Runs one tool exactly as an agent would and prints exactly what the model
would see. --script runs a JSON Lines file of {"name": ..., "args": {...}} in
one session (one read tracker, cache and todo list), each output after a line
"=== N name". Exit 1 when the tool returned an error result. An MCP tool
(mcp__<server>__<tool>) starts its server from the configuration first.
Commands start in the configuration's sandbox as in a run, with the worker
kind's policy: a warning line on stderr for what this kernel does not
enforce, exit 2 instead when sandbox.required is set. A call of a read-only
built-in tool (grep, read_file, find_files...) starts no process: it runs,
with neither check nor warning, whatever the kernel offers.

Flags:
  --workspace DIR   the workspace the tool is confined to (default: .)
  --config FILE     a config file over the usual layers (tools.* settings:
                    shell, web); the environment applies as for run
  --json            print text, is_error, metadata, truncated and spill path
  --script FILE     run the calls of a JSON Lines file

Examples:
  orchestrator tools call list_dir '{"path":".","depth":2}'
  orchestrator tools call --script calls.jsonl --workspace ~/src/app
  orchestrator tools call web_fetch '{"url":"https://go.dev/doc/devel/release"}'
  orchestrator tools call mcp__everything__echo '{"message":"hi"}' --config mcp.yaml
`,
	"watch": `Usage: orchestrator watch [--nats URL] [--creds FILE] [--run ID] [--from-start] [--json] [--follow] [--interactive] [--config FILE]
                          [--all] [--web ADDR [--http-public] [--http-token-file FILE]]

Follows a swarm's events on NATS. On a terminal it draws the live agent tree
(per agent: kind, status, round, current tool, tokens in/out, cost, node,
age), the recent events under it and the run's totals, and ends when the run
finishes. It shows the 10 most recent runs (a line counts the earlier ones;
--all shows every run) and redraws at most four times a second, however
fast events come. Piped, or with --json, it prints exactly one JSON event
envelope per line and nothing else on stdout.

Flags:
  --nats URL      the server (default TROUPE_NATS_URL, else nats://127.0.0.1:4222);
                  run prints the URL of its embedded server when it starts
  --run ID        one run, by its ID or any unique prefix of it (the short ID the
                  tree shows); a run the server has no record of is an error
                  (default: every run on the server)
  --from-start    replay the stored events first (a run that has ended too)
  --json          one envelope per line, even on a terminal
  --follow        keep watching for new runs instead of ending with the run
  --all           show every run on a terminal, not only the 10 most recent
  --interactive   answer the approvals of runs started with --ask-via nats (y/n on stdin);
                  needs the requester's creds (--creds requester.creds): the server
                  lets no watcher or node answer an approval
  --config FILE   read nats.token / user / password / creds / TLS from a config file
  --creds FILE    a .creds file (the watcher's from serve or auth init; also TROUPE_NATS_CREDS)
  --web ADDR      also serve the live web view and /metrics at ADDR (host:port, loopback;
                  watch then runs until interrupted); it answers only loopback Host
                  names, and only requests with the token when one is given
  --http-public   let --web listen beyond loopback (needs --http-token-file)
  --http-token-file FILE  the web view and /metrics need this token: a browser opens
                  http://ADDR/?token=TOKEN once (an HttpOnly cookie), Prometheus and
                  curl send Authorization: Bearer TOKEN (auth init writes DIR/http.token)

A run prints the watch line for its server, --creds included; serve --store
DIR writes the watcher's file as DIR/creds/watcher.creds.

Examples:
  orchestrator watch --nats nats://127.0.0.1:4222 --creds /tmp/troupe-nats/creds/watcher.creds
  orchestrator watch --nats nats://127.0.0.1:4222 --creds /tmp/troupe-nats/creds/watcher.creds --web 127.0.0.1:8080
  orchestrator watch --nats nats://127.0.0.1:4222 --creds /tmp/troupe-nats/creds/watcher.creds --run 5f1c0e9a --from-start --json | jq .type
`,
	"mcp": `Usage: orchestrator mcp [--workspace DIR] [--config FILE] [--model M] [--nats URL] [--creds FILE]
                        [--http ADDR (--http-token-file FILE | --no-auth) [--http-public]]

Serves troupe as an MCP server, on stdin/stdout (the default) or over
streamable HTTP at http://ADDR/mcp. Its tools: start_run (a task, with
placement and budget options), explore (a question answered by a fan-out of
explore agents, findings returned), check_run and cancel_run. start_run and
explore return the run ID at once; with wait they return the answer, sending
progress notifications (the run ID, agents, tokens, latest finding) every few
seconds to a client that asked for them, and a client that cancels the call
cancels the run. A run started without wait goes on until cancel_run or the
server stops. Calls run concurrently (at most mcp.max_runs runs), each its own
run in --workspace, with the configuration run would use; budget_tokens is
held to budget.tokens. Runs are headless: a tool call that needs approval is
refused. Events go to NATS (--nats, else an embedded server), so watch and
the web view see the runs. Over HTTP every request needs the token (unless
--no-auth, on loopback only); sessions idle for mcp.session_timeout end.

Flags:
  --workspace DIR   the repository the runs work in (default .)
  --config FILE     a config file layered over the others
  --model M         the default model
  --nats URL        publish events to this server (default: an embedded one)
  --creds FILE      the requester role's .creds file for --nats (also TROUPE_NATS_CREDS)
  --http ADDR       serve streamable HTTP at ADDR instead of stdio (loopback)
  --http-token-file FILE  clients send this token: Authorization: Bearer TOKEN
                    (auth init writes DIR/http.token, 0600)
  --no-auth         serve --http without a token, on loopback only: any local
                    process could then start runs
  --http-public     let --http listen beyond loopback (with --http-token-file)

Examples:
  orchestrator mcp --workspace ~/src/app
  orchestrator mcp --workspace ~/src/app --http 127.0.0.1:8765 --http-token-file /etc/troupe/http.token
`,
	"auth":        authHelp,
	"auth init":   authInitHelp,
	"auth node":   authNodeHelp,
	"auth revoke": authRevokeHelp,
	"auth list":   authListHelp,
	"serve": `Usage: orchestrator serve [--listen 127.0.0.1:4222] [--store DIR] [--ephemeral] [--config FILE]
                          [--http ADDR [--http-public] [--http-token-file FILE]] [--monitor ADDR [--monitor-public]] [--auth DIR]
                          [--cluster NAME --name SERVER --cluster-listen HOST:PORT --routes URL,...]

Runs the embedded NATS server with JetStream (and troupe's streams) as a
long-lived process for runs, nodes and watchers to connect to. Prints the URL
to use on stdout. Listens on loopback unless --listen says otherwise.
Clients need credentials: serve writes them in STORE/creds
(requester.creds for runs, watcher.creds for watchers, and the first node's
own, nodes/node-1.creds; 0600, kept across restarts; a temporary folder
without --store) and prints the commands that use them; orchestrator auth
node NAME --dir STORE/creds gives each further node its own, and auth
revoke shuts one out at once. --auth DIR takes them from a folder that
orchestrator auth init wrote instead: the one folder every server of a
cluster shares. --no-auth serves without credentials, on loopback only. A
token in TROUPE_NATS_TOKEN (or nats.token) instead is one secret for every
role (not recommended).

The streams take the configuration's nats.prefix, nats.events_max_age,
nats.events_max_bytes and nats.replicas. A stream that exists keeps its events;
its limits change only to those a config file sets (--config,
~/.config/troupe/config.yaml), and any other difference is a warning naming the
setting and both values. Replicas are raised in place.

Durability (nats.sync): JetStream acknowledges a write once it is in memory
(on a majority of the servers, in a cluster) and flushes it to disk now and
then. nats.sync always flushes every write before acknowledging it: a power
failure loses nothing acknowledged, and each write waits for the disk. An
interval (the default, 1s) flushes that often: a power failure of the server
(of every server at once, in a cluster) loses what was acknowledged since
the last flush, at most that interval; a cluster that loses one server loses
nothing either way, its replicas have it. nats-server's own default is 2m.

Flags:
  --listen HOST:PORT      client address (default 127.0.0.1:4222; port 0 = any free port)
  --store DIR             JetStream store (default: a temporary directory)
  --ephemeral             keep the store in a temporary directory, removed at exit
  --no-auth               no credentials at all (refused beyond loopback)
  --auth DIR              the operator and account keys orchestrator auth init wrote in DIR
  --config FILE           a config file over ~/.config/troupe/config.yaml (its nats settings)
  --http ADDR             serve the live web view and Prometheus /metrics at ADDR (host:port);
                          it answers only loopback Host names on loopback
  --http-public           let --http listen beyond loopback (the page shows every task;
                          needs --http-token-file)
  --http-token-file FILE  the web view and /metrics need this token: a browser opens
                          http://ADDR/?token=TOKEN once (an HttpOnly cookie), Prometheus
                          sends it (authorization: {credentials_file: FILE}), curl as
                          Authorization: Bearer TOKEN (auth init writes DIR/http.token)
  --monitor ADDR          serve NATS's monitoring endpoint (/varz, /jsz, /healthz) at ADDR (host:port)
  --monitor-public        let --monitor listen beyond loopback (it shows every connection and stream)
  --cluster NAME          join a cluster of that name; every server needs its own --name
  --name SERVER           this server's name (unique within its cluster)
  --cluster-listen H:P    where this server listens for routes (default HOST, any free port)
  --routes URL,...        nats-route://host:port of the other servers

Cluster: start each server with the same --cluster and --auth, its own --name
and store, and --routes to the others (the first one too: clustered JetStream
needs routes). Once a majority of the servers is up, the servers create
troupe's streams, buckets and object stores, each with 3 replicas in a cluster
of three or more (nats.replicas): one server lost, even killed, loses no
task, result or event, and runs and nodes ride out its loss. Runs, nodes and
watchers take every client URL in --nats, e.g.
--nats nats://10.0.0.1:4222,nats://10.0.0.2:4222,nats://10.0.0.3:4222.

Examples:
  orchestrator serve --store /var/lib/troupe/nats --config /etc/troupe/serve.yaml
  orchestrator serve --http 127.0.0.1:8080   # web view at http://127.0.0.1:8080/, metrics at /metrics
  orchestrator serve --listen 0.0.0.0:4222 --store /data/nats   # reachable from other machines
  orchestrator auth init /etc/troupe/auth   # once; copy the folder to every server
  orchestrator serve --listen 0.0.0.0:4222 --store /data/nats --auth /etc/troupe/auth --cluster troupe --name a --cluster-listen 10.0.0.1:6222 --routes nats-route://10.0.0.2:6222,nats-route://10.0.0.3:6222
`,
	"config": `Usage: orchestrator config print [--workspace DIR] [--config FILE] [--model M] [--nats URL] [--json]

The configuration's one command, print: the effective configuration with
where each value came from. orchestrator config print --help says more.

Examples:
  orchestrator config print --workspace ~/src/app
  orchestrator config print --json | jq '.[] | select(.origin != "default")'
`,
	"sandbox": `Usage: orchestrator sandbox check [--workspace DIR] [--config FILE]

Prints what this machine's kernel offers the sandbox the tools' commands run
in (Landlock ABI, seccomp, user and network namespaces), each agent kind's
effective sandbox (writable trees, denied reads, network), and the warning a
run would start with when a part is not enforced; with sandbox.required set,
that is a refusal (exit 2), as run would refuse.

Flags:
  --workspace DIR   the workspace whose .troupe/config.yaml applies (default: .)
  --config FILE     a config file on top of the others

Examples:
  orchestrator sandbox check
  orchestrator sandbox check --workspace ~/src/app
`,
	"sandbox check": `Usage: orchestrator sandbox check [--workspace DIR] [--config FILE]

See orchestrator sandbox --help.

Examples:
  orchestrator sandbox check
`,
	"config print": `Usage: orchestrator config print [--workspace DIR] [--config FILE] [--model M] [--nats URL] [--json]

Prints the effective configuration, one setting a line, with where each value
came from: the compiled-in default (configs/default.yaml), a config file and
line (~/.config/troupe/config.yaml, <workspace>/.troupe/config.yaml, --config),
the environment (OPENAI_API_KEY, TROUPE_MODEL, ...) or a flag. Secrets show as
[redacted]. An invalid configuration is printed all the same, then refused
with the error run would give (exit 2).

Flags:
  --workspace DIR   the workspace whose .troupe/config.yaml applies (default: .)
  --config FILE     a config file layered over the others, as for run
  --model M         the model run --model would set
  --nats URL        the server run --nats would set
  --json            a JSON list of {key, value, origin}

Examples:
  orchestrator config print --workspace ~/src/app
  orchestrator config print --json | jq '.[] | select(.origin != "default")'
  orchestrator config print --config team.yaml --model gpt-4.1
`,
	"version": `Usage: orchestrator version

Prints the version, the commit it was built from and the Go version.

Examples:
  orchestrator version
  orchestrator --version
`,
	"node": "Usage: orchestrator node [flags]   (the node program, built in)\n\n" + nodecmd.Usage,
	"help": `Usage: orchestrator help [COMMAND]

Prints the help of a command, or the list of commands.

Examples:
  orchestrator help run
  orchestrator help tools call
`,
}

// runFlagsHelp describes the flags of run and resume.
const runFlagsHelp = `Flags:
  --workspace DIR        the repository to work in (default: .)
  --model M              the root agent's model (also TROUPE_MODEL)
  --config FILE          a config file layered over the others
  --max-rounds N         round limit per agent
  --json                 print one JSON result instead of text
  --yes                  approve every mutating tool call without asking
  --ask-via nats         ask approvals over NATS, for orchestrator watch --interactive to answer
                         (default: the terminal; when stdin is not a terminal, </dev/null included,
                         a call that needs approval is denied at once)
  --keep-checkpoints     keep the run's checkpoints even when it succeeds
  --log-level LEVEL      debug, info, warn or error logs on stderr (default: none)
  --quiet                one progress line per root round instead of the live agent tree
  --nats URL             use this NATS server or cluster instead of an embedded one
  --creds FILE           the requester role's .creds file for --nats (serve or auth init writes it)
  --ephemeral            the embedded server keeps its store in a temporary directory
  --placement K=P,...    where kinds run: local, remote (a node) or auto, e.g. explore=remote
  --changes MODE         what becomes of the changes of workers in their own worktrees (agent.isolation):
                         apply (merge into the workspace; a conflict keeps runs/RUN/changes/AGENT.patch in the state directory),
                         branch (commit on troupe/RUN/AGENT) or patch (write the patch file only); default apply
`

// printHelp writes the help of cmd ("tools call" for a subcommand).
func printHelp(w io.Writer, cmd string) error {
	h, ok := commandHelp[cmd]
	if !ok {
		return usageErr("no help for %q; commands: %s", cmd, strings.Join(helpTopics(), ", "))
	}
	_, err := io.WriteString(w, h)
	return err
}

func helpTopics() []string {
	var out []string
	for k := range commandHelp {
		if !strings.Contains(k, " ") {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// wantsHelp reports whether args ask for help (-h or --help before "--").
func wantsHelp(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "-h", "--help", "-help":
			return true
		}
	}
	return false
}

// helpTopic is the help topic for a command line: "tools call" for
// "tools call --help", else the command.
func helpTopic(args []string) string {
	if len(args) > 1 {
		if _, ok := commandHelp[args[0]+" "+args[1]]; ok {
			return args[0] + " " + args[1]
		}
	}
	return args[0]
}
