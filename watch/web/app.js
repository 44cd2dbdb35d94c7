// troupe's live web view: builds runs, agent trees and timelines from the
// events /events streams (Server-Sent Events, batched), and redraws at
// most a few times a second. No dependencies, no build step.
"use strict";
const S = { runs: new Map(), nodes: new Map(), queue: null, dirty: true };
const LOST_MS = 120000, TIMELINE_MAX = 500;

function esc(s) {
  return String(s == null ? "" : s).replace(/[&<>"']/g, c => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c]));
}
function head(s, n) { s = typeof s === "string" ? s : JSON.stringify(s); return s && s.length > n ? s.slice(0, n) + "…" : s; }
function money(v) { return "$" + (v || 0).toFixed(4); }

function run(id) {
  let r = S.runs.get(id);
  if (!r) { r = { id, status: "live", task: "", tokens: 0, cost: 0, agents: new Map(), last: 0, finished: null }; S.runs.set(id, r); }
  return r;
}
function agent(r, id) {
  let a = r.agents.get(id);
  if (!a) { a = { id, parent: "", kind: "", node: "", status: "spawned", rounds: 0, tokens: 0, cost: 0, tool: "", model: "", timeline: [] }; r.agents.set(id, a); }
  return a;
}
function note(a, item) { a.timeline.push(item); if (a.timeline.length > TIMELINE_MAX) a.timeline.shift(); }

function apply(ev) {
  const d = ev.data || {};
  if (ev.run === "nodes") {
    if (ev.type === "node.joined") S.nodes.set(d.node, { id: d.node, name: d.name, slots: d.slots, kinds: d.kinds || [], busy: 0 });
    if (ev.type === "node.left") S.nodes.delete(d.node);
    return;
  }
  const r = run(ev.run);
  r.last = Math.max(r.last, Date.parse(ev.time) || 0);
  if (ev.type === "run.started") { r.task = d.task; return; }
  if (ev.type === "run.finished") { r.finished = d; r.status = d.status || "finished"; r.tokens = d.tokens; r.cost = d.cost_usd; return; }
  if (ev.agent === "run" || ev.agent === "nodes") return;
  const a = agent(r, ev.agent);
  if (ev.kind) a.kind = ev.kind;
  if (ev.node) a.node = ev.node;
  if (ev.parent) a.parent = ev.parent;
  switch (ev.type) {
    case "agent.spawned": { const c = agent(r, d.child); c.parent = ev.agent; c.kind = d.kind; c.model = d.model; break; }
    case "agent.started": a.status = "running"; a.task = d.task; break;
    case "round.started": a.rounds = d.round; a.model = d.model; a.status = "running"; note(a, { t: "round", round: d.round, model: d.model }); break;
    case "llm.response":
      r.tokens += (d.tokens_in || 0) + (d.tokens_out || 0); r.cost += d.cost_usd || 0;
      a.tokens = d.total_tokens; a.cost = d.total_cost_usd;
      note(a, { t: "llm", text: `${d.tokens_in} in, ${d.tokens_out} out, ${d.finish_reason}, ${d.duration_ms} ms` }); break;
    case "tool.started": a.tool = d.tool; note(a, { t: "tool", tool: d.tool, call: d.call_id, args: head(d.args, 300) }); break;
    case "tool.finished": {
      a.tool = "";
      note(a, { t: "result", tool: d.tool, text: `${d.is_error ? "error, " : ""}${d.output_bytes} bytes, ${Math.round(d.duration_ms)} ms${d.cached ? ", cached" : ""}`, diff: d.diff });
      break;
    }
    case "budget.waiting": a.status = "waiting"; break;
    case "llm.throttled":
      if (d.phase === "waiting") { a.status = "throttled"; note(a, { t: "llm", text: `throttled: ${d.reason}${d.status ? " " + d.status : ""}` }); }
      else if (d.phase === "resumed") { a.status = "running"; note(a, { t: "llm", text: `waited ${d.waited_ms} ms for its turn` }); }
      else note(a, { t: "llm", text: `provider refused ${d.status}${d.retry_after_ms ? ", retry after " + d.retry_after_ms + " ms" : ""}` });
      break;
    case "agent.finished": case "agent.failed": case "agent.cancelled":
      a.status = d.status; a.tool = ""; a.rounds = d.rounds || a.rounds; note(a, { t: "end", text: `${d.status}: ${head(d.text || d.error || "", 300)}` }); break;
  }
}

function runStatus(r) { return r.finished ? r.status : (Date.now() - r.last > LOST_MS ? "lost" : "live"); }

function viewRuns() {
  const rows = [...S.runs.values()].sort((a, b) => b.last - a.last).map(r =>
    `<tr><td><a href="#/run/${esc(r.id)}">${esc(r.id)}</a></td><td class="${runStatus(r)}">${runStatus(r)}</td><td class="num">${r.agents.size}</td>` +
    `<td class="num">${r.tokens}</td><td class="num">${money(r.cost)}</td><td class="wide">${esc(head(r.task, 80))}</td></tr>`).join("");
  const nodes = [...S.nodes.values()].map(n => {
    let busy = 0;
    for (const r of S.runs.values()) for (const a of r.agents.values()) if (a.node === n.id && a.status === "running") busy++;
    return `<tr><td>${esc(n.id)}</td><td>${esc(n.name)}</td><td>${esc(n.kinds.join(", "))}</td><td class="num">${n.slots}</td><td class="num">${Math.max(n.slots - busy, 0)}</td></tr>`;
  }).join("");
  return `<h2>Runs</h2><table><tr><th>run</th><th>status</th><th>agents</th><th>tokens</th><th>cost</th><th class="wide">task</th></tr>${rows}</table>` +
    `<h2>Nodes</h2><table><tr><th>node</th><th>name</th><th>kinds</th><th>slots</th><th>free</th></tr>${nodes}</table>`;
}

function viewRun(id) {
  const r = S.runs.get(id);
  if (!r) return `<p>run ${esc(id)}: no events yet</p>`;
  const kids = new Map();
  for (const a of r.agents.values()) { const p = r.agents.has(a.parent) ? a.parent : ""; if (!kids.has(p)) kids.set(p, []); kids.get(p).push(a); }
  const rows = [];
  const walk = (p, depth) => {
    for (const a of kids.get(p) || []) {
      rows.push(`<tr id="agent-${esc(a.id)}"><td class="d${Math.min(depth, 5)}"><a href="#/run/${esc(id)}/agent/${esc(a.id)}">${esc(a.id)}</a></td><td>${esc(a.kind)}</td>` +
        `<td>${esc(a.node || "local")}</td><td class="${esc(a.status)}">${esc(a.status)}</td><td class="num">${a.rounds}</td><td class="num">${a.tokens}</td>` +
        `<td class="num">${money(a.cost)}</td><td class="tool">${esc(a.tool)}</td></tr>`);
      walk(a.id, depth + 1);
    }
  };
  walk("", 0);
  return `<h2>Run ${esc(id)} <span class="${runStatus(r)}">${runStatus(r)}</span></h2><p>${esc(head(r.task, 300))}</p>` +
    `<p>tokens <b id="run-tokens">${r.tokens}</b> · cost ${money(r.cost)} · agents ${r.agents.size}</p>` +
    `<table><tr><th>agent</th><th>kind</th><th>node</th><th>status</th><th>rounds</th><th>tokens</th><th>cost</th><th>tool</th></tr>${rows.join("")}</table>`;
}

function viewAgent(rid, aid) {
  const r = S.runs.get(rid), a = r && r.agents.get(aid);
  if (!a) return `<p>agent ${esc(aid)}: no events yet</p>`;
  const items = a.timeline.map(i => {
    switch (i.t) {
      case "round": return `<h3>round ${i.round} · ${esc(i.model)}</h3>`;
      case "llm": return `<p>model: ${esc(i.text)}</p>`;
      case "tool": return `<p class="tool">→ ${esc(i.tool)} ${esc(i.args)}</p>`;
      case "result": return `<p class="tool">← ${esc(i.tool)}: ${esc(i.text)}</p>` + (i.diff ? `<pre>${esc(i.diff)}</pre>` : "");
      default: return `<p><b>${esc(i.text)}</b></p>`;
    }
  }).join("");
  return `<h2><a href="#/run/${esc(rid)}">${esc(rid)}</a> / ${esc(aid)}</h2><p>${esc(a.kind)} on ${esc(a.node || "local")} · ${esc(a.status)} · ` +
    `${a.tokens} tokens · ${money(a.cost)}</p><p>${esc(head(a.task, 500))}</p>${items}`;
}

function draw() {
  if (!S.dirty) return;
  S.dirty = false;
  const p = location.hash.replace(/^#\/?/, "").split("/");
  let html;
  if (p[0] === "run" && p[2] === "agent") html = viewAgent(decodeURIComponent(p[1]), decodeURIComponent(p[3]));
  else if (p[0] === "run" && p[1]) html = viewRun(decodeURIComponent(p[1]));
  else html = viewRuns();
  document.getElementById("main").innerHTML = html;
  document.getElementById("queue").textContent = S.queue == null ? "" : `queue ${S.queue}`;
}

function connect() {
  const es = new EventSource("events");
  const conn = document.getElementById("conn");
  es.addEventListener("events", m => { for (const ev of JSON.parse(m.data)) apply(ev); S.dirty = true; });
  es.addEventListener("caught_up", () => { conn.textContent = "live"; S.dirty = true; });
  es.addEventListener("stats", m => { S.queue = JSON.parse(m.data).queue_depth; S.dirty = true; });
  // Each connection replays the stream from its start: begin afresh.
  es.onopen = () => { S.runs.clear(); S.nodes.clear(); S.dirty = true; };
  es.onerror = () => { conn.textContent = "reconnecting…"; };
}

window.addEventListener("hashchange", () => { S.dirty = true; draw(); });
setInterval(draw, 250);
setInterval(() => { S.dirty = true; }, 5000); // live/lost by age
connect();
draw();
