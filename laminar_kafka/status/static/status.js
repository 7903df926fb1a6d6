// The status page: reads /api/status every second and renders it. No library, no CDN.
"use strict";

const REFRESH_MS = 1000;
const SHOWN_CHECKPOINTS = 15;

function $(id) { return document.getElementById(id); }

function text(id, value) { $(id).textContent = value; }

function cell(row, value) {
  const td = document.createElement("td");
  td.textContent = value === null || value === undefined ? "–" : String(value);
  row.appendChild(td);
  return td;
}

function fill(tableId, items, columns, rowClass) {
  const body = $(tableId).querySelector("tbody");
  const rows = items.map((item) => {
    const tr = document.createElement("tr");
    if (rowClass) tr.className = rowClass(item);
    columns(item).forEach((v) => cell(tr, v));
    return tr;
  });
  body.replaceChildren(...rows);
}

function clock(unixSeconds) {
  return unixSeconds ? new Date(unixSeconds * 1000).toLocaleTimeString() : "–";
}

function bytes(n) {
  if (n === undefined || n === null) return null;
  if (n < 1024) return `${n} B`;
  const units = ["KiB", "MiB", "GiB", "TiB"];
  let i = -1;
  do { n /= 1024; i++; } while (n >= 1024 && i < units.length - 1);
  return `${n.toFixed(n < 10 ? 1 : 0)} ${units[i]}`;
}

function ms(value) { return value === undefined || value === null ? "–" : value.toFixed(0) + " ms"; }

function rate(value) { return value === undefined || value === null ? "–" : Math.round(value).toLocaleString() + "/s"; }

function watermarkText(now) {
  if (!now.tasks) return null;
  const time = now.watermark_ms ? new Date(now.watermark_ms).toISOString().replace("T", " ").slice(0, 19) : null;
  return time || `${now.tasks_with_watermark} of ${now.tasks} tasks`;
}

function renderTiles(s) {
  text("pipeline", s.pipeline);
  text("state", s.state);
  $("state").className = "badge " + s.state;
  text("generation", s.generation ?? "–");
  text("committed", s.counts.committed);
  text("aborted", s.counts.aborted);
  text("restarts-count", s.counts.restarts);
  const p = s.checkpoint_ms;
  text("percentiles", p.p50 === null ? "–" : `${ms(p.p50)} / ${ms(p.p99)}`);
  text("lag-total", s.lag ? s.lag.total.toLocaleString() : "–");
}

function renderPlan(s) {
  const live = Object.fromEntries(s.stages.map((st) => [st.stage, st]));
  fill("plan", s.plan.stages, (st) => {
    const now = live[st.stage] || {};
    return [st.stage, st.inputs.join(", "), st.internal_outputs.concat(st.sinks).join(", "),
      now.tasks ?? st.parallelism, now.records_in, now.records_out, rate(now.records_in_per_s),
      rate(now.records_out_per_s), now.dead_letters, now.late_records, watermarkText(now)];
  });
  const internal = s.plan.internal_topics.map((t) => `${t.topic} (stage ${t.writers.join("+")} → ${t.reader})`);
  text("internal", internal.length ? "internal topics: " + internal.join("; ") : "no internal topic");
}

// The plan as a graph: topics (sources, internal, sinks) and stages in columns by
// depth, edges from what a stage reads to what it writes.
function planLayout(plan) {
  const internal = new Set(plan.internal_topics.map((t) => t.topic));
  const nodes = new Map(), edges = [];
  const node = (id, kind, label) => {
    if (!nodes.has(id)) nodes.set(id, { id, kind, label, level: 0 });
    return nodes.get(id);
  };
  plan.sources.forEach((t) => node("t:" + t, "source", t));
  plan.stages.forEach((st) => {
    node("s:" + st.stage, "stage", "stage " + st.stage);
    st.inputs.forEach((t) => edges.push([node("t:" + t, internal.has(t) ? "internal" : "source", t), nodes.get("s:" + st.stage)]));
    st.internal_outputs.forEach((t) => edges.push([nodes.get("s:" + st.stage), node("t:" + t, "internal", t)]));
    st.sinks.forEach((t) => edges.push([nodes.get("s:" + st.stage), node("t:" + t, "sink", t)]));
  });
  for (let pass = 0; pass < nodes.size; pass++) {
    edges.forEach(([from, to]) => { to.level = Math.max(to.level, from.level + 1); });
  }
  const columns = [];
  nodes.forEach((n) => { (columns[n.level] = columns[n.level] || []).push(n); });
  columns.forEach((column) => column.forEach((n, row) => { n.row = row; }));
  return { nodes: [...nodes.values()], edges, columns: columns.length, rows: Math.max(1, ...columns.map((c) => (c || []).length)) };
}

function svgElement(kind, attributes, content) {
  const element = document.createElementNS("http://www.w3.org/2000/svg", kind);
  Object.entries(attributes).forEach(([k, v]) => element.setAttribute(k, String(v)));
  if (content !== undefined) element.textContent = content;
  return element;
}

