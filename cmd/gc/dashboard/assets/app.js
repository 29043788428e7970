// The gc dashboard web app: the city grid and the session page, fed by the server's JSON API
// and its server-sent event stream (docs/dashboard.md). No build step; xterm.js is the
// global `Terminal` from /vendor/xterm.js, loaded when a session page first opens.

const params = new URLSearchParams(location.search);
if (params.get("token")) {
  sessionStorage.setItem("gc-token", params.get("token"));
  // Keep the token out of the address bar, history and screenshots.
  history.replaceState(null, "", `/${location.hash}`);
}
const token = sessionStorage.getItem("gc-token") ?? "";
const $ = (sel, root = document) => root.querySelector(sel);
const esc = (s) =>
  String(s ?? "").replace(
    /[&<>"']/g,
    (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c],
  );

/** A drifted value as shown: quoted, but a start-only field's preview is already quoted. */
const shownValue = (f, v) => (f.effect === "next-start" ? v : JSON.stringify(v));

let status;
let source;
let view; // { kind: "grid" } | { kind: "session", name, term, ... }
const cards = new Map(); // name -> { el, html }
/** States whose session should have a runtime: without one, the card shows it as gone. */
const LIVE = new Set(["starting", "running", "draining", "waiting-for-input"]);

function ago(iso) {
  if (!iso) return "-";
  const s = Math.max(0, Math.round((Date.now() - Date.parse(iso)) / 1000));
  return s < 60 ? `${s}s ago` : s < 3600 ? `${Math.round(s / 60)}m ago` : `${Math.round(s / 3600)}h ago`;
}

async function api(path, body) {
  const init = { headers: { "X-GC-Token": token } };
  if (body !== undefined) {
    init.method = "POST";
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const res = await fetch(path, init);
  const json = await res.json().catch(() => ({}));
  if (!res.ok) throw new Error(json.error?.message ?? `HTTP ${res.status}`);
  return json;
}

function connect(session) {
  source?.close();
  const q = new URLSearchParams({ token });
  if (session) q.set("session", session);
  source = new EventSource(`/api/events?${q}`);
  const live = $("#live");
  source.onopen = () => {
    live.textContent = "live";
    live.className = "pill ok";
  };
  source.onerror = () => {
    live.textContent = "reconnecting…";
    live.className = "pill bad";
  };
  source.addEventListener("status", (e) => onStatus(JSON.parse(e.data)));
  source.addEventListener("screen", (e) => onScreen(JSON.parse(e.data)));
}

function readOnly() {
  return !status?.controller.running;
}

function onStatus(s) {
  window.gcFirstStatusAt ??= performance.now();
  status = s;
  $("#city").textContent = `city ${s.city}`;
  const ctl = $("#ctl");
  ctl.textContent = s.controller.running
    ? `controller running (pid ${s.controller.pid}, build ${s.controller.build ?? "unknown"})`
    : "controller down";
  ctl.className = `pill ${s.controller.running ? "ok" : "bad"}`;
  const running = s.sessions.filter((x) => x.running).length;
  $("#counts").textContent = `${s.sessions.length} sessions · ${running} running`;
  const banner = $("#banner");
  const problems = [];
  if (!s.controller.running)
    problems.push("The controller is not running: this view is read-only (gc start runs it).");
  // The controller keeps running the code it started with: after an upgrade, say it is not this gc's.
  if (s.controller.buildMismatch)
    problems.push(
      `The controller runs ${s.controller.build === null ? "an older build (unknown)" : `build ${s.controller.build}`}, ` +
        `this gc is build ${s.build}: restart the controller to run this build (docs/operating.md "Upgrading gc under a running city").`,
    );
  // The mass-stop guard refused the city file: the same sentence as gc status and controller.log.
  if (s.massStop) problems.push(s.massStop.text);
  if (s.configError) problems.push(`Config error (last good config kept): ${s.configError.split("\n")[0]}`);
  for (const o of s.observeErrors) problems.push(`Cannot observe provider ${o.provider}: ${o.error}`);
  banner.hidden = problems.length === 0;
  banner.textContent = problems.join(" · ");
  if (view?.kind === "grid") renderGrid();
  if (view?.kind === "session") renderSession();
}

/**
 * The RUNNING column of gc status: `yes`/`no`. A state that should have a runtime but none
 * (killed or crashed, until the controller's next pass records it) says why the two differ.
 */
function runningText(x) {
  // null: its provider could not be observed (the banner says why), not a dead process.
  if (x.running === null) return "unknown — provider not observed";
  return x.running ? "yes" : LIVE.has(x.state) ? "no — process gone" : "no";
}

/** An age in its largest unit, as gc status's WORK column shows it: `5s`, `2m`, `3h`, `2d`. */
function age(iso) {
  const s = Math.max(0, Math.round((Date.now() - Date.parse(iso)) / 1000));
  return s < 60
    ? `${s}s`
    : s < 3600
      ? `${Math.floor(s / 60)}m`
      : s < 86400
        ? `${Math.floor(s / 3600)}h`
        : `${Math.floor(s / 86400)}d`;
}

/** gc status's WORK column: what the agent is doing and for how long; `-` when not running. */
function workText(x) {
  return x.running === true && x.work ? `${x.work.state} ${age(x.work.since)}` : "-";
}

/** The work state a card shows (its colour and the "needs you" order), `none` when not running. */
function workState(x) {
  return x.running === true && x.work ? x.work.state : "none";
}

/** "Needs you" order: a question or an error first, then working, idle, the rest; else city order. */
const NEEDS_RANK = { "needs-input": 0, error: 1, working: 2, idle: 3, unknown: 4, none: 5 };
function ordered(sessions) {
  if ($("#sort")?.value !== "needs") return sessions;
  return sessions
    .map((x, i) => [x, i])
    .sort(([a, i], [b, j]) => NEEDS_RANK[workState(a)] - NEEDS_RANK[workState(b)] || i - j)
    .map(([x]) => x);
}

function cardHtml(x) {
  const q = x.interaction
    ? `<div class="question">❓ ${esc(x.interaction.question || x.interaction.kind)}</div>`
    : x.state !== "running" && x.reason
      ? `<div class="question">${esc(x.reason)}</div>`
      : "";
  return `<div class="title">${esc(x.name)}</div><dl>
<dt>agent</dt><dd>${esc(x.agent)}</dd>
<dt>backend</dt><dd>${esc(x.backend ?? x.provider)}</dd>
<dt>state</dt><dd class="state">${esc(x.state)}</dd>
<dt>work</dt><dd class="work">${esc(workText(x))}</dd>
<dt>running</dt><dd class="running">${esc(runningText(x))}</dd>
<dt>drift</dt><dd>${esc(x.drift)}</dd>
<dt>restarts</dt><dd>${esc(x.restarts)}</dd>
<dt>activity</dt><dd>${esc(ago(x.lastActivity))}</dd>
<dt>attached</dt><dd>${x.attached ? "yes" : "no"}</dd></dl>${q}${
    workState(x) === "error" ? `<div class="work-error">⚠ ${esc(x.work.message ?? "error")}</div>` : ""
  }${x.running === true && x.screen?.length ? `<pre class="screen">${esc(x.screen.join("\n"))}</pre>` : ""}`;
}

function renderGrid() {
  let grid = $("#grid");
  if (!grid) {
    $("#view").innerHTML = '<div id="grid"></div>';
    grid = $("#grid");
    cards.clear();
  }
  if (!status) return;
  const sessions = ordered(status.sessions);
  if (cards.size === 0) {
    // The first draw: every card in one parse, then updated in place like any later draw.
    const htmls = sessions.map(cardHtml);
    grid.innerHTML = sessions
      .map(
        (x, i) => `<a href="#/s/${encodeURIComponent(x.name)}" data-session="${esc(x.name)}">${htmls[i]}</a>`,
      )
      .join("");
    sessions.forEach((x, i) => {
      cards.set(x.name, { el: grid.children[i], html: htmls[i] });
    });
  }
  const seen = new Set();
  let prev = null;
  for (const x of sessions) {
    seen.add(x.name);
    let c = cards.get(x.name);
    if (!c) {
      const el = document.createElement("a");
      el.href = `#/s/${encodeURIComponent(x.name)}`;
      el.dataset.session = x.name;
      c = { el, html: "" };
      cards.set(x.name, c);
    }
    const html = cardHtml(x);
    if (c.html !== html) {
      c.el.innerHTML = html;
      c.html = html;
    }
    c.el.className = `card s-${x.running !== false || !LIVE.has(x.state) ? x.state : "crashed"}`;
    c.el.dataset.state = x.state;
    c.el.dataset.work = workState(x);
    c.el.dataset.running = String(x.running);
    const want = prev ? prev.nextSibling : grid.firstChild;
    if (want !== c.el) grid.insertBefore(c.el, want);
    prev = c.el;
  }
  for (const [name, c] of cards) {
    if (!seen.has(name)) {
      c.el.remove();
      cards.delete(name);
    }
  }
  // Measured by the browser test and the bench: when the first full grid was in the DOM.
  if (!window.gcGridRenderedAt && status.sessions.length > 0) window.gcGridRenderedAt = performance.now();
}

function sessionShell(name) {
  $("#view").innerHTML = `<div class="detail" data-session="${esc(name)}">
  <h2>${esc(name)} <span class="state" id="state"></span></h2>
  <div class="meta" id="meta"></div>
  <section id="interaction" hidden></section>
  <form class="actions" id="nudge">
    <input type="text" name="text" placeholder="nudge text" autocomplete="off">
    <select name="mode"><option value="now">now</option><option value="idle" selected>when idle</option><option value="queue">queue</option></select>
    <button type="submit">Nudge</button>
    <button type="button" data-act="restart">Restart</button>
    <button type="button" data-act="reset">Reset quarantine</button>
    <button type="button" data-act="stop">Stop</button>
  </form>
  <div id="msg"></div>
  <div id="term"></div>
  <details open><summary>Drift (old → new)</summary><div id="drift"></div></details>
  <details open><summary>Recent events</summary><ol id="events"></ol></details>
  <details><summary>Peek history</summary><pre id="peek"></pre></details>
</div>`;
  $("#nudge").addEventListener("submit", (e) => {
    e.preventDefault();
    const f = e.target;
    void act("nudge", { text: f.text.value, mode: f.mode.value }).then((ok) => {
      if (ok) f.text.value = "";
    });
  });
  for (const b of document.querySelectorAll("[data-act]"))
    b.addEventListener("click", () => act(b.dataset.act, {}));
}

let xterm;
/** Loads xterm.js and its CSS once, when a session page first needs them (the grid does not). */
function loadXterm() {
  xterm ??= new Promise((resolve, reject) => {
    const css = document.createElement("link");
    css.rel = "stylesheet";
    css.href = "/vendor/xterm.css";
    document.head.append(css);
    const js = document.createElement("script");
    js.src = "/vendor/xterm.js";
    js.onload = resolve;
    js.onerror = () => reject(new Error("could not load xterm.js"));
    document.head.append(js);
  });
  return xterm;
}

/** The terminal before the first frame; a stream frame's cols×rows (the pty's size) replaces it. */
function openTerm() {
  const term = new Terminal({ cols: 120, rows: 30, scrollback: 2000, disableStdin: true, convertEol: false });
  term.open($("#term"));
  window.gcTerm = term;
  return term;
}

async function act(action, body) {
  const msg = $("#msg");
  msg.className = "";
  msg.textContent = `${action}…`;
  try {
    const r = await api(`/api/sessions/${encodeURIComponent(view.name)}/${action}`, body);
    msg.className = "ok";
    msg.textContent = `${action}: ${JSON.stringify(r)}`;
    void loadDetail();
    return true;
  } catch (e) {
    msg.className = "bad";
    msg.textContent = `${action} failed: ${e.message}`;
    return false;
  }
}

function renderSession() {
  const x = status?.sessions.find((s) => s.name === view.name);
  const ro = readOnly();
  for (const el of document.querySelectorAll(".detail button, .detail input, .detail select"))
    el.disabled = ro;
  if (!x) {
    // Gone from the city (the snapshot lists every declared, recorded or running session):
    // nothing on this page applies to it any more, so no stale line and no live buttons.
    $("#state").textContent = "(not in the city)";
    $("#state").dataset.state = "gone";
    $("#meta").textContent = "gone: not declared in the city file, no record, not running";
    for (const el of document.querySelectorAll(".detail button, .detail input, .detail select"))
      el.disabled = true;
    const box = $("#interaction");
    box.hidden = true;
    box.dataset.key = "";
    box.innerHTML = "";
    // Its drift compared a record that is gone; events and peek history stay (they happened).
    detailSeq++;
    $("#drift").innerHTML = "<p>(no such session)</p>";
    view.lastStatus = undefined;
    return;
  }
  $("#state").textContent = x.state;
  $("#state").dataset.state = x.state;
  $("#meta").textContent =
    `agent ${x.agent} · backend ${x.backend ?? x.provider} · running ${runningText(x)} · work ${workText(x)} · drift ${x.drift} · ` +
    `${x.restarts} restarts · activity ${ago(x.lastActivity)} · ${x.attached ? "attached" : "not attached"}` +
    (x.state !== "running" && x.reason ? ` · ${x.reason}` : "");
  const box = $("#interaction");
  const it = x.interaction;
  box.hidden = !it;
  const key = it ? `${it.requestId}` : "";
  if (box.dataset.key !== key) {
    box.dataset.key = key;
    // approve/deny only for an approve/deny question (a tool or command approval); a sign-in
    // choice or any other menu is answered with one of its own options, and a field a person
    // types into (an API key) only by attaching.
    const options = it?.options ?? [];
    const hint =
      options.length === 0 && !it?.approval
        ? `<div class="hint">Type the answer in the session: <code>gc attach ${esc(x.name)}</code></div>`
        : "";
    box.innerHTML = it
      ? `<div><b>Waiting for input:</b> ${esc(it.question || it.kind)}</div>${hint}<div class="actions">${options
          .map(
            (o, i) =>
              `<button type="button" data-option="${i + 1}" data-answer="${esc(o)}">${i + 1}. ${esc(o)}</button>`,
          )
          .join("")}${
          it.approval
            ? '<button type="button" data-answer="approve">approve</button><button type="button" data-answer="deny">deny</button>'
            : ""
        }</div>`
      : "";
    for (const b of box.querySelectorAll("[data-answer]"))
      b.addEventListener("click", () =>
        act("respond", { action: b.dataset.answer, requestId: it.requestId }),
      );
    for (const b of box.querySelectorAll("button")) b.disabled = ro;
  }
  if (view.lastStatus !== JSON.stringify(x)) {
    view.lastStatus = JSON.stringify(x);
    void loadDetail();
  }
}

let detailSeq = 0;
async function loadDetail() {
  if (view?.kind !== "session") return;
  const seq = ++detailSeq;
  let d;
  try {
    d = await api(`/api/sessions/${encodeURIComponent(view.name)}`);
  } catch (e) {
    $("#msg").textContent = e.message;
    return;
  }
  if (seq !== detailSeq || view?.kind !== "session") return;
  const dr = d.drift;
  const differs = dr.callerEnvDiffers
    ? "<p>The dashboard's environment resolves this session differently from the running controller; drift shown is the controller's (what it acts on).</p>"
    : "";
  $("#drift").innerHTML =
    differs +
    (dr.drift === "unknown"
      ? `<p>${esc(dr.reason)}</p>`
      : dr.fields.length === 0
        ? "<p>in sync</p>"
        : `<table><tr><th>field</th><th>old</th><th>new</th><th>effect</th></tr>${dr.fields
            .map((f) =>
              f.masked
                ? `<tr><td>${esc(f.field)}</td><td colspan="2">changed (derived from a secret)</td><td>${esc(f.effect)}</td></tr>`
                : `<tr><td>${esc(f.field)}</td><td>${esc(shownValue(f, f.from))}</td><td>${esc(shownValue(f, f.to))}</td><td>${esc(f.effect)}</td></tr>`,
            )
            .join("")}</table>`);
  $("#events").innerHTML = d.events
    .map(
      (e) => `<li>${esc(e.at.slice(11, 19))} #${e.seq} ${esc(e.type)} ${esc(JSON.stringify(e.payload))}</li>`,
    )
    .join("");
  $("#peek").textContent = d.peek.error ? `(${d.peek.error})` : d.peek.text;
}

function onScreen(f) {
  if (view?.kind !== "session" || !view.term) return;
  const term = view.term;
  // The raw stream's cursor movements assume the session's terminal size: take it first.
  if (f.cols && f.rows && (term.cols !== f.cols || term.rows !== f.rows)) term.resize(f.cols, f.rows);
  if (f.kind === "reset") {
    term.reset();
    if (f.error) term.write(`\x1b[2m(${f.error})\x1b[0m`);
  }
  term.write(f.data);
  $("#term").dataset.source = f.source;
}

function route() {
  const m = /^#\/s\/(.+)$/.exec(location.hash);
  view?.term?.dispose();
  if (m) {
    const name = decodeURIComponent(m[1]);
    const v = { kind: "session", name };
    view = v;
    sessionShell(name);
    loadXterm().then(
      () => {
        if (view !== v) return;
        v.term = openTerm();
        connect(name);
      },
      (e) => {
        $("#msg").textContent = e.message;
      },
    );
  } else {
    view = { kind: "grid" };
    renderGrid();
    connect();
  }
  if (status) onStatus(status);
}

window.addEventListener("hashchange", route);
const sort = $("#sort");
sort.value = localStorage.getItem("gc-sort") === "needs" ? "needs" : "city";
sort.addEventListener("change", () => {
  localStorage.setItem("gc-sort", sort.value);
  if (view?.kind === "grid") renderGrid();
});
setInterval(() => {
  if (status && view?.kind === "grid") renderGrid();
}, 5000);
// The page may carry the newest status (embedded by the server when the URL had the token):
// the grid is drawn at once, before the event stream connects.
const initial = document.getElementById("gc-initial");
if (initial) status = JSON.parse(initial.textContent);
route();
