// troupe's web view, part 4 of 4: the event stream and the drawing loop.
// /events sends the events (Server-Sent Events, batched), the end of the
// replay and the server's stats; the page redraws at most four times a
// second, and once a second while it replays a stored stream. No
// dependencies, no build step.
"use strict";
let lastDraw = 0, drawCost = 0;
let drawnOnce = false; // whether this page (route) has been drawn since it caught up

// draw redraws the page when something changed: at most every 250 ms,
// every second while a stored stream replays, and never more often than
// three times the last drawing's cost (a large run stays responsive).
function draw() {
  if (!S.dirty) return;
  const now = Date.now();
  if (now - lastDraw < 3 * drawCost || !S.caughtUp && now - lastDraw < 1000) {
    if (!S.caughtUp) document.getElementById("conn").textContent = `replaying… ${S.events} events`;
    return;
  }
  S.dirty = false;
  lastDraw = now;
  const main = document.getElementById("main");
  const pad = parseFloat(getComputedStyle(main).paddingLeft) + parseFloat(getComputedStyle(main).paddingRight);
  const width = Math.max(Math.floor(main.clientWidth - pad - 4), 480);
  const p = location.hash.replace(/^#\/?/, "").split("/");
  let html;
  if (p[0] === "run" && p[2] === "agent") html = viewAgent(decodeURIComponent(p[1]), decodeURIComponent(p[3]));
  else if (p[0] === "run" && p[2] === "agents") html = viewAgents(decodeURIComponent(p[1]));
  else if (p[0] === "run" && p[1]) {
    const id = decodeURIComponent(p[1]), later = !drawnOnce && S.runs.has(id);
    html = viewRun(id, width, later);
    if (later) requestAnimationFrame(() => setTimeout(() => drawTable(id))); // after the frame with the timeline
  }
  else html = viewRuns();
  main.innerHTML = html;
  const box = main.querySelector(".timeline-box"), top = S.timelineTop;
  if (box && top && shown && top.run === shown.run) box.scrollTop = top.top; // where its reader left it
  const q = S.stats && S.stats.queue_depth;
  document.getElementById("queue").textContent = q == null ? "" : `queue ${q}`;
  drawCost = Date.now() - now;
  drawnOnce = drawnOnce || S.caughtUp;
}

// A timeline's bar or label gets its hover text as the pointer reaches
// it; a click on it opens its agent.
function agentOf(e) { return e.target.closest && e.target.closest("svg.timeline [data-agent]"); }
document.addEventListener("scroll", e => { if (e.target.classList && e.target.classList.contains("timeline-box")) showRows(e.target); }, true);
document.addEventListener("mouseover", e => { const el = agentOf(e); if (el) giveTitle(el); });
document.addEventListener("click", e => {
  const el = agentOf(e), svg = el && el.closest("svg.timeline");
  if (svg) location.hash = `#/run/${encodeURIComponent(svg.dataset.run)}/agent/${encodeURIComponent(el.dataset.agent)}`;
});

// viewingLive says whether the page shows a live run, whose time axis
// moves with the clock (and whose status turns lost after a silence), or
// the runs list while a run is live.
function viewingLive() {
  const p = location.hash.replace(/^#\/?/, "").split("/");
  if (p[0] !== "run") return [...S.runs.values()].some(r => runStatus(r) === "live");
  const r = S.runs.get(decodeURIComponent(p[1] || ""));
  return r && runStatus(r) === "live";
}

// The page follows the events of the run it shows (its own pages replay
// only that run, however many the stream keeps), or of every run for the
// runs list; a change of page between them follows anew.
let es = null, following = null;
function wanted() {
  const p = location.hash.replace(/^#\/?/, "").split("/");
  return p[0] === "run" && p[1] ? decodeURIComponent(p[1]) : "";
}

function connect() {
  const run = wanted();
  if (es && run === following) return;
  if (es) es.close();
  following = run;
  S.runs.clear(); S.nodes.clear(); S.caughtUp = false; S.events = 0; S.dirty = true;
  document.getElementById("conn").textContent = "connecting…";
  es = new EventSource(run ? "events?run=" + encodeURIComponent(run) : "events");
  const conn = document.getElementById("conn");
  es.addEventListener("events", m => { for (const ev of JSON.parse(m.data)) apply(ev); S.dirty = true; });
  es.addEventListener("caught_up", () => { S.caughtUp = true; conn.textContent = "live"; S.dirty = true; lastDraw = 0; draw(); });
  es.addEventListener("stats", m => { // every few seconds, mostly the same
    if (m.data === S.statsText) return;
    S.statsText = m.data; S.stats = JSON.parse(m.data); S.dirty = true;
  });
  // Each connection replays the stream from its start: begin afresh. The
  // replay draws nothing for its first second: a stored run is usually
  // all there by then.
  es.onopen = () => { S.runs.clear(); S.nodes.clear(); S.caughtUp = false; S.events = 0; S.dirty = true; lastDraw = Date.now(); };
  es.onerror = () => { conn.textContent = "reconnecting…"; };
}

// A page the browser keeps for back/forward lets its stream go (a kept
// page's open stream holds one of the few connections a browser allows a
// host: a seventh page then waits forever) and follows anew when shown.
window.addEventListener("pagehide", () => { if (es) { es.close(); es = null; } });
window.addEventListener("pageshow", e => { if (e.persisted) { drawnOnce = false; connect(); } });
window.addEventListener("hashchange", () => { drawnOnce = false; connect(); S.dirty = true; lastDraw = 0; drawCost = 0; draw(); });
window.addEventListener("resize", () => { S.dirty = true; });
setInterval(draw, 250);
let wasLive = false; // one more drawing once a run turns lost
setInterval(() => { const live = viewingLive(); if (live || wasLive) S.dirty = true; wasLive = live; }, 1000);
connect();
draw();
