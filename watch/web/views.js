// troupe's web view, part 3 of 4: the pages (the runs, a run, an agent)
// as HTML strings, every wire string escaped.
"use strict";

function viewNodes() {
  const nodes = liveNodes();
  if (!nodes.length) return `<h2>Nodes</h2><p class="muted">no live node</p>`;
  const rows = nodes.map(n => `<tr><td>${esc(n.name)}</td><td class="muted">${esc(n.id)}</td><td>${esc((n.kinds || []).join(", "))}</td>` +
    `<td class="num">${n.slots}</td><td class="num free">${n.free}</td><td><meter min="0" max="${n.slots || 1}" value="${n.slots - n.free}"></meter>` +
    `${n.draining ? " draining" : ""}</td></tr>`).join("");
  return `<h2>Nodes</h2><table class="nodes"><tr><th>node</th><th>ID</th><th>kinds</th><th>slots</th><th>free</th><th>busy</th></tr>${rows}</table>`;
}

function viewRuns() {
  const rows = [...S.runs.values()].sort((a, b) => b.last - a.last).map(r =>
    `<tr><td><a href="#/run/${esc(r.id)}">${esc(r.id)}</a></td><td class="${esc(runStatus(r))}">${esc(runStatus(r))}</td><td class="num">${r.agents.size}</td>` +
    `<td class="num">${r.tokens}</td><td class="num">${cost(r.cost, r.unpriced)}</td><td class="wide">${esc(head(r.task, 80))}</td></tr>`).join("");
  return `<h2>Runs</h2><table><tr><th>run</th><th>status</th><th>agents</th><th>tokens</th><th>cost</th><th class="wide">task</th></tr>${rows}</table>` +
    viewNodes();
}

// budget says how much of the run's limits it used.
function budget(r) {
  const b = r.budget;
  if (!b || !b.tokens) return `<span class="muted">no limit known</span>`;
  const used = b.used ? b.used.tokens : r.tokens, pct = Math.round(used / b.tokens * 100);
  let out = `<meter id="budget-tokens" min="0" max="${b.tokens}" value="${Math.min(used, b.tokens)}" low="${b.tokens * 0.7}" high="${b.tokens * 0.9}" optimum="0"></meter>` +
    ` ${tokens(used)} of ${tokens(b.tokens)} tokens (${pct}%)`;
  if (b.usd > 0) {
    const usd = b.used ? b.used.cost_usd : r.cost;
    out += `<br><meter id="budget-usd" min="0" max="${b.usd}" value="${Math.min(usd, b.usd)}"></meter> ${dollars(usd)} of ${dollars(b.usd)}`;
  }
  return out;
}

function counts(r) {
  const by = {};
  for (const a of r.agents.values()) by[a.status] = (by[a.status] || 0) + 1;
  return Object.keys(by).sort().map(s => `<span class="${esc(s)}">${by[s]} ${esc(s)}</span>`).join(" · ");
}

// TABLE_MAX bounds the rows of a run's agent table (the timeline shows
// every agent); #/run/ID/agents lists them all.
const TABLE_MAX = 100;

function agentTable(r, rows, all) {
  const shown = all ? rows : rows.slice(0, TABLE_MAX);
  const more = shown.length < rows.length ? `<p class="muted">the first ${shown.length} of ${rows.length} agents in tree order: ` +
    `<a href="#/run/${esc(r.id)}/agents">all of them</a></p>` : "";
  return `<table class="agents"><tr><th>agent</th><th>kind</th><th>node</th><th>status</th><th>rounds</th><th>tokens</th><th>cost</th><th>tool</th></tr>` +
    agentRows(r, shown) + `</table>` + more;
}

function agentRows(r, rows) {
  return rows.map(({ a, depth }) =>
    `<tr id="agent-${esc(a.id)}"><td class="d${Math.min(depth, 5)}"><a href="#/run/${esc(r.id)}/agent/${esc(a.id)}">${esc(a.id)}</a></td><td>${esc(a.kind)}</td>` +
    `<td>${esc(a.node ? nodeName(a.node) : "local")}</td><td class="${esc(a.status)}">${esc(a.status)}</td><td class="num">${a.rounds}</td><td class="num">${a.tokens}</td>` +
    `<td class="num">${cost(a.cost, a.unpriced)}</td><td class="tool">${esc(a.tool)}</td></tr>`).join("");
}

function viewAgents(id) {
  const r = S.runs.get(id);
  if (!r) return `<p>run ${esc(id)}: no events yet</p>`;
  return `<h2><a href="#/run/${esc(id)}">Run ${esc(id)}</a>: ${r.agents.size} agents</h2>` + agentTable(r, ordered(r), true);
}

// viewRun draws a run's page. On the page's first drawing (later) its
// agent table, below the first screen, is left to drawTable: the
// timeline is on screen a frame sooner.
function viewRun(id, width, later) {
  const r = S.runs.get(id);
  if (!r) return `<p>run ${esc(id)}: no events yet</p>`;
  const rows = ordered(r);
  const half = Math.max(Math.floor((width - 24) / 2), 240);
  return `<h2>Run ${esc(id)} <span class="${esc(runStatus(r))}">${esc(runStatus(r))}</span></h2><p>${esc(head(r.task, 300))}</p>` +
    `<section class="cards"><div class="card"><h3>tokens</h3><b id="run-tokens">${r.tokens}</b></div>` +
    `<div class="card"><h3>cost</h3><b id="run-cost">${cost(r.cost, r.unpriced)}</b></div>` +
    `<div class="card"><h3>agents</h3><b>${r.agents.size}</b> ${counts(r)}</div>` +
    `<div class="card wide-card"><h3>budget</h3>${budget(r)}</div></section>` +
    `<section class="charts"><figure><figcaption>tokens over time</figcaption>${chart(r, "tokens", half, "tokens over time", tokens)}</figure>` +
    `<figure><figcaption>cost over time</figcaption>${r.unpriced && !(r.cost > 0) ? `<p class="unknown">cost unknown: no price for its models</p>`
      : chart(r, "cost", half, "cost over time", v => dollars(v) + (r.unpriced ? " + unpriced" : ""))}</figure></section>` +
    `<h3>Timeline</h3><div class="timeline-box">${timeline(r, rows, width - 2)}</div>` +
    `<h3>Agents</h3>${later ? `<div id="later-table" class="muted">drawing…</div>` : agentTable(r, rows, false)}` +
    viewNodes();
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
  return `<h2><a href="#/run/${esc(rid)}">${esc(rid)}</a> / ${esc(aid)}</h2><p>${esc(a.kind)} on ${esc(nodeName(a.node))} · ${esc(a.status)} · ` +
    `${a.tokens} tokens · ${cost(a.cost, a.unpriced)}</p><p>${esc(head(a.task, 500))}</p>${items}`;
}

// drawTable fills in the agent table viewRun left for later.
function drawTable(id) {
  const el = document.getElementById("later-table"), r = S.runs.get(id);
  if (el && r) el.outerHTML = agentTable(r, ordered(r), false);
}
