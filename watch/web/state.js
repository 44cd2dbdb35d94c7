// troupe's web view, part 1 of 4: the state built from events. Every
// string in it came from the wire; the views escape it (esc) before it
// reaches the page.
"use strict";
const S = { runs: new Map(), nodes: new Map(), names: new Map(), stats: null, dirty: true, caughtUp: false, events: 0, timelineTop: null };
const LOST_MS = 120000, TIMELINE_MAX = 500, SERIES_MAX = 5000;

function esc(s) {
  s = String(s == null ? "" : s);
  if (!/[&<>"']/.test(s)) return s;
  return s.replace(/[&<>"']/g, c => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c]));
}
function head(s, n) { s = typeof s === "string" ? s : JSON.stringify(s); return s && s.length > n ? s.slice(0, n) + "…" : s; }
function dollars(v) { return "$" + (v || 0).toFixed(4); }
// cost is a cost some of which may be unknown (a model without a price):
// "cost unknown" when nothing was priced, "$0.0123 + unpriced" when only
// part was, never a silent $0.
function cost(usd, unpriced) {
  if (!unpriced) return dollars(usd);
  return usd > 0 ? dollars(usd) + " + unpriced" : "cost unknown";
}
function tokens(n) {
  n = n || 0;
  if (n < 1000) return String(n);
  if (n < 1e6) return (n / 1000).toFixed(1) + "k";
  return (n / 1e6).toFixed(1) + "M";
}
function at(ev) { return Date.parse(ev.time) || 0; }

function run(id) {
  let r = S.runs.get(id);
  if (!r) {
    r = { id, status: "live", task: "", tokens: 0, cost: 0, spentTokens: 0, spentCost: 0, unpriced: false, agents: new Map(), first: 0, last: 0, start: 0, end: 0,
      finished: null, budget: null, series: [], sorted: true };
    S.runs.set(id, r);
  }
  return r;
}
function agent(r, id) {
  let a = r.agents.get(id);
  if (!a) {
    a = { id, parent: "", kind: "", node: "", status: "spawned", rounds: 0, tokens: 0, cost: 0, unpriced: false, tool: "", model: "",
      timeline: [], first: 0, spawned: 0, started: 0, ended: 0, error: "" };
    r.agents.set(id, a);
  }
  return a;
}
function note(a, item) { a.timeline.push(item); if (a.timeline.length > TIMELINE_MAX) a.timeline.shift(); }

// spend adds a model call's tokens and dollars to its run and to the
// run's series of totals over time.
// A finished run's own totals stand, whichever of its events the stream
// stored after its end.
function spend(r, t, d) {
  r.spentTokens += (d.tokens_in || 0) + (d.tokens_out || 0);
  r.spentCost += d.cost_usd || 0;
  r.tokens = (r.finished && r.finished.tokens) || r.spentTokens;
  r.cost = (r.finished && r.finished.cost_usd) || r.spentCost;
  if (d.cost_known === false && !(d.cost_usd > 0)) r.unpriced = true;
  if (r.series.length && t < r.series[r.series.length - 1].t) r.sorted = false;
  r.series.push({ t, tokens: (d.tokens_in || 0) + (d.tokens_out || 0), cost: d.cost_usd || 0 });
  if (r.series.length > SERIES_MAX) squeeze(r);
}

// squeeze halves a run's series, merging neighbours, so a long run keeps
// a bounded curve.
function squeeze(r) {
  if (!r.sorted) { r.series.sort((x, y) => x.t - y.t); r.sorted = true; }
  const out = [];
  for (let i = 0; i < r.series.length; i += 2) {
    const a = r.series[i], b = r.series[i + 1];
    out.push(b ? { t: b.t, tokens: a.tokens + b.tokens, cost: a.cost + b.cost } : a);
  }
  r.series = out;
}

function applyNode(ev, d) {
  if (d.node && d.name) S.names.set(d.node, d.name);
  if (ev.type === "node.joined") S.nodes.set(d.node, { id: d.node, name: d.name, slots: d.slots, kinds: d.kinds || [] });
  if (ev.type === "node.left") S.nodes.delete(d.node);
}

function applyRun(r, ev, d, t) {
  switch (ev.type) {
    case "run.started": r.task = d.task; r.start = t; break;
    case "run.finished":
      r.finished = d; r.status = d.status || "finished"; r.end = t;
      r.tokens = d.tokens || r.spentTokens; r.cost = d.cost_usd || r.spentCost;
      if (d.budget && d.budget.limits) r.budget = { tokens: d.budget.limits.tokens || 0, usd: d.budget.limits.usd || 0, used: d.budget.used };
      break;
    case "budget.acquired": // the run's own grant to the root: the run's limit
      if (d.agent === "root" && !d.parent && !(r.budget && r.budget.used)) r.budget = { tokens: d.tokens || 0, usd: d.usd || 0 };
      break;
    case "node.left": case "node.joined": applyNode(ev, d); break;
  }
}

function apply(ev) {
  S.events++;
  const d = ev.data || {}, t = at(ev);
  if (ev.run === "nodes") { applyNode(ev, d); return; }
  const r = run(ev.run);
  r.last = Math.max(r.last, t);
  if (!r.first || t < r.first) r.first = t;
  if (ev.agent === "run" || ev.agent === "nodes") { applyRun(r, ev, d, t); return; }
  const a = agent(r, ev.agent);
  if (ev.kind) a.kind = ev.kind;
  if (ev.node) a.node = ev.node;
  if (ev.parent) a.parent = ev.parent;
  if (!a.first || t < a.first) a.first = t;
  switch (ev.type) {
    case "agent.spawned": {
      const c = agent(r, d.child);
      c.parent = ev.agent; c.kind = d.kind; c.model = d.model; c.spawned = t;
      break;
    }
    case "agent.started": a.status = "running"; a.task = d.task; a.started = a.started || t; break;
    case "round.started": a.rounds = d.round; a.model = d.model; a.status = "running"; a.started = a.started || t; note(a, { t: "round", round: d.round, model: d.model }); break;
    case "llm.response":
      spend(r, t, d);
      a.tokens = d.total_tokens; a.cost = d.total_cost_usd;
      if (d.cost_known === false && !(d.cost_usd > 0)) a.unpriced = true;
      note(a, { t: "llm", text: [`${d.tokens_in || 0} in`, `${d.tokens_out || 0} out`, d.finish_reason, `${d.duration_ms || 0} ms`].filter(Boolean).join(", ") }); break;
    case "context.compacted": spend(r, t, d); break;
    case "tool.started": a.tool = d.tool; note(a, { t: "tool", tool: d.tool, call: d.call_id, args: d.args == null ? "" : head(d.args, 300) }); break;
    case "tool.finished":
      a.tool = "";
      note(a, { t: "result", tool: d.tool, text: `${d.is_error ? "error, " : ""}${d.output_bytes} bytes, ${Math.round(d.duration_ms)} ms${d.cached ? ", cached" : ""}`, diff: d.diff });
      break;
    case "budget.waiting": if (d.agent && d.agent !== ev.agent) { const c = agent(r, d.agent); c.status = "waiting"; } else a.status = "waiting"; break;
    case "llm.throttled":
      if (d.phase === "waiting") { a.status = "throttled"; note(a, { t: "llm", text: `throttled: ${d.reason}${d.status ? " " + d.status : ""}` }); }
      else if (d.phase === "resumed") { a.status = "running"; note(a, { t: "llm", text: `waited ${d.waited_ms} ms for its turn` }); }
      else note(a, { t: "llm", text: `provider refused ${d.status}${d.retry_after_ms ? ", retry after " + d.retry_after_ms + " ms" : ""}` });
      break;
    case "agent.finished": case "agent.failed": case "agent.cancelled":
      a.status = d.status; a.tool = ""; a.rounds = d.rounds || a.rounds; a.ended = t; a.error = d.error || "";
      if (d.unpriced) a.unpriced = true;
      note(a, { t: "end", text: `${d.status}: ${head(d.text || d.error || "", 300)}` }); break;
  }
}

function runStatus(r) { return r.finished ? r.status : (Date.now() - r.last > LOST_MS ? "lost" : "live"); }

// liveNodes are the nodes to show: the registry's (the server's stats),
// or, without them, those the events say joined and did not leave.
function liveNodes() {
  if (S.stats && Array.isArray(S.stats.nodes)) return S.stats.nodes;
  return [...S.nodes.values()].map(n => {
    let busy = 0;
    for (const r of S.runs.values()) for (const a of r.agents.values()) if (a.node === n.id && a.status === "running") busy++;
    return { id: n.id, name: n.name, kinds: n.kinds, slots: n.slots, free: Math.max(n.slots - busy, 0) };
  });
}
function nodeName(id) {
  if (!id) return "local";
  const n = S.stats && Array.isArray(S.stats.nodes) ? S.stats.nodes.find(x => x.id === id) : null;
  const name = (n && n.name) || S.names.get(id);
  return name ? `${name} (${id})` : id;
}
