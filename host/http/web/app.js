// dmhost's status page (docs/status-page.md): polls POST /control (query-status, operate-source
// show) every 1.5 s, and each task's lag history kept by the daemon (GET /api/v1/dmhost/tasks/NAME/lag:
// all of it at first, then what came since); pause/resume and start/stop relay buttons.
"use strict";
const POLL_MS = 1500;
const HISTORY_MS = 10 * 60 * 1000; // what the daemon keeps
const COLORS = ["#3b82f6", "#e4572e", "#17a35a", "#a855f7", "#f59e0b", "#0ea5e9"];
const lagHistory = new Map(); // "task/source" -> [[unix ms, seconds], ...], the daemon's samples
const lagSince = new Map();   // task -> the newest sample's time read (the next ?since=)
let clockSkew = 0;            // the daemon's clock minus the browser's (the chart's "now")
window.dmhLag = lagHistory;   // read by the browser test (tests/web)

function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") e.className = v;
    else if (k === "style") e.style.cssText = v; // CSSOM: the page's CSP refuses style attributes
    else if (k.startsWith("on")) e[k] = v; else e.setAttribute(k, v);
  }
  for (const k of kids) e.append(k instanceof Node ? k : document.createTextNode(String(k)));
  return e;
}

async function control(cmd, args) {
  const r = await fetch("/control", {
    method: "POST",
    // the daemon takes only JSON writes (a page of another origin cannot send them: docs/security.md)
    headers: {"Content-Type": "application/json"},
    body: JSON.stringify(args ? {cmd, args} : {cmd}),
  });
  const a = await r.json();
  return a;
}

function fault(msg) {
  const f = document.getElementById("fault");
  f.hidden = !msg;
  f.textContent = msg || "";
}

function errorText(a) {
  if (a.error) return a.error.Message || a.msg || JSON.stringify(a.error);
  for (const s of a.sources || []) if (s.error) return s.error.Message || s.msg;
  return a.msg || "refused";
}

function fmtEta(s) {
  if (!(s >= 0)) return "--:--";
  s = Math.round(s);
  const h = Math.floor(s / 3600), m = Math.floor(s / 60) % 60, x = s % 60;
  return `${h}:${String(m).padStart(2, "0")}:${String(x).padStart(2, "0")}`;
}

function progressCell(p) {
  if (!p) return el("span", {class: "muted"}, "no progress reported");
  const pct = p.total > 0 ? Math.max(0, Math.min(100, p.percent)) : 0;
  const bar = el("span", {class: "bar", "data-percent": pct.toFixed(1), "data-done": p.done},
                 el("div", {style: `width:${pct}%`}));
  const text = p.total > 0
    ? `${pct.toFixed(1)}%  ${p.done}/${p.total} ${p.unit}  ${Math.round(p.rate)} ${p.unit}/s  ETA ${fmtEta(p.eta)}`
    : `${p.done} ${p.unit}  ${Math.round(p.rate)} ${p.unit}/s`;
  return el("span", {}, bar, el("span", {class: "progress-text"}, text));
}

// A button's command (pause-task {name}, start-relay {source}, ...); a refusal in the fault line.
async function act(cmd, args, button) {
  const what = `${cmd} ${args.name || args.source}`;
  button.disabled = true;
  try {
    const a = await control(cmd, args);
    fault(a.result ? "" : `${what}: ${errorText(a)}`);
  } catch (e) {
    fault(`${what}: ${e}`);
  }
  button.disabled = false;
  refresh();
}

