// troupe's web view, part 2 of 4: the drawings of a run, as SVG (no
// inline styles: the page's policy allows none): the timeline, one bar
// per agent from its spawn to its end under its parent, and the run's
// tokens and dollars over time.
"use strict";
const ROW = 16, LABEL_W = 250, AXIS_H = 22;
const STEPS = [100, 250, 500, 1e3, 2e3, 5e3, 1e4, 15e3, 3e4, 6e4, 12e4, 3e5, 6e5, 9e5, 18e5, 36e5, 72e5, 216e5, 432e5, 864e5];

// span is the run's time axis: from its start to its end, or to now
// while it is live.
function span(r) {
  let t0 = r.start || r.first, t1 = r.end || r.last;
  for (const a of r.agents.values()) {
    const s = a.spawned || a.started || a.first;
    if (s && s < t0) t0 = s;
    if (a.ended > t1) t1 = a.ended;
  }
  if (runStatus(r) === "live") t1 = Math.max(t1, Date.now());
  return { t0, t1: Math.max(t1, t0 + 1000) };
}

function fmtOffset(ms) {
  if (ms < 1000 && ms > 0) return ms + "ms";
  const s = Math.round(ms / 1000);
  if (s < 60) return s + "s";
  const m = Math.floor(s / 60);
  if (m < 60) return s % 60 ? `${m}m${s % 60}s` : m + "m";
  const h = Math.floor(m / 60);
  return m % 60 ? `${h}h${m % 60}m` : h + "h";
}
function fmtDuration(ms) { return ms < 10000 ? (ms / 1000).toFixed(1) + " s" : fmtOffset(ms); }

// ticks are the axis' marks: about one per 100 pixels, at a round step.
function ticks(dur, width) {
  const step = STEPS.find(s => dur / s <= Math.max(width / 100, 2)) || STEPS[STEPS.length - 1];
  const out = [];
  for (let t = 0; t <= dur; t += step) out.push(t);
  return out;
}

// ordered is the run's agents in tree order (each parent before its
// children, siblings by spawn time), with their depth.
function ordered(r) {
  const kids = new Map();
  for (const a of r.agents.values()) {
    const p = a.parent && r.agents.has(a.parent) && a.parent !== a.id ? a.parent : "";
    if (!kids.has(p)) kids.set(p, []);
    kids.get(p).push(a);
  }
  for (const list of kids.values()) list.sort((x, y) => (x.spawned || x.first) - (y.spawned || y.first) || (x.id < y.id ? -1 : 1));
  const out = [], seen = new Set();
  const walk = (p, depth) => {
    for (const a of kids.get(p) || []) {
      if (seen.has(a.id)) continue;
      seen.add(a.id);
      out.push({ a, depth });
      walk(a.id, depth + 1);
    }
  };
  walk("", 0);
  for (const a of r.agents.values()) if (!seen.has(a.id)) out.push({ a, depth: 0 }); // a cycle on the wire
  return out;
}

// A timeline draws only the rows its box shows, with OVERSCAN more on
// either side: the SVG is as tall as every row, so the box scrolls
// through them all, and a scroll draws the rows it brings into view
// (showRows). A run of thousands of agents costs the page a screenful.
const OVERSCAN = 40;
let shown = null; // the timeline on the page: its run, rows and axis

// rowWindow is the range of rows [first, last) a box scrolled to top,
// height pixels tall, shows, with the overscan.
function rowWindow(top, height, n) {
  const first = Math.max(0, Math.floor((top - AXIS_H) / ROW) - OVERSCAN);
  return [Math.min(first, n), Math.min(n, Math.ceil((top + height - AXIS_H) / ROW) + OVERSCAN)];
}

function timeline(r, rows, width) {
  const { t0, t1 } = span(r), dur = t1 - t0;
  const w = Math.max(width - LABEL_W - 8, 100), h = AXIS_H + rows.length * ROW + 4;
  const x = t => LABEL_W + Math.max(0, Math.min(w, (t - t0) / dur * w));
  const end = runStatus(r) === "live" ? t1 : (r.end || t1);
  const top = S.timelineTop && S.timelineTop.run === r.id ? S.timelineTop.top : 0;
  shown = { run: r.id, rows, x, end, win: rowWindow(top, Math.max(innerHeight * 0.7, 400), rows.length) };
  const out = [`<svg class="timeline" data-run="${esc(r.id)}" data-rows="${rows.length}" width="${width}" height="${h}" viewBox="0 0 ${width} ${h}" role="img" aria-label="timeline of ${rows.length} agents">`];
  for (const t of ticks(dur, w)) {
    const tx = x(t0 + t), anchor = tx > LABEL_W + w - 30 ? "end" : tx < LABEL_W + 10 ? "start" : "middle";
    out.push(`<line class="tick" x1="${tx.toFixed(1)}" y1="${AXIS_H - 4}" x2="${tx.toFixed(1)}" y2="${h}"/>` +
      `<text class="tick" x="${tx.toFixed(1)}" y="${AXIS_H - 8}" text-anchor="${anchor}">${fmtOffset(t)}</text>`);
  }
  out.push(`<g class="rows">${rowsSVG(shown)}</g></svg>`);
  return out.join("");
}

