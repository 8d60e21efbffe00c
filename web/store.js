// The page's state and how notifications change it. Rendering reads it; nothing here touches
// the DOM. A run's entries are kept by path: `run/state` carries what changed, `getRun` pages
// what came before, and both land in the same map, so a reconnect's replay never duplicates.

/** One page of history: the newest entries first shown, and each "earlier" step. */
export const PAGE = 200;

/** The whole state of the page. */
export const state = {
  conn: "connecting",
  token: sessionStorage.getItem("rummy.token") || "",
  needToken: false,
  signInError: "",
  projects: null,
  project: null,
  projectRoot: "",
  models: [],
  runs: new Map(),
  run: null,
  diffMode: localStorage.getItem("rummy.diff") || "unified",
  toast: "",
};

/** A fresh view of run `alias`, before its snapshot arrives. */
export function emptyRun(alias) {
  return {
    alias,
    loaded: false,
    status: 0,
    turn: 0,
    mode: null,
    model: null,
    stopReason: null,
    summary: "",
    created: null,
    queued: null,
    lastSeq: 0,
    totals: null,
    telemetry: null,
    lastUsage: null,
    sidecar: [],
    entries: new Map(),
    total: 0,
    reached: 0,
    unknowns: [],
    replies: new Map(),
    progress: null,
    memo: { session: null, summary: null },
  };
}

/** Takes in a `getRun` answer (a page of history). */
export function applySnapshot(run, snap) {
  // What was missed comes first: the snapshot is newer than any of it.
  for (const missed of snap.missed || []) {
    if (missed.method !== "run/state") continue;
    for (const item of missed.params.history || []) keep(run, item);
    const tel = missed.params.telemetry;
    if (tel && tel.contextDistribution && tel.contextDistribution.length) run.telemetry = tel;
    if (tel && tel.usage) run.lastUsage = tel.usage;
  }
  Object.assign(run, {
    loaded: true,
    status: snap.status,
    turn: snap.turn,
    mode: snap.mode,
    model: snap.model,
    stopReason: snap.stopReason,
    summary: snap.summary || "",
    created: snap.created,
    queued: snap.queued,
    totals: snap.telemetry,
    unknowns: snap.unknowns || [],
  });
  run.lastSeq = Math.max(run.lastSeq, snap.lastSeq || 0);
  if (snap.status !== 102) run.progress = null;
  for (const item of snap.history || []) keep(run, item);
  if (typeof snap.historyTotal === "number") {
    run.total = snap.historyTotal;
    run.reached = Math.max(run.reached, (snap.history || []).length);
  }
}

/** Takes in an older page of history (`getRun {limit, offset}`). */
export function applyOlder(run, snap, offset) {
  for (const item of snap.history || []) if (!run.entries.has(item.path)) keep(run, item);
  run.total = snap.historyTotal ?? run.total;
  run.reached = Math.max(run.reached, offset + (snap.history || []).length);
}

const utf8 = new TextEncoder();
const text = new TextDecoder();

/** A body's size as the server counts it: bytes of its UTF-8 text. */
export function byteLength(body) {
  return utf8.encode(body || "").length;
}

/** An item that appends (`append: true, offset`: a command's output as it grows) applied to
 * the entry the page has: its text goes after the bytes held, what the page already holds of
 * it (a push seen twice) is skipped, and an offset past the end leaves a gap the page reads
 * again (`getBody`). */
function appended(before, item) {
  const held = before ? utf8.encode(before.body || "") : new Uint8Array();
  const added = utf8.encode(item.body || "");
  const base = { ...item, append: undefined, offset: undefined };
  if (item.offset > held.length) return { ...base, body: before ? before.body : "", gap: true };
  const fresh = added.subarray(Math.min(added.length, held.length - item.offset));
  return { ...base, body: (before ? before.body || "" : "") + text.decode(fresh), gap: before ? before.gap : false };
}

function keep(run, item) {
  const before = run.entries.get(item.path);
  if (item.append) {
    run.entries.set(item.path, appended(before, item));
    return;
  }
  run.entries.set(item.path, before && item.body === undefined ? { ...item, body: before.body } : item);
  if (item.path === "session://state") run.memo.session = item.body ?? run.memo.session;
  if (item.path === "summary://run") run.memo.summary = item.body ?? run.memo.summary;
}

