// A run's timeline: turn by turn, the prompt, the model's text (streamed live, or read on
// demand for past turns), and each command with its outcome; `sh` output as it streams; and the
// proposals that wait, with their diff and accept / reject.

import { h, tokens, codeBadge } from "./dom.js";
import { diffView } from "./diff.js";
import { pending, proposalKind, turns, state, byteLength } from "./store.js";

const TOOLS = "get|set|rm|cp|mv|sh|env|ask_user|call|search|update|think|known|unknown|summarize|ask|act";
const COMMAND_TAGS = new RegExp(`<(${TOOLS})\\b[^>]*?(/>|>[\\s\\S]*?</\\1\\s*>)`, "g");

/** The model's prose without its tool tags (the commands are shown apart, with outcomes). */
export function prose(text) {
  return (text || "").replace(COMMAND_TAGS, "").replace(/\n{3,}/g, "\n\n").trim();
}

/** Entries a command wrote (a fact, a question, a file's content): shown beside the run, by
 * visibility, while the timeline shows the command that wrote them. */
const DATA = new Set(["prompt", "file", "known", "unknown", "skill", "session", "summary", "http", "https", "memory"]);

function isChannel(entry) {
  return entry.attributes && typeof entry.attributes.channel === "number";
}

/** What a command acted on, in a line. */
function target(entry) {
  const a = entry.attributes || {};
  if (entry.tool === "update" || entry.tool === "error") return entry.body || "";
  if (a.command) return a.command;
  if (a.question) return a.question;
  if (a.path) return a.path;
  const rest = entry.path.replace(/^[a-z_]+:\/\/(turn_\d+\/)?/, "");
  try {
    return decodeURIComponent(rest);
  } catch {
    return rest;
  }
}

/** A command's output channels (stdout, stderr), from the run's entries. */
function channels(run, entry) {
  const paths = (entry.attributes && entry.attributes.channels) || [`${entry.path}_1`, `${entry.path}_2`];
  return paths.map((p) => run.entries.get(p)).filter(Boolean);
}

function terminal(run, entry) {
  const outs = channels(run, entry);
  if (outs.length === 0) return null;
  const live = outs.some((c) => c.state === "streaming");
  const quiet = outs.every((c) => !c.body);
  // Until its first output, say what it waits for: a client runs it, or the server.
  const text = quiet && live
    ? h("span.wait", entry.attributes.kind === "call" ? "waiting for the client calling it…"
      : entry.attributes.runner === "client" ? "waiting for the client running it…" : "waiting for output…")
    : outs.map((c) => h(c.attributes.channel === 2 ? "span.err" : "span", c.body || ""));
  return h("pre.term", { dataset: { path: entry.path, live: live ? "1" : "0" } }, text);
}

/** Under a body the server sent cut (its first bytes): how much there is, and a link that
 * reads the rest. */
function showAll(entry, actions) {
  if (!entry.bodyTruncated) return null;
  return h("div.loader.muted", `the first ${sizeText(byteLength(entry.body))} of ${sizeText(entry.bodyBytes)} are shown · `,
    h("a", { href: "#", on: { click: (e) => { e.preventDefault(); actions.loadBody(entry.path); } } }, "show all"));
}

function sizeText(n) {
  return n >= 1024 * 1024 ? `${(n / 1024 / 1024).toFixed(1)} MiB` : n >= 1024 ? `${Math.round(n / 1024)} KiB` : `${n} bytes`;
}

function command(run, entry, open, actions) {
  const a = entry.attributes || {};
  const body = entry.tool === "set" && a.patch ? diffView(a.patch, state.diffMode) : h("pre", entry.body || "");
  // The command was accepted (its code says so); how it ended is its exit code.
  const exit = typeof a.exitCode === "number"
    ? h("span.code.exit", { dataset: { tone: a.exitCode === 0 ? "ok" : "bad" } }, `exit ${a.exitCode}`) : null;
  const details = h("details.cmd", { open: open || undefined, dataset: { path: entry.path, state: entry.state } },
    h("summary",
      h("span.tool", entry.tool),
      h("span.target", { title: entry.path }, target(entry)),
      exit,
      entry.outcome ? h("span.muted", entry.outcome) : null,
      h("span.tok", `${tokens(entry.tokens)} tok`),
      codeBadge(entry.status, entry.state)),
    h("div.body", body, showAll(entry, actions)));
  // A command's output is what a person watches: always shown, as it streams.
  const term = a.kind === "sh" || a.kind === "env" || a.kind === "call" ? terminal(run, entry) : null;
  const cut = term ? channels(run, entry).map((c) => showAll(c, actions)) : [];
  return term ? h("div.with-term", details, term, cut) : details;
}

