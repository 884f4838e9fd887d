// The console's live parts: plan validation as you type, the dashboard's chart, the tracer.
// Served from the app itself (no inline script: the Content-Security-Policy forbids it).
"use strict";

function csrfToken() {
  const meta = document.querySelector('meta[name="csrf-token"]');
  return meta ? meta.content : "";
}

async function api(method, url, body) {
  const options = { method, headers: { "Accept": "application/json" }, credentials: "same-origin" };
  if (body !== undefined) {
    options.headers["Content-Type"] = "application/json";
    options.headers["X-CSRFToken"] = csrfToken();
    options.body = JSON.stringify(body);
  }
  const response = await fetch(url, options);
  return { status: response.status, body: await response.json() };
}

// ---- the plan editor ---------------------------------------------------------------------------

function setUpEditor() {
  const text = document.getElementById("plan-text");
  if (!text) return;
  const gutter = document.getElementById("plan-gutter");
  const list = document.getElementById("plan-errors");
  const valid = document.getElementById("plan-valid");
  const nameInput = document.querySelector('#plan-form input[name="name"]');

  function showErrors(errors) {
    const lines = text.value.split("\n").length;
    const bad = new Map();
    for (const e of errors) bad.set(e.line, e.message);
    gutter.replaceChildren();
    for (let i = 1; i <= lines; i++) {
      const mark = document.createElement("span");
      mark.textContent = String(i);
      mark.dataset.line = String(i);
      if (bad.has(i)) { mark.className = "error"; mark.title = bad.get(i); }
      gutter.append(mark, document.createTextNode("\n"));
    }
    list.replaceChildren();
    for (const e of errors) {
      const item = document.createElement("li");
      item.textContent = `${e.line}:${e.col}: ${e.message}`;
      item.dataset.line = String(e.line);
      item.dataset.col = String(e.col);
      item.addEventListener("click", () => select(e));
      list.append(item);
    }
  }

  function offset(line, col) {
    const rows = text.value.split("\n");
    let at = 0;
    for (let i = 0; i < line - 1 && i < rows.length; i++) at += rows[i].length + 1;
    return at + Math.max(0, col - 1);
  }

  function select(e) {
    text.focus();
    const start = offset(e.line, e.col);
    const end = e.end_line ? offset(e.end_line, e.end_col) : start + 1;
    text.setSelectionRange(start, Math.max(end, start + 1));
  }

  let timer = null;
  let asked = 0;
  async function validate() {
    const mine = ++asked;
    const result = await api("POST", text.dataset.validate, { text: text.value, name: nameInput.value || undefined });
    if (mine !== asked) return;  // a newer check is under way
    if (result.status !== 200) { valid.textContent = result.body.error || "cannot check now"; return; }
    showErrors(result.body.errors);
    valid.textContent = result.body.valid ? "The plan is valid." : "";
  }

  text.addEventListener("input", () => { clearTimeout(timer); timer = setTimeout(validate, 300); showErrors([]); });
  text.addEventListener("scroll", () => { gutter.scrollTop = text.scrollTop; });
  const fromServer = JSON.parse(list.dataset.serverErrors || "[]");
  showErrors(fromServer);
}

// ---- the dashboard's chart ---------------------------------------------------------------------

const COLOURS = ["#1f5fbf", "#067647", "#b54708", "#6941c6", "#c11574", "#0e9384", "#b42318", "#475467"];

function setUpChart() {
  const box = document.getElementById("rates");
  if (!box) return;
  const svg = document.getElementById("rates-chart");
  const legend = document.getElementById("rates-legend");
  const received = document.getElementById("received");
  const keep = 60;  // samples, one every 2 s
  const series = new Map();  // "in streamId" / "out streamId" → [events per s, ...]
  let last = null;

  function counts(report) {
    const out = new Map();
    for (const [stream, n] of Object.entries(report.received || {})) out.set(`in ${stream}`, n);
    for (const [stream, n] of Object.entries(report.emitted || {})) out.set(`out ${stream}`, n);
    return out;
  }

  function draw() {
    const width = 600, height = 160;
    const shown = [...series.entries()].slice(0, COLOURS.length);
    const top = Math.max(1, ...shown.flatMap(([, rates]) => rates));
    svg.replaceChildren();
    legend.replaceChildren();
    shown.forEach(([name, rates], i) => {
      const line = document.createElementNS("http://www.w3.org/2000/svg", "polyline");
      line.setAttribute("fill", "none");
      line.setAttribute("stroke", COLOURS[i]);
      line.setAttribute("stroke-width", "2");
      const offset = keep - rates.length;
      line.setAttribute("points", rates.map((r, j) =>
        `${((offset + j) / (keep - 1)) * width},${height - 5 - (r / top) * (height - 10)}`).join(" "));
      svg.append(line);
      const item = document.createElement("li");
      item.style.color = COLOURS[i];
      item.textContent = `${name}: ${rates.at(-1).toFixed(0)}/s`;
      legend.append(item);
    });
  }

  async function poll() {
    try {
      const result = await api("GET", box.dataset.source);
      if (result.status === 200) {
        const t = performance.now() / 1000;
        const now = counts(result.body);
        if (last) {
          const dt = Math.max(0.001, t - last.t);
          for (const [name, n] of now) {
            const rates = series.get(name) || [];
            rates.push(Math.max(0, (n - (last.counts.get(name) || 0)) / dt));
            series.set(name, rates.slice(-keep));
          }
          draw();
        }
        let total = 0;
        for (const n of Object.values(result.body.received || {})) total += n;
        received.textContent = String(total);
        last = { t, counts: now };
      }
    } finally {
      setTimeout(poll, 2000);
    }
  }
  poll();
}

// ---- the tracer --------------------------------------------------------------------------------

function setUpTracer() {
  const table = document.getElementById("trace");
  if (!table) return;
  const choice = document.getElementById("trace-stream");
  const body = table.querySelector("tbody");

  let timer = null;
  async function poll() {
    clearTimeout(timer);
    try {
      if (choice.value) {
        const url = table.dataset.source.replace("{stream}", encodeURIComponent(choice.value));
        const result = await api("GET", url + "?limit=50");
        if (result.status === 200) {
          body.replaceChildren(...result.body.map(event => {
            const row = document.createElement("tr");
            const time = document.createElement("td");
            time.textContent = new Date(event.timestamp).toISOString();
            const data = document.createElement("td");
            data.textContent = JSON.stringify(event.data);
            row.append(time, data);
            return row;
          }));
        }
      }
    } finally {
      timer = setTimeout(poll, 1000);
    }
  }
  choice.addEventListener("change", () => { body.replaceChildren(); poll(); });
  poll();
}

document.addEventListener("DOMContentLoaded", () => { setUpEditor(); setUpChart(); setUpTracer(); });
