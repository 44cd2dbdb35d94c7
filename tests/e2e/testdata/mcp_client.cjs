// An outside MCP client for troupe's MCP server: the official TypeScript
// SDK's Client (@modelcontextprotocol/sdk, pinned by tests/run.sh in
// tests/.npm) starting `orchestrator mcp` over stdio with
// StdioClientTransport, as Claude Desktop-style hosts do. It plays one
// scenario and prints one JSON line per observation on stdout; the Go test
// (tests/e2e/mcp_e2e_test.go) reads them as they come.
//
//   node mcp_client.cjs SCENARIO ORCHESTRATOR ARG...
//
// Scenarios: progress (explore with wait, a client timeout shorter than
// the exploration, reset by progress), abort (explore with wait, aborted
// once its explore agents run, then check_run), garbage (lines that are
// not JSON-RPC on the server's stdin, bad arguments, an unknown method,
// then a run), call (start_run with the JSON arguments in $MCP_ARGS).
// CommonJS, so that NODE_PATH (tests/.npm/node_modules) finds the SDK.
const { Client } = require("@modelcontextprotocol/sdk/client/index.js");
const { StdioClientTransport } = require("@modelcontextprotocol/sdk/client/stdio.js");

const [scenario, command, ...args] = process.argv.slice(2);
const say = (o) => console.log(JSON.stringify(o));
const runOf = (msg) => (/^run ([0-9a-f-]{36}), /.exec(msg || "") || [])[1];

async function main() {
  const transport = new StdioClientTransport({ command, args, env: { ...process.env }, stderr: "inherit" });
  const client = new Client({ name: "troupe-e2e", version: "1" });
  let errors = 0;
  client.onerror = () => { errors++; };
  await client.connect(transport);
  await client.listTools(); // caches the output schemas the results are checked against
  try {
    await scenarios[scenario](client, transport);
  } finally {
    say({ event: "client_errors", count: errors });
    await client.close();
  }
}

const scenarios = {
  // A 20 s exploration with a client timeout of 7 s: the call succeeds
  // only if progress keeps restarting the timeout.
  async progress(client) {
    let last = Date.now();
    let maxGap = 0;
    const res = await client.callTool(
      { name: "explore", arguments: { question: "where is alpha?", agents: 2, wait: true } },
      undefined,
      {
        timeout: 7000,
        resetTimeoutOnProgress: true,
        maxTotalTimeout: 180000,
        onprogress: (p) => {
          const now = Date.now();
          maxGap = Math.max(maxGap, now - last);
          last = now;
          say({ event: "progress", progress: p.progress, message: p.message });
        },
      },
    );
    say({ event: "result", result: res.structuredContent, is_error: !!res.isError, max_gap_ms: maxGap });
  },

  // Abort the waiting call once the explore agents run; the run must end
  // cancelled (check_run with wait tells).
  async abort(client) {
    const ac = new AbortController();
    let run;
    const call = client.callTool(
      { name: "explore", arguments: { question: "where is alpha?", agents: 2, wait: true } },
      undefined,
      {
        signal: ac.signal,
        timeout: 600000,
        onprogress: (p) => {
          run = run || runOf(p.message);
          if (!ac.signal.aborted && /agents 3 running/.test(p.message)) {
            say({ event: "aborting", run });
            ac.abort("the user changed their mind");
          }
        },
      },
    );
    try {
      await call;
      say({ event: "not_aborted" });
    } catch (e) {
      say({ event: "aborted", error: String(e) });
    }
    const st = await client.callTool({ name: "check_run", arguments: { run, wait: true } });
    say({ event: "status", result: st.structuredContent });
  },

  // Garbage on the server's stdin (written past the SDK, as a broken
  // client or a stray print would), bad arguments and an unknown method:
  // each gets its error, and a run started before them completes.
  async garbage(client, transport) {
    const stdin = transport._process.stdin; // the pinned SDK's child process
    const started = await client.callTool({ name: "start_run", arguments: { task: "find alpha for me" } });
    const run = started.structuredContent.run;
    stdin.write("this line is not JSON\n");
    stdin.write('{"jsonrpc":"2.0","id":"x"}\n');
    const codes = {};
    for (const [name, a] of [["explore", { question: "" }], ["explore", { question: "where?", agents: -3 }], ["start_run", { task: "x", budget_tokens: "lots" }]]) {
      try {
        await client.callTool({ name, arguments: a });
        codes[name + " " + JSON.stringify(a)] = 0;
      } catch (e) {
        codes[name + " " + JSON.stringify(a)] = e.code;
      }
    }
    try {
      await client.request({ method: "no/such/method", params: {} }, require("@modelcontextprotocol/sdk/types.js").ResultSchema);
    } catch (e) {
      codes["no/such/method"] = e.code;
    }
    stdin.write("}{ more garbage\n");
    const st = await client.callTool({ name: "check_run", arguments: { run, wait: true } });
    say({ event: "garbage", codes, run, status: st.structuredContent });
  },

  // start_run with $MCP_ARGS (wait: true added).
  async call(client) {
    const a = JSON.parse(process.env.MCP_ARGS || "{}");
    const res = await client.callTool({ name: "start_run", arguments: { ...a, wait: true } }, undefined, { timeout: 120000 });
    say({ event: "result", result: res.structuredContent, is_error: !!res.isError, content: res.content });
  },
};

main().catch((e) => {
  say({ event: "fatal", error: String(e && e.stack || e) });
  process.exit(1);
});