function renderGraph(s) {
  const live = Object.fromEntries(s.stages.map((st) => [st.stage, st]));
  const layout = planLayout(s.plan);
  const W = 210, H = 74, boxW = 170, boxH = 58;
  const svg = $("graph");
  svg.setAttribute("width", layout.columns * W);
  svg.setAttribute("height", layout.rows * H + 8);
  const at = (n) => ({ x: n.level * W + 4, y: n.row * H + 4 });
  const parts = layout.edges.map(([from, to]) => {
    const a = at(from), b = at(to);
    return svgElement("path", { class: "edge", d: `M${a.x + boxW},${a.y + boxH / 2} C${a.x + boxW + 20},${a.y + boxH / 2} ${b.x - 20},${b.y + boxH / 2} ${b.x},${b.y + boxH / 2}` });
  });
  layout.nodes.forEach((n) => {
    const { x, y } = at(n);
    const group = svgElement("g", { class: "node " + n.kind, "data-node": n.id });
    group.appendChild(svgElement("title", {}, n.label));
    group.appendChild(svgElement("rect", { x, y, width: boxW, height: boxH, rx: 6 }));
    let lines = [n.label.length > 26 ? n.label.slice(0, 25) + "…" : n.label, n.kind];
    if (n.kind === "stage") {
      const stage = s.plan.stages.find((st) => "s:" + st.stage === n.id);
      const now = live[stage.stage] || {};
      lines = [`${n.label} · ${now.tasks ?? stage.parallelism} tasks${stage.stateful ? " · state" : ""}`,
        `in ${rate(now.records_in_per_s)} · out ${rate(now.records_out_per_s)}`,
        now.watermark_ms ? "watermark " + watermarkText(now).slice(11) : "no watermark"];
    }
    lines.forEach((line, i) => group.appendChild(svgElement("text", { x: x + 8, y: y + 17 + i * 16, class: i ? "sub" : "" }, line)));
    parts.push(group);
  });
  svg.replaceChildren(...parts);
}

function renderChart(s) {
  const svg = $("durations");
  const width = svg.clientWidth || 800, height = 90;
  svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
  const items = s.checkpoints;
  const top = Math.max(1, ...items.map((c) => c.duration_ms || 0));
  const step = width / Math.max(items.length, 60);
  const ns = "http://www.w3.org/2000/svg";
  const bars = items.map((c, i) => {
    const bar = document.createElementNS(ns, "rect");
    const h = c.outcome === "aborted" ? height : Math.max(2, (c.duration_ms / top) * (height - 4));
    bar.setAttribute("x", String(i * step));
    bar.setAttribute("y", String(height - h));
    bar.setAttribute("width", String(Math.max(1, step - 1)));
    bar.setAttribute("height", String(h));
    bar.setAttribute("fill", c.outcome === "aborted" ? "#ef4444" : "#3b82f6");
    const title = document.createElementNS(ns, "title");
    title.textContent = `checkpoint ${c.id}: ${c.outcome}` + (c.duration_ms ? ` in ${ms(c.duration_ms)}` : "");
    bar.appendChild(title);
    return bar;
  });
  svg.replaceChildren(...bars);
}

function renderCheckpoints(s) {
  const newest = s.checkpoints.slice(-SHOWN_CHECKPOINTS).reverse();
  fill("checkpoints", newest, (c) => [c.id, c.generation,
    c.outcome === "aborted" ? `aborted: ${c.reason}` : "committed" + (c.unaligned_tasks.length ? " (unaligned)" : ""),
    ms(c.duration_ms),
    c.stages ? c.stages.map((st) => `${st.stage}: ${ms(st.duration_ms)}` +
      (st.alignment_ms ? ` (aligned in ${ms(st.alignment_ms)})` : "")).join(", ") : null,
    c.outcome === "committed" ? bytes(c.snapshot_bytes) : null, clock(c.at)], (c) => c.outcome);
}

function renderRestarts(s) {
  fill("restarts", s.restarts.slice().reverse(), (r) => [r.restart, r.generation, r.cause, clock(r.at),
    r.recovered_generation === null ? "recovering…" : `generation ${r.recovered_generation}`,
    r.recovery_s === null ? null : r.recovery_s.toFixed(1) + " s"]);
  $("no-restarts").hidden = s.restarts.length > 0;
}

// Dead letters per stage and kind of reason, most first, beside the topic they went to.
// Each count links to the topic's newest records of that kind ("other" lumps kinds
// together: it links to all of them), the topic's name to all of them.
function renderDeadLetters(s) {
  text("dead-letter-topic", s.plan.dead_letter_topic || "–");
  const rows = s.stages.flatMap((st) => Object.entries(st.dead_letter_reasons || {})
    .map(([reason, count]) => ({ stage: st.stage, reason, count })));
  rows.sort((a, b) => a.stage - b.stage || b.count - a.count);
  fill("dead-letters", rows, (r) => [r.stage, r.reason, null]);
  $("dead-letters").querySelectorAll("tbody tr").forEach((tr, i) => {
    const a = document.createElement("a");
    a.href = "#dead-letter-records";
    a.className = "dead-letter-link";
    a.textContent = rows[i].count.toLocaleString();
    if (rows[i].reason !== "other") a.dataset.reason = rows[i].reason;
    tr.cells[2].replaceChildren(a);
  });
  $("no-dead-letters").hidden = rows.length > 0;
}