/** Takes in a `run/state` push; answers false when it was already seen. */
export function applyState(run, push) {
  if (typeof push.seq === "number") {
    if (push.seq <= run.lastSeq && run.loaded) return false;
    run.lastSeq = Math.max(run.lastSeq, push.seq);
  }
  run.status = push.status;
  run.turn = Math.max(run.turn, push.turn || 0);
  run.stopReason = push.stopReason ?? null;
  run.queued = push.queued ?? null;
  if (push.summary) run.summary = push.summary;
  for (const item of push.history || []) {
    // A new entry is the newest: the page holds it, so what is left to reach back for stays.
    if (!run.entries.has(item.path)) {
      run.total += 1;
      run.reached += 1;
    }
    keep(run, item);
  }
  run.unknowns = push.unknowns || run.unknowns;
  if (push.telemetry) {
    // A turn that assembled no context (it went on after a command) keeps the last picture.
    const dist = push.telemetry.contextDistribution;
    if (dist && dist.length) run.telemetry = push.telemetry;
    run.lastUsage = push.telemetry.usage || run.lastUsage;
    run.sidecar = push.telemetry.sidecar || [];
    const usage = push.telemetry.usage;
    if (usage && run.totals) {
      const sum = { ...run.totals };
      for (const key of ["promptTokens", "cachedTokens", "completionTokens", "reasoningTokens", "totalTokens", "cost"]) {
        sum[key] = (sum[key] || 0) + (usage[key] || 0);
      }
      run.totals = sum;
    }
  }
  if (push.status !== 102) run.progress = null;
  return true;
}

/** Takes in a `run/progress` push: the run's loop is at work on `turn`. A continued loop's first
 * `run/state` comes only when its first turn ends, so until its next `run/state` the run is
 * running (as the progress says), not the 200 of the loop before. */
export function applyProgress(run, push) {
  run.progress = push;
  run.status = 102;
  run.stopReason = null;
  run.turn = Math.max(run.turn, push.turn || 0);
}

/** The same for a run of the list. */
export function progressToList(push) {
  const row = state.runs.get(push.run);
  if (!row) return;
  row.status = 102;
  row.turn = Math.max(row.turn || 0, push.turn || 0);
}

/** The text each run of the project is streaming (its current turn's), whether or not it is
 * open: a run opened while its model writes shows the reply from its first word. */
const streaming = new Map();

/** Takes in streamed model text (`ui/render`) for any run; answers the run's current reply. */
export function recordRender(render) {
  let live = streaming.get(render.run);
  const turn = render.turn ?? (live ? live.turn : 0);
  if (!live || live.turn !== turn) {
    // The first text of a turn comes with append false; one that does not was begun unseen.
    live = { turn, text: "", reasoning: "", live: true, partial: Boolean(render.append) };
    streaming.set(render.run, live);
  }
  const key = render.reasoning ? "reasoning" : "text";
  live[key] = render.append ? live[key] + render.text : render.text;
  return live;
}

/** Shows in the open run what its model is streaming. */
export function applyRender(run) {
  const live = streaming.get(run.alias);
  if (live) run.replies.set(live.turn, { ...live });
  return live ? live.turn : null;
}

/** Updates a run of the list from a push. */
export function applyToList(push) {
  const row = state.runs.get(push.run);
  if (!row) return false;
  row.status = push.status;
  row.turn = Math.max(row.turn || 0, push.turn || 0);
  if (push.summary) row.summary = push.summary;
  const usage = push.telemetry && push.telemetry.usage;
  if (usage) {
    row.tokens = (row.tokens || 0) + (usage.totalTokens || 0);
    row.cost = (row.cost || 0) + (usage.cost || 0);
  }
  return true;
}

/** When an entry is (or was) a tool's proposal, its kind (`edit`, `sh`, `ask_user`, … or a kind
 * this page does not know); null for any other entry. The server says it in `proposal`; from
 * one that does not, a proposal is an entry whose attributes hold `commandIndex`, its kind
 * `attributes.kind`. */
export function proposalKind(entry) {
  if (typeof entry.proposal === "string") return entry.proposal;
  const a = entry.attributes;
  if (!a || typeof a !== "object" || !("commandIndex" in a)) return null;
  return typeof a.kind === "string" ? a.kind : "";
}

/** The proposals of the open run that wait for a decision, oldest first. */
export function pending(run) {
  if (!run) return [];
  return [...run.entries.values()].filter((e) => e.state === "proposed" && proposalKind(e) !== null);
}

/** The open run's entries grouped by turn, in turn order, each turn's in the order they came. */
export function turns(run) {
  const byTurn = new Map();
  for (const entry of run.entries.values()) {
    if (!byTurn.has(entry.turn)) byTurn.set(entry.turn, []);
    byTurn.get(entry.turn).push(entry);
  }
  for (const turn of run.replies.keys()) if (!byTurn.has(turn) && turn > 0) byTurn.set(turn, []);
  return [...byTurn.entries()].sort((a, b) => a[0] - b[0]);
}