function reply(run, turn, actions) {
  const r = run.replies.get(turn);
  if (!r) {
    return h("div.loader", h("a", { href: "#", on: { click: (e) => { e.preventDefault(); actions.loadReply(turn); } } },
      "Show the model's reply"));
  }
  if (r.loading) return h("div.loader.muted", "reading the reply…");
  const streaming = r.live && turn === run.turn && run.status === 102 && (!run.progress || run.progress.status === "thinking");
  const text = prose(r.text);
  // A reply of commands alone says nothing the commands below do not.
  if (!text && !r.reasoning && !streaming) return null;
  return h(`div.card.reply${streaming ? ".streaming" : ""}`, { dataset: { turn: String(turn) } },
    r.reasoning ? h("div.reasoning", r.reasoning) : null,
    h("pre", text));
}

/** One turn of the timeline. */
function turnView(run, turn, entries, actions) {
  const prompts = entries.filter((e) => e.tool === "prompt");
  const cmds = entries.filter((e) => !DATA.has(e.tool) && !isChannel(e));
  const cost = entries.reduce((sum, e) => sum + (e.tokens || 0), 0);
  const live = turn === run.turn && run.status === 102;
  return h("section.turn", { dataset: { turn: String(turn) } },
    h("span.turn-mark"),
    h("div.turn-head", h("b", `Turn ${turn}`), h("span", `${cmds.length} command${cmds.length === 1 ? "" : "s"}`),
      h("span", `${tokens(cost)} tokens`)),
    prompts.map((p) => h("div.card.prompt", h("div.who", p.attributes && p.attributes.inject ? "injected" : "prompt"), h("p", p.body || ""))),
    reply(run, turn, actions),
    h("div.cmds", cmds.map((c) => command(run, c, live && c.state === "streaming", actions))));
}

/** Draws with `build`; what it cannot draw (attributes of a shape the page does not know)
 * shows as its entries' text instead, so one entry never keeps a run from loading. */
function safely(build, entries) {
  try {
    return build();
  } catch (err) {
    console.warn("entries shown as text:", err);
    return h("section.unexpected", entries.map((e) => h("pre", JSON.stringify(e, null, 2))));
  }
}

/** Turns already drawn, by turn, with what they were drawn from: a turn that did not change is
 * not built again (a long run's push changes one turn, not two hundred). */
const drawn = { run: null, turns: new Map() };

function cachedTurn(run, turn, entries, actions) {
  const r = run.replies.get(turn);
  const sig = JSON.stringify([
    entries.some((e) => e.attributes && e.attributes.patch) ? state.diffMode : "",
    turn === run.turn ? [run.status, run.turn, run.progress && run.progress.status] : 0,
    r ? [r.text.length, r.reasoning.length, Boolean(r.loading)] : null,
    entries.map((e) => [e.path, e.state, e.status, e.outcome, e.tokens, e.visibility, e.body ? e.body.length : -1]),
  ]);
  const hit = drawn.turns.get(turn);
  if (hit && hit.sig === sig) return hit.node;
  const node = safely(() => turnView(run, turn, entries, actions), entries);
  drawn.turns.set(turn, { sig, node });
  return node;
}

/**
 * Whether the page may accept a proposal: not a command a client runs (`RUMMY_COMMAND_RUNNER=client`),
 * since the client that accepts it runs it and the page runs nothing.
 */
export function acceptable(entry) {
  const a = entry.attributes || {};
  const kind = proposalKind(entry) ?? a.kind;
  return !((kind === "sh" || kind === "env") && a.runner === "client");
}

/** A value as text: a string as it is, anything else as its JSON. */
function text(value) {
  if (typeof value === "string") return value;
  if (value === undefined || value === null) return "";
  return JSON.stringify(value);
}

/** Whether a proposal's attributes have the shape its kind is drawn from (the server's own);
 * one that does not is shown as its attributes' text, never half-drawn. */
function wellShaped(a, kind) {
  const optionalString = (v) => v === undefined || v === null || typeof v === "string";
  switch (kind) {
    case "edit": return optionalString(a.patch) && optionalString(a.path);
    case "sh": case "env": return optionalString(a.command);
    case "fetch": return typeof a.url === "string";
    case "call": return typeof a.server === "string" && typeof a.tool === "string"
      && a.arguments !== null && typeof a.arguments === "object" && !Array.isArray(a.arguments);
    case "ask_user": return optionalString(a.question)
      && (a.options === undefined || a.options === null
        || (Array.isArray(a.options) && a.options.every((o) => typeof o === "string")));
    default: return true;
  }
}