function renderTask(t, detail, errors) {
  const stage = t.taskStatus.startsWith("Error") ? "Error" : t.taskStatus;
  const box = el("div", {class: "task", "data-task": t.taskName},
    el("h3", {}, t.taskName,
       el("span", {class: `stage ${stage}`, "data-role": "task-stage"}, t.taskStatus),
       el("button", {"data-role": "pause", onclick: e => act("pause-task", {name: t.taskName}, e.target)}, "Pause"),
       el("button", {"data-role": "resume", onclick: e => act("resume-task", {name: t.taskName}, e.target)}, "Resume")));
  const table = el("table", {}, el("tr", {}, ...["source", "stage", "unit", "progress"].map(h => el("th", {}, h))));
  for (const src of (detail && detail.sources) || []) {
    for (const st of src.subTaskStatus || []) {
      table.append(el("tr", {"data-source": st.source},
        el("td", {}, st.source), el("td", {}, el("span", {class: `stage ${st.stage}`, "data-role": "stage"}, st.stage)),
        el("td", {}, st.unit || ""), el("td", {}, progressCell(st.progress))));
      for (const e of (st.result && st.result.errors) || []) errors.push({task: t.taskName, source: st.source, e});
    }
  }
  box.append(table);
  return box;
}

function renderSources(show) {
  const body = document.querySelector("#sources tbody");
  body.replaceChildren();
  for (const s of (show && show.sources) || []) {
    const rs = s.relayStatus; // the relay subtask, once started (it stays, Stopped, after stop-relay)
    const stage = rs ? rs.stage || "" : s.enableRelay ? s.relayExpected || "New" : "off";
    const src = s.source || "";
    body.append(el("tr", {"data-source": src}, el("td", {}, src), el("td", {}, s.worker || ""),
      el("td", {}, el("span", {class: `stage ${stage}`, "data-role": "relay-stage"}, stage),
        " ", el("span", {class: "muted"}, (rs && rs.relayBinlog) || ""), " ",
        el("button", {"data-role": "start-relay", onclick: e => act("start-relay", {source: src}, e.target)}, "Start relay"),
        el("button", {"data-role": "stop-relay", onclick: e => act("stop-relay", {source: src}, e.target)}, "Stop relay")),
      el("td", {}, s.result === false ? errorText(s) : "bound")));
  }
  if (!body.children.length) body.append(el("tr", {}, el("td", {colspan: 4, class: "muted"}, "no source")));
}

function renderErrors(errors) {
  const box = document.getElementById("errors");
  box.replaceChildren();
  for (const {task, source, e} of errors) {
    box.append(el("div", {class: "err"},
      el("b", {}, `${task} / ${source}: [code=${e.ErrCode}:class=${e.ErrClass}] `), e.Message || "",
      el("div", {class: "workaround"}, "Workaround: ", e.Workaround || "none given"),
      e.RawCause ? el("div", {class: "muted"}, e.RawCause) : ""));
  }
  if (!errors.length) box.append(el("p", {class: "muted"}, "none"));
}

// The daemon's lag samples of each task (GET /api/v1/dmhost/tasks/NAME/lag): the whole history the
// first time a task is seen, then those after the newest read; a task gone takes its lines.
async function fetchLag(tasks) {
  const names = new Set(tasks.map(t => t.taskName));
  for (const name of [...lagSince.keys()]) if (!names.has(name)) lagSince.delete(name);
  for (const k of [...lagHistory.keys()]) if (!names.has(k.slice(0, k.lastIndexOf("/")))) lagHistory.delete(k);
  await Promise.all([...names].map(async name => {
    const since = lagSince.get(name);
    const r = await fetch(`/api/v1/dmhost/tasks/${encodeURIComponent(name)}/lag${since ? `?since=${since}` : ""}`);
    const a = await r.json();
    if (!a.result) return; // stopped meanwhile: gone at the next poll
    if (a.nowMs) clockSkew = a.nowMs - Date.now();
    let newest = since || 0;
    for (const s of a.sources || []) {
      const key = `${name}/${s.source}`;
      if (!lagHistory.has(key) && s.samples.length) lagHistory.set(key, []);
      for (const p of s.samples) {
        lagHistory.get(key).push(p);
        newest = Math.max(newest, p[0]);
      }
    }
    if (newest) lagSince.set(name, newest);
  }));
  const now = Date.now() + clockSkew;
  for (const [k, h] of lagHistory) {
    while (h.length && h[0][0] < now - HISTORY_MS) h.shift();
    if (!h.length) lagHistory.delete(k);
  }
}

