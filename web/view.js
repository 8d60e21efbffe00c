// The page's views, built from the state: sign-in, the project and run list, a run's header,
// its side panel (telemetry, the context by category, entries by visibility, open questions,
// session state and summary), the composer and the server's notices (`ui/notify`).

import { h, tokens, cost, age, statusBadge, active, activity } from "./dom.js";
import { state } from "./store.js";
import { timeline } from "./timeline.js";

/** The sign-in card, shown when the server wants a token. */
export function signIn(actions) {
  const input = h("input#token", { type: "password", placeholder: "rummy token", autocomplete: "off", "aria-label": "token" });
  const submit = (e) => {
    e.preventDefault();
    actions.signIn(input.value.trim());
  };
  return h("form.center-card#sign-in", { on: { submit } },
    h("h2", "Sign in"),
    h("p", "This server needs a token. An admin makes one with ", h("code", "rummy token create"), "."),
    state.signInError ? h("div.error", state.signInError) : null,
    input,
    h("button.primary", { type: "submit" }, "Sign in"));
}

/** Projects as chips, and the runs of the open one. */
export function nav(actions) {
  const projects = (state.projects || []).map((p) =>
    h("a.chip", { href: `#/${encodeURIComponent(p.name)}`, "aria-current": String(p.name === state.project), title: p.projectRoot }, p.name));
  const runs = [...state.runs.values()].map((r) =>
    h("li", h("a", { href: `#/${encodeURIComponent(state.project)}/${encodeURIComponent(r.run)}`, "aria-current": String(state.run && state.run.alias === r.run), dataset: { run: r.run } },
      h("span.name", r.run), statusBadge(r.status, null),
      h("span.meta", h("span", r.model || ""), h("span", `${r.turn} turns`), h("span", `${tokens(r.tokens)} tok`), h("span", cost(r.cost)), h("span", age(r.created))),
      r.summary ? h("span.summary", r.summary) : null)));
  return h("nav.pane.nav",
    h("div.nav-head", h("h3", "Projects")),
    h("div.projects", projects.length ? projects : h("span.muted", state.projects ? "no project yet" : "…")),
    state.project ? h("div.nav-head", h("h3", "Runs"), h("button.primary#new-run", { type: "button", title: "New run (n)", on: { click: actions.newRun } }, "New run")) : null,
    state.project ? h("ul.runs#runs", runs.length ? runs : h("li.empty", "No runs yet.")) : null);
}

/** The header of the open run: status, facts, and its actions. */
export function runHead(run, actions) {
  const t = run.totals || {};
  const progress = run.status === 102 ? run.progress : null;
  return h("div.run-head",
    h("div",
      h("h1", run.alias, statusBadge(run.status, run.stopReason)),
      h("div.facts",
        h("span", run.model || ""), h("span", run.mode || ""), h("span", `${run.turn} turns`),
        h("span", `${tokens(t.totalTokens || 0)} tokens`), h("span", cost(t.cost)), h("span", age(run.created)),
        run.stopReason ? h("span", run.stopReason.replace("_", " ")) : null,
        run.queued ? h("span", `queued: ${run.queued.reason} #${run.queued.position}`) : null),
      h("div.progress-line#progress", { dataset: { status: progress ? progress.status : "" } }, progress ? activity(progress) : "")),
    h("div.tools",
      h("button#fork", { type: "button", on: { click: actions.fork } }, "Fork"),
      h("button.bad#cancel", { type: "button", disabled: !active(run.status), on: { click: actions.cancel } }, "Cancel")));
}

/** The composer: continue an idle run, or inject into a running one. */
export function composer(run, actions) {
  const busy = active(run.status);
  const text = h("textarea#prompt", { placeholder: busy ? "Tell the running loop something (inject)…" : "Continue the run…", rows: 2, "aria-label": "prompt" });
  const send = (e) => {
    e.preventDefault();
    const body = text.value.trim();
    if (body) actions.send(body, active(run.status)).then((ok) => ok && (text.value = ""));
  };
  text.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) send(e);
  });
  return h("form.card.composer", { on: { submit: send } },
    text,
    h("div.row", h("span.grow.muted", busy ? "The loop is running: your words join it next turn." : "A new loop of this run, in its mode."),
      h("button.primary#send", { type: "submit" }, busy ? "Inject" : "Continue")));
}

const COLORS = ["var(--c0)", "var(--c1)", "var(--c2)", "var(--c3)", "var(--c4)", "var(--c5)", "var(--c6)", "var(--c7)"];

