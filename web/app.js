// rummy's web page: wires the connection, the state and the views, and the actions a person
// takes (start, continue, inject, cancel, fork, accept, reject). Where it is: `#/<project>/<run>`.

import { Connection, RpcError, socketUrl } from "./rpc.js";
import { h, fill, active, age } from "./dom.js";
import {
  state, emptyRun, applySnapshot, applyOlder, applyState, applyProgress, applyRender, recordRender, applyToList,
  progressToList, pending, PAGE,
} from "./store.js";
import { nav, runPane, updatePane, reconcile, side, signIn, newRunForm, forkForm, notice } from "./view.js";
import { acceptable, prose } from "./timeline.js";

const app = document.getElementById("app");
const connBadge = document.getElementById("conn");
const crumbs = document.getElementById("crumbs");

// ---- theme -------------------------------------------------------------------------------

function applyTheme() {
  const theme = localStorage.getItem("rummy.theme");
  if (theme) document.documentElement.dataset.theme = theme;
  else delete document.documentElement.dataset.theme;
}

function toggleTheme() {
  const dark = document.documentElement.dataset.theme
    ? document.documentElement.dataset.theme === "dark"
    : matchMedia("(prefers-color-scheme: dark)").matches;
  localStorage.setItem("rummy.theme", dark ? "light" : "dark");
  applyTheme();
}

applyTheme();
document.getElementById("theme").addEventListener("click", toggleTheme);

// ---- where we are ------------------------------------------------------------------------

function route() {
  const [, project = "", run = ""] = location.hash.split("/").map((s) => decodeURIComponent(s || ""));
  return { project: project || null, run: run || null };
}

// ---- the connection ----------------------------------------------------------------------

const auth = () => (state.token ? { token: state.token } : {});

// A server that needs a token (the page says so) is asked for one before the page connects:
// it never opens a connection without one first.
const tokenFirst = document.body.dataset.token === "required" && !state.token;
if (tokenFirst) state.needToken = true;

const conn = new Connection(socketUrl(location), {
  onopen: boot,
  onnotify: notify,
  onstate: (s, code) => {
    state.conn = s;
    connBadge.dataset.state = s;
    // 1008: the server wants a (new) token — its first one was just made, or ours lapsed.
    if (s === "closed" && code === 1008) {
      state.needToken = true;
      state.token = "";
      sessionStorage.removeItem("rummy.token");
      render();
    }
    if (s === "closed" && state.needToken) conn.stopped = true;
    connBadge.textContent = s === "open" ? "live" : s === "connecting" ? "connecting…"
      : state.needToken ? "signed out" : `offline${code ? ` (${code})` : ""}, retrying`;
  },
}, { connect: !tokenFirst });
if (tokenFirst) {
  connBadge.dataset.state = "closed";
  connBadge.textContent = "signed out";
}

/** After every (re)connect: projects, then the open project and run, replaying what was missed. */
async function boot() {
  try {
    state.projects = await conn.call("getProjects", { ...auth(), limit: 1000 });
    state.needToken = false;
    state.signInError = "";
  } catch (e) {
    if (e instanceof RpcError && e.code === -32001) {
      if (state.token) state.signInError = "That token was refused.";
      state.needToken = true;
      state.token = "";
      sessionStorage.removeItem("rummy.token");
      conn.stopped = true;
      render();
      return;
    }
    throw e;
  }
  const where = route();
  if (!where.project && state.projects.length === 1) {
    location.hash = `#/${encodeURIComponent(state.projects[0].name)}`;
    return;
  }
  await open(where, true);
}