function drawLag(now) {
  const c = document.getElementById("lag"), g = c.getContext("2d");
  const W = c.width, H = c.height, L = 48, B = 22, T = 8, R = 8;
  g.clearRect(0, 0, W, H);
  let max = 1, oldest = now;
  for (const h of lagHistory.values()) for (const [t, v] of h) max = Math.max(max, v), oldest = Math.min(oldest, t);
  // the time axis spans the history held (1 to 10 minutes): a young task's line is not a sliver
  const span = Math.min(HISTORY_MS, Math.max(60 * 1000, now - oldest));
  max = Math.ceil(max * 1.1);
  g.strokeStyle = "#d8dce3"; g.fillStyle = "#7a8394"; g.font = "11px sans-serif";
  for (let i = 0; i <= 4; i++) {
    const y = T + (H - T - B) * i / 4;
    g.beginPath(); g.moveTo(L, y); g.lineTo(W - R, y); g.stroke();
    g.fillText(`${Math.round(max * (4 - i) / 4)} s`, 4, y + 4);
  }
  for (let i = 0; i <= 5; i++) {
    const s = Math.round(span * i / 5 / 1000);
    g.fillText(i ? (s % 60 ? `-${s} s` : `-${s / 60} min`) : "now", W - R - 30 - (W - L - R - 30) * i / 5, H - 6);
  }
  const x = t => L + (W - L - R) * (1 - (now - t) / span);
  const y = v => T + (H - T - B) * (1 - v / max);
  const legend = document.getElementById("lag-legend");
  legend.replaceChildren();
  let i = 0, points = 0;
  for (const [k, h] of lagHistory) {
    const color = COLORS[i++ % COLORS.length];
    g.strokeStyle = color; g.lineWidth = 2; g.beginPath();
    h.forEach(([t, v], j) => (j ? g.lineTo(x(t), y(v)) : g.moveTo(x(t), y(v))));
    if (h.length === 1) g.lineTo(x(h[0][0]) - 2, y(h[0][1]));
    g.stroke(); g.lineWidth = 1;
    points += h.length;
    legend.append(el("span", {style: `color:${color}`}, `\u25A0 ${k}: ${h[h.length - 1][1]} s`));
  }
  c.dataset.points = points;
  if (!lagHistory.size) legend.append(el("span", {class: "muted"}, "no sync has reported a lag yet"));
}

let busy = false;
async function refresh() {
  if (busy) return;
  busy = true;
  try {
    const [all, show] = await Promise.all([control("query-status"), control("operate-source", {op: "show"})]);
    if (!all.result) throw new Error(errorText(all));
    const w = all.worker || {};
    document.getElementById("worker").textContent = `${w.name || ""} ${w.stage || ""} ${w.source || ""}`;
    renderSources(show);
    const details = await Promise.all((all.tasks || []).map(t => control("query-status", {name: t.taskName})));
    const errors = [], box = document.getElementById("tasks");
    box.replaceChildren(...(all.tasks || []).map((t, i) => renderTask(t, details[i], errors)));
    if (!box.children.length) box.append(el("p", {class: "muted"}, "no task"));
    renderErrors(errors);
    await fetchLag(all.tasks || []);
    drawLag(Date.now() + clockSkew);
    document.getElementById("updated").textContent = `updated ${new Date().toLocaleTimeString()}`;
    document.body.dataset.polls = String(Number(document.body.dataset.polls || 0) + 1);
  } catch (e) {
    fault(`cannot read the daemon's status: ${e.message || e}`);
  } finally {
    busy = false;
  }
}
refresh();
setInterval(refresh, POLL_MS);
