// An outside peer on a troupe NATS server: the npm nats client holding one
// creds file tries each operation given (a subject to publish on, or
// sub:SUBJECT to subscribe to) and prints one JSON line per operation:
// {"op": ..., "refused": true|false, "error": ...}. The server answers a
// refused PUB or SUB with -ERR before the PONG of the flush that follows,
// so after each flush the outcome is known.
// CommonJS, so that NODE_PATH (tests/.npm/node_modules) finds the client.
const { connect, credsAuthenticator } = require("nats");
const { readFileSync } = require("node:fs");

(async () => {
const [url, creds, ...ops] = process.argv.slice(2);
const nc = await connect({ servers: url, authenticator: credsAuthenticator(readFileSync(creds)) });
const errs = [];
(async () => {
  for await (const s of nc.status()) {
    if (s.type === "error") errs.push(String(s.data));
  }
})();
const tick = () => new Promise((r) => setImmediate(r));
for (const op of ops) {
  const before = errs.length;
  if (op.startsWith("sub:")) {
    const sub = nc.subscribe(op.slice(4));
    (async () => {
      try {
        for await (const _ of sub) { /* a refused subscription ends with an error */ }
      } catch (e) {
        errs.push(String(e));
      }
    })();
  } else {
    nc.publish(op, new TextEncoder().encode('{"v":1,"reason":"forged"}'));
  }
  await nc.flush();
  for (let i = 0; i < 5 && errs.length === before; i++) await tick();
  const refused = errs.length > before;
  console.log(JSON.stringify({ op, refused, error: refused ? errs[errs.length - 1] : "" }));
}
await nc.close();
})().catch((e) => {
  console.error(String(e));
  process.exit(1);
});
