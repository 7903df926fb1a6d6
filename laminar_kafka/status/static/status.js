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

function ms(value) { return value === undefined || value === null ? "–" : value.toFixed(0) + " ms"; }

function percentile(sorted, p) {
  if (!sorted.length) return null;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

function renderTiles(s) {
  text("pipeline", s.pipeline);
  text("state", s.state);
  $("state").className = "badge " + s.state;
  text("generation", s.generation ?? "–");
  text("committed", s.counts.committed);
  text("aborted", s.counts.aborted);
  text("restarts-count", s.counts.restarts);
  const durations = s.checkpoints.filter((c) => c.outcome === "committed")
    .map((c) => c.duration_ms).sort((a, b) => a - b);
  const p50 = percentile(durations, 50), p99 = percentile(durations, 99);
  text("percentiles", p50 === null ? "–" : `${ms(p50)} / ${ms(p99)}`);
  text("lag-total", s.lag ? s.lag.total.toLocaleString() : "–");
}

function renderPlan(s) {
  const live = Object.fromEntries(s.stages.map((st) => [st.stage, st]));
  fill("plan", s.plan.stages, (st) => {
    const now = live[st.stage] || {};
    const watermark = now.tasks ? `${now.tasks_with_watermark} of ${now.tasks} tasks` : null;
    return [st.stage, st.inputs.join(", "), st.internal_outputs.concat(st.sinks).join(", "),
      now.tasks ?? st.parallelism, now.records_in, now.records_out, now.dead_letters,
      now.late_records, watermark];
  });
  const internal = s.plan.internal_topics.map((t) => `${t.topic} (stage ${t.writers.join("+")} → ${t.reader})`);
  text("internal", internal.length ? "internal topics: " + internal.join("; ") : "no internal topic");
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
    c.stages ? c.stages.map((st) => `${st.stage}: ${ms(st.duration_ms)}`).join(", ") : null,
    clock(c.at)], (c) => c.outcome);
}

function renderRestarts(s) {
  fill("restarts", s.restarts.slice().reverse(), (r) => [r.restart, r.generation, r.cause, clock(r.at),
    r.recovered_generation === null ? "recovering…" : `generation ${r.recovered_generation}`,
    r.recovery_s === null ? null : r.recovery_s.toFixed(1) + " s"]);
  $("no-restarts").hidden = s.restarts.length > 0;
}

function renderLag(s) {
  const parts = s.lag ? s.lag.partitions : [];
  fill("lag", parts, (p) => [p.topic, p.partition, p.lag.toLocaleString()]);
  $("no-lag").hidden = parts.length > 0;
}

async function refresh() {
  try {
    const response = await fetch("api/status", { cache: "no-store" });
    if (!response.ok) throw new Error(`HTTP ${response.status}`);
    const s = await response.json();
    [renderTiles, renderPlan, renderChart, renderCheckpoints, renderRestarts, renderLag]
      .forEach((render) => render(s));
    text("updated", "updated " + clock(s.now));
  } catch (error) {
    text("updated", `cannot reach the driver (${error.message}); retrying`);
  } finally {
    setTimeout(refresh, REFRESH_MS);
  }
}

refresh();