// The dead-letter topic's newest records, read from the broker when a link asks
// (each ask is a read of the topic, so not every second), shown as text only.
const DEAD_LETTER_LIMIT = 100;
let deadLetterAsks = 0, deadLetterReason = null;

function preview(p) {
  if (!p) return null;
  return p.truncated ? `${p.text}… (${p.bytes.toLocaleString()} bytes)` : p.text;
}

async function showDeadLetters(reason) {
  const ask = ++deadLetterAsks;
  deadLetterReason = reason;
  $("dead-letter-records").hidden = false;
  text("dead-letter-filter", reason ? `reason ${reason}` : "all reasons");
  $("dead-letter-all").hidden = !reason;
  text("dead-letter-note", "reading the topic…");
  const query = new URLSearchParams({ limit: DEAD_LETTER_LIMIT });
  if (reason) query.set("reason", reason);
  try {
    const response = await fetch("api/dead-letters?" + query, { cache: "no-store" });
    const body = await response.json();
    if (!response.ok) throw new Error(body.error || `HTTP ${response.status}`);
    if (ask !== deadLetterAsks) return;  // a newer ask answers instead
    text("dead-letter-records-topic", body.topic);
    fill("dead-letter-list", body.records, (r) => [r.partition, r.offset,
      r.timestamp_ms ? clock(r.timestamp_ms / 1000) : null, r.reason ?? r.error,
      r.source ? `${r.source.topic}/${r.source.partition} @ ${r.source.offset}` : null,
      preview(r.value)]);
    text("dead-letter-note", body.note ||
      `the newest ${body.records.length} (at most ${body.limit}), newest first`);
  } catch (error) {
    if (ask === deadLetterAsks) text("dead-letter-note", `cannot read the dead letters (${error.message})`);
  }
}

document.addEventListener("click", (event) => {
  const link = event.target.closest("a.dead-letter-link");
  if (link) showDeadLetters(link.dataset.reason || null);
});
$("dead-letter-reload").addEventListener("click", () => showDeadLetters(deadLetterReason));

// The newest lost generation's cause, and its traceback collapsed: a <details> that
// stays as the reader left it (open or not) across refreshes.
function renderLastError(s) {
  const error = s.last_error;
  $("last-error").hidden = !error;
  if (!error) return;
  text("last-error-cause", error.cause);
  text("last-error-when", `(generation ${error.generation}, ${clock(error.at)})`);
  $("last-error-traceback").hidden = !error.traceback;
  const pre = $("last-error-traceback").querySelector("pre");
  if (pre.textContent !== (error.traceback || "")) pre.textContent = error.traceback || "";
}

// A partition's lag over the last minutes as a line: time across (the readings'
// own times), lag up from 0 to the highest reading; a gap where it was not read.
function sparkline(history, times) {
  const W = 160, H = 26, span = Math.max(1, times[times.length - 1] - times[0]);
  const top = Math.max(1, ...history.filter((v) => v !== null));
  const svg = svgElement("svg", { class: "sparkline", width: W, height: H, viewBox: `0 0 ${W} ${H}` });
  let points = [];
  const flush = () => {
    if (points.length) svg.appendChild(svgElement("polyline", { points: points.join(" ") }));
    points = [];
  };
  history.forEach((v, i) => {
    if (v === null) return flush();
    const x = times.length > 1 ? ((times[i] - times[0]) / span) * (W - 4) + 2 : W - 2;
    points.push(`${x.toFixed(1)},${(H - 2 - (v / top) * (H - 4)).toFixed(1)}`);
  });
  flush();
  const shown = history.filter((v) => v !== null);
  svg.appendChild(svgElement("title", {}, `${shown.length} readings over ${Math.round(span)} s; highest ${top.toLocaleString()}`));
  return svg;
}

function renderLag(s) {
  const parts = s.lag ? s.lag.partitions : [];
  fill("lag", parts, (p) => [p.internal ? `${p.topic} (internal)` : p.topic, p.partition, p.lag.toLocaleString()]);
  $("lag").querySelectorAll("tbody tr").forEach((tr, i) => {
    tr.appendChild(document.createElement("td")).appendChild(sparkline(parts[i].history, s.lag.history_at));
  });
  $("no-lag").hidden = parts.length > 0;
}

async function refresh() {
  try {
    const response = await fetch("api/status", { cache: "no-store" });
    if (!response.ok) throw new Error(`HTTP ${response.status}`);
    const s = await response.json();
    [renderTiles, renderGraph, renderPlan, renderChart, renderCheckpoints, renderRestarts,
      renderLastError, renderDeadLetters, renderLag]
      .forEach((render) => render(s));
    text("updated", "updated " + clock(s.now));
  } catch (error) {
    text("updated", `cannot reach the driver (${error.message}); retrying`);
  } finally {
    setTimeout(refresh, REFRESH_MS);
  }
}

refresh();