/** The context by category, from the latest turn's telemetry. */
function contextBar(run) {
  const tel = run.telemetry;
  const buckets = (tel && tel.contextDistribution) || [];
  const model = state.models.find((m) => m.alias === (tel && tel.model) || m.alias === run.model);
  const limit = (model && model.contextLength) || 0;
  const used = tel ? tel.contextTokens || buckets.reduce((s, b) => s + b.tokens, 0) : 0;
  if (!tel) return h("p.muted", "Shown after the next turn ends.");
  const scale = Math.max(limit, used, 1);
  // What the categories do not hold is the instructions and the tools' docs.
  const rest = Math.max(0, used - buckets.reduce((s, b) => s + b.tokens, 0));
  const parts = [...buckets, ...(rest ? [{ bucket: "instructions & the rest", tokens: rest, entries: null }] : [])];
  const color = (i) => COLORS[i % COLORS.length];
  return h("div#context",
    h("div.meter", { title: `${used} of ${limit || "?"} tokens` },
      parts.map((b, i) => h("span", { style: `width:${(100 * b.tokens) / scale}%;background:${color(i)}`, title: `${b.bucket}: ${b.tokens}` }))),
    h("ul.legend",
      parts.map((b, i) => h("li", h("i", { style: `background:${color(i)}` }), h("span", b.entries === null ? b.bucket : `${b.bucket} (${b.entries})`), h("span", tokens(b.tokens)))),
      h("li", h("i"), h("b", "in context"), h("b", `${tokens(used)}${limit ? ` / ${tokens(limit)}` : ""}`))));
}

/** The run's entries by visibility, each group with its token cost. */
let drawnGroups = { sig: "", node: null };

/** The groups are rebuilt only when the entries they list changed (a push usually changes a few). */
function groups(run) {
  let sig = `${run.alias}:${run.entries.size}`;
  for (const e of run.entries.values()) sig += `|${e.visibility[0] || ""}${e.tokens}`;
  if (drawnGroups.sig !== sig) drawnGroups = { sig, node: buildGroups(run) };
  return drawnGroups.node;
}

function buildGroups(run) {
  const byVis = { visible: [], summarized: [], archived: [] };
  for (const e of run.entries.values()) (byVis[e.visibility] || (byVis[e.visibility] = [])).push(e);
  return h("div.groups#visibility",
    Object.entries(byVis).map(([vis, list]) =>
      h("details", { dataset: { visibility: vis } },
        h("summary", h("span", `${vis} · ${list.length}`), h("span.muted", `${tokens(list.reduce((s, e) => s + (e.tokens || 0), 0))} tok`)),
        h("ul", list.slice(-300).map((e) => h("li", h("code", { title: e.path }, e.path), h("span.muted", tokens(e.tokens))))))));
}

function telemetry(run) {
  const t = run.totals || {};
  const last = run.lastUsage;
  const rows = [
    ["prompt tokens", tokens(t.promptTokens || 0)], ["cached", tokens(t.cachedTokens || 0)],
    ["completion", tokens(t.completionTokens || 0)], ["reasoning", tokens(t.reasoningTokens || 0)],
    ["cost", cost(t.cost)],
  ];
  if (last) rows.push(["last turn", `${tokens(last.totalTokens)} tok · ${cost(last.cost)}`]);
  const side = run.sidecar || [];
  for (const s of side) rows.push([`side task ${s.task}`, `${s.outcome} · ${s.elapsedMs} ms`]);
  return h("dl.stat#telemetry", rows.flatMap(([k, v]) => [h("dt", k), h("dd", v)]));
}

/** A session state or summary: its Markdown sections as headings, bullets and lines (an empty
 * section is left out). Built as elements, never parsed as HTML. */