/** Opens the project and run the hash names (again, after a reconnect). */
async function open(where, reconnected = false) {
  if (state.needToken || state.conn !== "open") return render();
  if (where.project !== state.project || reconnected) {
    if (where.project !== state.project) {
      state.runs = new Map();
      state.run = null;
    }
    state.project = where.project;
    if (state.project) {
      try {
        const hello = await conn.call("rummy/hello", { name: state.project, ...auth() });
        state.projectRoot = hello.projectRoot;
        state.models = await conn.call("getModels", { limit: 1000 });
        await refreshRuns();
      } catch (e) {
        toast(`Cannot open ${state.project}: ${e.message}`);
        state.project = null;
      }
    }
  }
  if (!state.project) {
    state.run = null;
    return render();
  }
  const alias = where.run;
  if (!alias) {
    state.run = null;
    return render();
  }
  const same = state.run && state.run.alias === alias;
  if (!same) {
    state.run = emptyRun(alias);
    applyRender(state.run);
  }
  const run = state.run;
  render();
  try {
    const params = { run: alias, limit: PAGE };
    if (same && run.loaded) params.sinceSeq = run.lastSeq;
    let snap = await fitting("getRun", params);
    if (state.run !== run) return;
    // More was missed than one message holds: the run is read afresh instead.
    const afresh = Boolean(params.sinceSeq !== undefined && snap.missedMore);
    if (afresh) snap = await fitting("getRun", { run: alias, limit: PAGE });
    if (state.run !== run) return;
    if (!same || !run.loaded || afresh) {
      run.entries = new Map();
      run.reached = 0;
    }
    applySnapshot(run, snap);
    render();
    loadMemo(run);
    if (!run.telemetry) loadTelemetry(run);
    const recent = [...new Set([...run.entries.values()].map((e) => e.turn))].sort((a, b) => b - a).slice(0, 3);
    for (const turn of recent) if (!run.replies.has(turn)) loadReply(turn);
  } catch (e) {
    toast(`Cannot open run ${alias}: ${e.message}`);
  }
}

/** A paged call that, refused -32007 for a page too large for one message, asks again with the
 * page size the server says fits (`data.limit`). */
async function fitting(method, params) {
  try {
    return await conn.call(method, params);
  } catch (e) {
    const fits = e instanceof RpcError && e.code === -32007 ? e.data.limit : undefined;
    if (typeof fits !== "number" || fits >= (params.limit ?? Infinity)) throw e;
    return conn.call(method, { ...params, limit: Math.max(1, fits) });
  }
}

async function refreshRuns() {
  const runs = await conn.call("getRuns", { limit: 1000 });
  state.runs = new Map(runs.map((r) => [r.run, r]));
  render();
}

let runsTimer = null;
function refreshRunsSoon() {
  clearTimeout(runsTimer);
  runsTimer = setTimeout(() => refreshRuns().catch(() => {}), 200);
}

function notify(method, params) {
  const run = state.run && state.run.alias === params.run ? state.run : null;
  switch (method) {
    case "run/state":
      if (!applyToList(params)) refreshRunsSoon();
      // A turn's end brings its telemetry; its reply is read if it did not stream here whole.
      if (run && run.loaded && applyState(run, params)) {
        // Output appended past what the page holds (a push it never got): read it whole.
        for (const item of params.history || []) if (run.entries.get(item.path)?.gap) loadBody(item.path);
        const reply = run.replies.get(params.turn);
        if (params.telemetry && (!reply || reply.partial)) loadReply(params.turn, true);
      }
      break;
    case "run/progress":
      progressToList(params);
      if (run && run.loaded) applyProgress(run, params);
      break;
    case "run/proposal":
      if (run) {
        for (const p of params.proposed || []) {
          if (!run.entries.has(p.path)) {
            run.entries.set(p.path, {
              path: p.path, tool: p.path.split("://")[0], state: "proposed", status: 202, visibility: "visible",
              turn: p.turn, tokens: 0, attributes: p.attributes, body: p.body, outcome: null, hash: p.hash,
              proposal: p.proposal,
            });
            run.total += 1;
            run.reached += 1;
          }
        }
      }
      break;
    case "ui/render": {
      recordRender(params);
      if (!run) return;
      const turn = applyRender(run);
      if (patchReply(run, turn)) return;
      break;
    }
    case "stream/cancelled":
      toast(`Command stopped: ${params.reason || "cancelled"}`);
      break;
    case "ui/notify":
      showNotice(params);
      return;
    default:
      return;
  }
  render();
}