// rowsSVG draws the rows of a timeline's window: a label and a bar per
// agent (after a wait, when it waited).
function rowsSVG(tl) {
  const out = [];
  for (let i = tl.win[0]; i < tl.win[1]; i++) {
    const { a, depth } = tl.rows[i], x = tl.x;
    const y = AXIS_H + i * ROW, s = a.spawned || a.started || a.first, st = a.started || s;
    const e = a.ended || tl.end, x0 = x(s), x1 = Math.max(x(e), x0 + 2), xs = Math.min(x(st), x1);
    const id = esc(a.id);
    out.push(`<text class="label" data-agent="${id}" x="${4 + Math.min(depth, 12) * 12}" y="${y + 12}">${esc(head(a.id, 28))}</text>` +
      (xs > x0 + 0.5 ? `<rect class="wait" x="${x0.toFixed(1)}" y="${y + 3}" width="${(xs - x0).toFixed(1)}" height="10"/>` : "") +
      `<rect class="bar ${esc(a.status)}${a.ended ? "" : " open"}" data-agent="${id}" x="${xs.toFixed(1)}" y="${y + 3}" width="${Math.max(x1 - xs, 2).toFixed(1)}" height="10"/>`);
  }
  return out.join("");
}

// showRows draws the rows a scrolled timeline box brings into view, and
// remembers where it was scrolled to for the next drawing of the page.
function showRows(box) {
  const svg = box.querySelector("svg.timeline"), g = svg && svg.querySelector("g.rows");
  if (!g || !shown || shown.run !== svg.dataset.run) return;
  S.timelineTop = { run: shown.run, top: box.scrollTop };
  const n = shown.rows.length, top = box.scrollTop, height = box.clientHeight;
  const seenFirst = Math.max(0, Math.floor((top - AXIS_H) / ROW)), seenLast = Math.min(n, Math.ceil((top + height - AXIS_H) / ROW));
  if (seenFirst >= shown.win[0] && seenLast <= shown.win[1]) return; // still inside what is drawn
  shown.win = rowWindow(top, height, n);
  g.innerHTML = rowsSVG(shown);
}

// tip is the hover text of an agent's bar and label: who it is, where it
// ran, how it ended, what it spent. They get it when the pointer first
// reaches them (giveTitle), so a run of thousands of agents does not
// carry thousands of texts it may never show.
function tip(r, a) {
  const { t1 } = span(r), end = runStatus(r) === "live" ? t1 : (r.end || t1);
  const s = a.spawned || a.started || a.first, e = a.ended || end;
  return `${a.id} · ${a.kind || "?"} · ${nodeName(a.node)} · ${a.status} · ${fmtDuration(Math.max(e - s, 0))}` +
    ` · ${tokens(a.tokens)} tokens · ${cost(a.cost, a.unpriced)}${a.ended ? "" : " · not ended"}${a.error ? " · " + head(a.error, 200) : ""}`;
}

// giveTitle gives a timeline's bar or label its hover text (an SVG
// title) once.
function giveTitle(el) {
  const svg = el.closest("svg.timeline"), r = svg && S.runs.get(svg.dataset.run), a = r && r.agents.get(el.dataset.agent);
  if (!a || el.querySelector("title")) return;
  const title = document.createElementNS("http://www.w3.org/2000/svg", "title");
  title.textContent = tip(r, a);
  el.append(title);
}

// chart draws a run's running total of one figure (tokens or dollars)
// over its time axis.
function chart(r, key, width, label, fmt) {
  const { t0, t1 } = span(r), dur = t1 - t0, H = 120, L = 64, B = 18, w = Math.max(width - L - 8, 60);
  if (!r.sorted) { r.series.sort((p, q) => p.t - q.t); r.sorted = true; }
  const n = r.series.length, total = r.series.reduce((sum, p) => sum + p[key], 0);
  const X = t => (L + Math.max(0, Math.min(1, (t - t0) / dur)) * w).toFixed(1);
  const Y = v => ((H - B) - (total ? v / total : 0) * (H - B - 8)).toFixed(1);
  const step = Math.max(1, Math.floor(n / w)); // at most about a point per pixel
  const pts = [`${L},${H - B}`];
  let sum = 0, shown = 0; // a step at each call: the total holds until the next
  r.series.forEach((p, i) => {
    sum += p[key];
    if (i % step === 0 || i === n - 1) {
      pts.push(`${X(p.t)},${Y(shown)}`, `${X(p.t)},${Y(sum)}`);
      shown = sum;
    }
  });
  pts.push(`${X(Math.min(r.end || t1, t1))},${Y(total)}`);
  return `<svg class="chart ${key}" width="${width}" height="${H}" viewBox="0 0 ${width} ${H}" role="img" aria-label="${esc(label)}">` +
    `<text class="axis" x="${L - 4}" y="14" text-anchor="end">${esc(fmt(total))}</text>` +
    `<text class="axis" x="${L - 4}" y="${H - B}" text-anchor="end">0</text>` +
    `<line class="tick" x1="${L}" y1="${H - B}" x2="${L + w}" y2="${H - B}"/><text class="axis" x="${L}" y="${H - 4}">0s</text>` +
    `<text class="axis" x="${L + w}" y="${H - 4}" text-anchor="end">${fmtOffset(dur)}</text>` +
    `<polyline class="line" points="${pts.join(" ")}"/></svg>`;
}