export function memoView(text) {
  const sections = [];
  let current = { title: null, lines: [] };
  for (const line of (text || "").split("\n")) {
    const heading = line.match(/^#{1,6}\s+(.*)$/);
    if (heading) {
      sections.push(current);
      current = { title: heading[1], lines: [] };
    } else if (line.trim()) {
      current.lines.push(line);
    }
  }
  sections.push(current);
  return sections.filter((s) => s.lines.length).map((s) => [
    s.title ? h("h4", s.title) : null,
    s.lines.map((l) => (/^\s*[-*]\s+/.test(l) ? h("p.bullet", l.replace(/^\s*[-*]\s+/, "")) : h("p", l))),
  ]);
}

/** The side panel of the open run. */
export function side(run) {
  return h("aside.pane.side",
    h("section", h("h3", "Context"), contextBar(run)),
    h("section", h("h3", "Telemetry"), telemetry(run)),
    h("section", h("h3", `Open questions · ${run.unknowns.length}`),
      run.unknowns.length ? h("ul.unknowns#unknowns", run.unknowns.map((u) => h("li", { title: u.path }, u.body, u.shared ? h("span.muted", " (shared)") : null))) : h("p.muted", "None.")),
    run.memo.session ? h("section", h("h3", "Session state"), h("div.memo#session", memoView(run.memo.session))) : null,
    run.memo.summary ? h("section", h("h3", "Summary"), h("div.memo#summary", memoView(run.memo.summary))) : null,
    h("section", h("h3", "Entries by visibility"),
      run.total > run.entries.size ? h("p.muted", `the ${run.entries.size} loaded of ${run.total}`) : null,
      groups(run)));
}

/** The center pane of the open run: its header, timeline and composer, kept while the run is
 * open so a push changes what it changed and the reader's scroll, typing and focus stay. */
export function runPane(run, actions) {
  const pane = {
    run,
    head: runHead(run, actions),
    timeline: h("div#timeline"),
    composer: composer(run, actions),
    busy: active(run.status),
  };
  pane.center = h("div.pane.center#run", { dataset: { run: run.alias } }, pane.head, pane.timeline, pane.composer);
  return pane;
}

/** Brings a kept pane up to date with its run. */
export function updatePane(pane, actions) {
  const run = pane.run;
  pane.center.dataset.status = String(run.status);
  const head = runHead(run, actions);
  pane.head.replaceWith(head);
  pane.head = head;
  reconcile(pane.timeline, timeline(run, actions));
  const busy = active(run.status);
  if (busy !== pane.busy) {
    // The composer's words change with the run's state; what the person typed stays.
    const fresh = composer(run, actions);
    const [was, now] = [pane.composer.querySelector("textarea"), fresh.querySelector("textarea")];
    now.value = was.value;
    const focused = document.activeElement === was;
    pane.composer.replaceWith(fresh);
    if (focused) now.focus();
    pane.composer = fresh;
    pane.busy = busy;
  }
}

/** Makes `parent`'s children exactly `items`, moving as few nodes as it can: nodes kept from the
 * last draw stay where they are, so the browser lays out only what changed. */
export function reconcile(parent, items) {
  const want = new Set(items);
  let at = parent.firstChild;
  for (const item of items) {
    while (at && !want.has(at)) {
      const next = at.nextSibling;
      at.remove();
      at = next;
    }
    if (at === item) at = at.nextSibling;
    else parent.insertBefore(item, at);
  }
  while (at) {
    const next = at.nextSibling;
    at.remove();
    at = next;
  }
}

/** The start-a-run form, in a dialog. */
export function newRunForm(actions) {
  const models = state.models.map((m) => h("option", { value: m.alias }, `${m.alias} — ${m.actual}`));
  const form = h("form.form#new-run-form",
    h("h2", "New run"),
    h("div.two",
      h("label", "Model", h("select#model", { name: "model" }, models)),
      h("label", "Mode", h("select#mode", { name: "mode" }, h("option", { value: "ask" }, "ask — answers, changes nothing"), h("option", { value: "act" }, "act — proposes edits and commands")))),
    h("label", "Name (optional)", h("input#alias", { name: "alias", placeholder: "let the server name it", pattern: "[A-Za-z0-9_]{0,128}" })),
    h("label", "Prompt", h("textarea#new-prompt", { name: "prompt", rows: 5, required: true, placeholder: "What should the agent do?" })),
    h("div.error-line"),
    h("div.actions", h("button", { type: "button", on: { click: actions.closeDialog } }, "Cancel"), h("button.primary#start", { type: "submit" }, "Start")));
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    const f = new FormData(form);
    actions.start({ model: f.get("model"), mode: f.get("mode"), alias: f.get("alias"), prompt: f.get("prompt") });
  });
  return form;
}

/** The fork form, in a dialog. */
export function forkForm(run, actions) {
  const form = h("form.form#fork-form",
    h("h2", `Fork ${run.alias}`),
    h("p.muted", "A new run with this run's model, settings, mode and entries, going on from here."),
    h("label", "New name", h("input#fork-alias", { name: "alias", required: true, value: `${run.alias}_fork`, pattern: "[A-Za-z0-9_]{1,128}" })),
    h("label", "Prompt", h("textarea#fork-prompt", { name: "prompt", rows: 4, required: true })),
    h("div.error-line"),
    h("div.actions", h("button", { type: "button", on: { click: actions.closeDialog } }, "Cancel"), h("button.primary", { type: "submit" }, "Fork")));
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    const f = new FormData(form);
    actions.forkRun(f.get("alias"), f.get("prompt"));
  });
  return form;
}

/** A server notice (`ui/notify`): its text in its level's tone, the run it is about linked to the
 * run's page, and a button that dismisses it. A level the page does not know shows untoned. */
export function notice(params, dismiss) {
  const level = ["info", "warn", "error"].includes(params.level) ? params.level : "other";
  const text = String(params.text || "");
  const run = params.run || "";
  const link = run && state.project
    ? h("a", { href: `#/${encodeURIComponent(state.project)}/${encodeURIComponent(run)}`, dataset: { run } }, run)
    : null;
  // The run's name in the text becomes the link; a text that does not name it gets it in front.
  const at = link ? text.indexOf(run) : -1;
  const body = !link ? [text] : at >= 0 ? [text.slice(0, at), link, text.slice(at + run.length)] : [link, " ", text];
  return h("div.notice", { role: level === "error" ? "alert" : "status", dataset: { level } },
    h("span.notice-text", body),
    h("button.ghost.notice-close", { type: "button", title: "Dismiss", "aria-label": "Dismiss", on: { click: dismiss } }, "×"));
}