// ---- rendering ---------------------------------------------------------------------------

let frame = 0;
function render() {
  if (!frame) frame = requestAnimationFrame(draw);
}

const opened = new Set();
app.addEventListener("toggle", (e) => {
  const data = e.target.dataset || {};
  const key = data.path || (data.visibility && `vis:${data.visibility}`);
  if (!key) return;
  if (e.target.open) opened.add(key);
  else opened.delete(key);
}, true);

/** What stays on screen between draws: the layout, the nav (while its content is the same) and
 * the open run's pane. */
const screen = { layout: null, nav: null, navSig: "", pane: null, side: null };

function navSignature() {
  return JSON.stringify([state.project, state.run && state.run.alias, state.projects,
    [...state.runs.values()].map((r) => [r.run, r.status, r.turn, r.tokens, r.cost, r.summary, r.model, age(r.created)])]);
}

function draw() {
  frame = 0;
  performance.clearMarks("rummy:draw");
  performance.clearMeasures("rummy:draw");
  performance.mark("rummy:draw");
  fill(crumbs, state.project ? h("b", state.project) : null, state.run ? ["›", h("b", state.run.alias)] : null);
  if (state.needToken) {
    screen.layout = null;
    screen.pane = null;
    fill(app, signIn(actions));
    document.getElementById("token").focus();
    return;
  }
  if (!screen.layout || screen.layout.parentNode !== app) {
    screen.layout = h("div.layout");
    screen.navSig = "";
    fill(app, screen.layout);
  }
  const sig = navSignature();
  if (sig !== screen.navSig) {
    screen.nav = nav(actions);
    screen.navSig = sig;
  }
  const run = state.run;
  let parts;
  if (run && run.loaded) {
    const fresh = !screen.pane || screen.pane.run !== run;
    if (fresh) screen.pane = runPane(run, actions);
    const center = screen.pane.center;
    const atBottom = fresh || center.scrollHeight - center.scrollTop - center.clientHeight < 40;
    updatePane(screen.pane, actions);
    parts = [screen.nav, center, side(run)];
    screen.layout.className = "layout";
    reconcile(screen.layout, parts);
    for (const d of center.querySelectorAll("details[data-path]")) if (opened.has(d.dataset.path)) d.open = true;
    for (const d of screen.layout.querySelectorAll("details[data-visibility]")) if (opened.has(`vis:${d.dataset.visibility}`)) d.open = true;
    if (atBottom) center.scrollTop = center.scrollHeight;
  } else {
    screen.pane = null;
    const text = run ? "Loading…" : state.project ? "Choose a run, or start one."
      : state.projects && state.projects.length === 0 ? "No project yet: open one with the CLI (rummy ask …) in its directory."
        : "Choose a project.";
    screen.layout.className = "layout no-side";
    reconcile(screen.layout, [screen.nav, h("div.pane.center", h("p.empty", text))]);
  }
  // A proposal waiting shows in the tab's title, for a person looking at another tab.
  const waiting = pending(run).length;
  document.title = `${waiting ? `(${waiting}) ` : ""}${run ? `${run.alias} · ` : ""}rummy`;
  // The last render's cost, for whoever measures the page (one measure kept, never a pile).
  performance.measure("rummy:draw", "rummy:draw");
  if (run && run.loaded && !run.painted) {
    // The frame after this one is painted with the run: what "time to first paint" measures.
    run.painted = true;
    requestAnimationFrame(() => performance.mark("rummy:run-painted"));
  }
}

/** Streams text into the reply on screen without rebuilding the page. */
function patchReply(run, turn) {
  const card = app.querySelector(`.reply[data-turn="${turn}"] pre`);
  if (!card) return false;
  card.textContent = prose(run.replies.get(turn).text);
  const center = app.querySelector(".center");
  if (center && center.scrollHeight - center.scrollTop - center.clientHeight < 80) center.scrollTop = center.scrollHeight;
  return true;
}