/** A proposal waiting for a decision: what it would do, and accept / reject with a reason. */
export function proposalView(run, entry, actions, first) {
  const a = entry.attributes && typeof entry.attributes === "object" ? entry.attributes : {};
  const kind = proposalKind(entry) ?? a.kind;
  const canAccept = acceptable(entry);
  let body;
  if (!wellShaped(a, kind)) body = h("pre.unexpected", JSON.stringify(a, null, 2));
  else if (kind === "edit") body = diffView(a.patch || entry.body, state.diffMode);
  else if (kind === "sh" || kind === "env") {
    body = [h("pre.term", `$ ${a.command || ""}`),
      canAccept ? null : h("p.muted.runner", "Run by a client, not the server: accept it in the client that runs commands (rummy on the command line, an editor), which runs it there; its output shows here as it streams. From here it can be rejected.")];
  }
  else if (kind === "fetch") {
    body = [h("pre.term", a.url || ""),
      h("p.muted.runner", "A web page outside the domains this project fetches from without asking: once accepted, the server fetches it (never from its own networks, never against the site's robots.txt) and the model reads it.")];
  }
  else if (kind === "call") {
    body = [h("pre.term", `${a.server}/${a.tool} ${JSON.stringify(a.arguments, null, 2)}`),
      h("p.muted.runner", "A tool the client that offered it calls (an editor's MCP server, on its machine): once accepted, that client calls it and its answer shows here.")];
  }
  else if (kind === "ask_user") body = h("div", h("p", a.question || ""), (a.options || []).length ? h("p.muted", `options: ${a.options.join(", ")}`) : null);
  else body = h("pre", text(entry.body) || JSON.stringify(a, null, 2));
  const reason = h("input.reason", { placeholder: kind === "ask_user" ? "Your answer (Enter to send)" : "Reason to reject (the model reads it)", "aria-label": "reason" });
  reason.addEventListener("keydown", (e) => {
    if (e.key === "Enter") {
      e.preventDefault();
      if (kind === "ask_user") actions.accept(entry, reason.value);
      else actions.reject(entry, reason.value);
    }
  });
  return h("article.proposal", { dataset: { path: entry.path, kind: text(kind), first: first ? "1" : "0" } },
    h("div.proposal-head",
      h("span.status", { dataset: { tone: "wait" } }, "proposal"),
      h("span.what", `${text(kind) || entry.tool} ${text(a.path) || text(a.command)}`),
      h("span.spacer"),
      kind === "edit" ? h("span.seg",
        h("button", { type: "button", "aria-pressed": String(state.diffMode === "unified"), on: { click: () => actions.diffMode("unified") } }, "Unified"),
        h("button", { type: "button", "aria-pressed": String(state.diffMode === "split"), on: { click: () => actions.diffMode("split") } }, "Side by side")) : null),
    h("div.proposal-body", body),
    h("div.proposal-actions",
      canAccept ? h("button.ok.accept", { type: "button", title: "Accept (a)", on: { click: () => actions.accept(entry, kind === "ask_user" ? reason.value : undefined) } },
        kind === "ask_user" ? "Answer" : "Accept") : null,
      reason,
      h("button.bad.reject", { type: "button", title: "Reject (r, then Enter)", on: { click: () => actions.reject(entry, reason.value) } }, "Reject"),
      first ? h("span.muted", canAccept ? [h("kbd", "a"), " accept · "] : null, h("kbd", "r"), " reject") : null));
}

/** The whole timeline of the open run. */
export function timeline(run, actions) {
  if (drawn.run !== run) {
    drawn.run = run;
    drawn.turns = new Map();
    drawn.older = null;
    drawn.waiting = null;
  }
  const items = [];
  const left = run.total - run.reached;
  if (left > 0) {
    const label = `Show ${Math.min(left, 200)} earlier entries (${left} more)`;
    if (!drawn.older || drawn.older.textContent !== label) {
      drawn.older = h("div.older", h("button#older", { type: "button", on: { click: actions.loadOlder } }, label));
    }
    items.push(drawn.older);
  }
  for (const [turn, entries] of turns(run)) items.push(cachedTurn(run, turn, entries, actions));
  const waiting = pending(run);
  if (waiting.length) {
    if (!drawn.waiting) drawn.waiting = h("h3", "Waiting for you");
    items.push(drawn.waiting);
    waiting.forEach((p, i) => items.push(cachedProposal(run, p, actions, i === 0)));
  }
  return items;
}

/** A proposal's card is kept while it waits, so a reason being typed survives a push. */
function cachedProposal(run, entry, actions, first) {
  const key = `proposal:${entry.path}`;
  const sig = JSON.stringify([state.diffMode, first, entry.state]);
  const hit = drawn.turns.get(key);
  if (hit && hit.sig === sig) return hit.node;
  const node = safely(() => proposalView(run, entry, actions, first), [entry]);
  if (hit) {
    const [was, now] = [hit.node.querySelector("input.reason"), node.querySelector("input.reason")];
    if (was && now) now.value = was.value;
  }
  drawn.turns.set(key, { sig, node });
  return node;
}