// The server's notices stack in the bottom right corner, newest last, at most NOTICES_SHOWN (the oldest goes).
// An info or a warning fades by itself after NOTICE_FADE_MS (it says what the page shows anyway:
// a proposal, a stop); an error stays until the person dismisses it, so a failure is not missed.
const NOTICES_SHOWN = 4;
const NOTICE_FADE_MS = 8000;
const notices = h("div.notices", { "aria-live": "polite" });
document.body.append(notices);

function showNotice(params) {
  const el = notice(params, () => el.remove());
  notices.append(el);
  while (notices.children.length > NOTICES_SHOWN) notices.firstElementChild.remove();
  if (el.dataset.level !== "error") setTimeout(() => el.remove(), NOTICE_FADE_MS);
}

let toastTimer = null;
function toast(text) {
  let el = document.querySelector(".toast");
  if (!el) {
    el = h("div.toast", { role: "status" });
    document.body.append(el);
  }
  el.textContent = text;
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => el.remove(), 4000);
}

// ---- actions -----------------------------------------------------------------------------

const modal = h("dialog#modal");
document.body.append(modal);

async function call(method, params, done) {
  try {
    const result = await conn.call(method, params);
    if (done) toast(done);
    return result;
  } catch (e) {
    // A dialog sits above the page: its own error line says what went wrong.
    const line = modal.open && modal.querySelector(".error-line");
    if (line) fill(line, h("div.error", e.message));
    else toast(e.message);
    return null;
  }
}

async function loadReply(turn, again = false) {
  const run = state.run;
  if (!run || (run.replies.has(turn) && !again)) return;
  run.replies.set(turn, { text: "", reasoning: "", loading: true });
  render();
  const found = await call("getEntries", { run: run.alias, scheme: "assistant", pattern: `assistant://${turn}`, withBody: true });
  const current = run.replies.get(turn);
  if (current && !current.loading && !current.partial) return; // streamed whole meanwhile
  run.replies.set(turn, { text: found && found[0] ? found[0].body : "", reasoning: "", loading: false, live: false });
  render();
}

/** Reads an entry's whole body with `getBody`, slice by slice: a body the server sent cut
 * (`bodyTruncated`), or output whose appends left a gap. */
async function loadBody(path) {
  const run = state.run;
  if (!run) return;
  let body = "";
  let next = 0;
  while (typeof next === "number") {
    const slice = await call("getBody", { run: run.alias, path, offset: next });
    if (!slice || state.run !== run) return;
    body += slice.body;
    next = slice.next;
  }
  const entry = run.entries.get(path);
  if (entry) run.entries.set(path, { ...entry, body, bodyTruncated: false, bodyBytes: undefined, gap: false });
  render();
}

/** The context by category of the run's last turn: its latest turn-end push, replayed. */
async function loadTelemetry(run) {
  const back = await call("getRun", { run: run.alias, sinceSeq: Math.max(0, run.lastSeq - 20), limit: 0 });
  const ends = ((back && back.missed) || []).filter((m) => m.method === "run/state" && m.params.telemetry
    && (m.params.telemetry.contextDistribution || []).length);
  if (ends.length && !run.telemetry) {
    run.telemetry = ends[ends.length - 1].params.telemetry;
    run.lastUsage = run.lastUsage || run.telemetry.usage || null;
    render();
  }
}

async function loadMemo(run) {
  for (const [scheme, key, path] of [["session", "session", "session://state"], ["summary", "summary", "summary://run"]]) {
    if (run.memo[key]) continue;
    const found = await call("getEntries", { run: run.alias, scheme, pattern: path, withBody: true });
    if (found && found[0]) {
      run.memo[key] = found[0].body;
      render();
    }
  }
}

const actions = {
  signIn(token) {
    state.token = token;
    sessionStorage.setItem("rummy.token", token);
    state.signInError = "";
    conn.stopped = false;
    conn.reconnect();
  },
  newRun() {
    if (!state.project) return;
    fill(modal, newRunForm(actions));
    modal.showModal();
    modal.querySelector("#new-prompt").focus();
  },
  closeDialog() {
    modal.close();
  },
  async start({ model, mode, alias, prompt }) {
    const ack = await call("set", { path: `run://${alias || ""}`, body: prompt, attributes: { model, mode } });
    if (!ack) return;
    modal.close();
    await refreshRuns();
    location.hash = `#/${encodeURIComponent(state.project)}/${encodeURIComponent(ack.alias)}`;
  },
  fork() {
    fill(modal, forkForm(state.run, actions));
    modal.showModal();
    modal.querySelector("#fork-prompt").focus();
  },
  async forkRun(alias, prompt) {
    const run = state.run;
    const ack = await call("set", { path: `run://${alias}`, body: prompt, attributes: { fork: run.alias, model: run.model } });
    if (!ack) return;
    modal.close();
    await refreshRuns();
    location.hash = `#/${encodeURIComponent(state.project)}/${encodeURIComponent(ack.alias)}`;
  },
  async send(body, busy) {
    const run = state.run;
    const params = { path: `run://${run.alias}`, body };
    if (busy) params.attributes = { inject: true };
    return Boolean(await call("set", params, busy ? "Injected" : null));
  },
  async cancel() {
    await call("set", { path: `run://${state.run.alias}`, state: "cancelled" });
  },
  async accept(entry, answer) {
    // It approves what the page shows: the server refuses the accept (-32005) if it changed.
    const params = { run: state.run.alias, path: entry.path, state: "resolved", approves: entry.hash };
    if (answer) params.body = answer;
    const done = await call("set", params);
    if (done) markResolved(entry.path, done);
  },
  async reject(entry, reason) {
    const done = await call("set", { run: state.run.alias, path: entry.path, state: "cancelled", body: reason || "rejected" });
    if (done) markResolved(entry.path, done);
  },
  diffMode(mode) {
    state.diffMode = mode;
    localStorage.setItem("rummy.diff", mode);
    render();
  },
  async loadOlder() {
    const run = state.run;
    const offset = run.reached;
    const snap = await call("getRun", { run: run.alias, limit: PAGE, offset });
    if (snap && state.run === run) {
      const center = app.querySelector(".center");
      const fromBottom = center ? center.scrollHeight - center.scrollTop : 0;
      applyOlder(run, snap, offset);
      draw();
      const after = app.querySelector(".center");
      if (after) after.scrollTop = after.scrollHeight - fromBottom;
    }
  },
  loadReply,
  loadBody,
};

/** An answered proposal leaves the waiting list at once; its `run/state` follows. */
function markResolved(path, done) {
  const run = state.run;
  const entry = run && run.entries.get(path);
  if (entry) {
    run.entries.set(path, { ...entry, state: done.state || "resolved", outcome: done.outcome ?? null });
    render();
  }
}

// ---- keyboard ----------------------------------------------------------------------------

const help = document.getElementById("help");
document.getElementById("help-button").addEventListener("click", () => help.showModal());
document.getElementById("help-close").addEventListener("click", () => help.close());

document.addEventListener("keydown", (e) => {
  if (e.ctrlKey || e.metaKey || e.altKey) return;
  const typing = e.target.closest && e.target.closest("input, textarea, select");
  if (typing || modal.open || help.open) return;
  const first = pending(state.run)[0];
  const key = e.key;
  if (key === "a" && first && acceptable(first)) actions.accept(first);
  else if (key === "r" && first) app.querySelector(`.proposal[data-first="1"] input.reason`)?.focus();
  else if (key === "d") actions.diffMode(state.diffMode === "unified" ? "split" : "unified");
  else if (key === "n") actions.newRun();
  else if (key === "/" && state.run) app.querySelector("#prompt")?.focus();
  else if (key === "t") toggleTheme();
  else if (key === "?") help.showModal();
  else return;
  e.preventDefault();
});

window.addEventListener("hashchange", () => open(route()));
setInterval(() => active(state.run && state.run.status) || render(), 30000);
render();
