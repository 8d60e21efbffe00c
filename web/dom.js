// Small DOM helpers: element building without innerHTML (no markup is ever parsed from data),
// and the formatting of numbers, costs, ages and statuses.

/** Builds an element: h("div.card#id", {attrs, on: {click}}, ...children). */
export function h(spec, props, ...children) {
  if (props === null || typeof props !== "object" || props instanceof Node || Array.isArray(props)) {
    if (props !== undefined && props !== null) children.unshift(props);
    props = {};
  }
  const [, tag = "div", rest = ""] = spec.match(/^([a-z0-9-]*)(.*)$/i);
  const el = document.createElement(tag || "div");
  for (const part of rest.match(/[.#][^.#]+/g) || []) {
    if (part[0] === ".") el.classList.add(part.slice(1));
    else el.id = part.slice(1);
  }
  for (const [key, value] of Object.entries(props)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "on") for (const [ev, fn] of Object.entries(value)) el.addEventListener(ev, fn);
    else if (key === "dataset") Object.assign(el.dataset, value);
    else if (key === "text") el.textContent = value;
    // Through the CSSOM: the page's policy forbids style attributes, not style properties.
    else if (key === "style") el.style.cssText = value;
    else if (key in el && typeof value !== "string") el[key] = value;
    else el.setAttribute(key, value === true ? "" : value);
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    if (Array.isArray(child)) append(el, child);
    else el.append(child instanceof Node ? child : String(child));
  }
}

/** Replaces an element's children. */
export function fill(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

const compact = new Intl.NumberFormat(undefined, { notation: "compact", maximumFractionDigits: 1 });
const whole = new Intl.NumberFormat();

/** A token count: 1.2K, 34K. */
export const tokens = (n) => (n >= 10000 ? compact.format(n) : whole.format(n || 0));

/** A cost in US dollars. */
export function cost(usd) {
  if (!usd) return "$0";
  return usd < 0.01 ? `$${usd.toFixed(4)}` : `$${usd.toFixed(2)}`;
}

/** How long ago an RFC 3339 time was: "3 min ago". */
export function age(rfc3339, now = Date.now()) {
  const then = Date.parse(rfc3339 || "");
  if (Number.isNaN(then)) return "";
  const s = Math.max(0, Math.round((now - then) / 1000));
  if (s < 45) return "just now";
  const m = Math.round(s / 60);
  if (m < 60) return `${m} min ago`;
  const hrs = Math.round(m / 60);
  if (hrs < 36) return `${hrs} h ago`;
  return `${Math.round(hrs / 24)} d ago`;
}

const STATUS = {
  100: ["queued", "wait"],
  102: ["running", "run"],
  200: ["done", "ok"],
  202: ["needs you", "wait"],
  413: ["context full", "bad"],
  499: ["cancelled", "idle"],
  500: ["failed", "bad"],
  508: ["abandoned", "bad"],
};

/** A run status as a badge. */
export function statusBadge(status, stopReason) {
  const [label, tone] = STATUS[status] || [String(status), "idle"];
  const text = status === 200 && stopReason === "max_turns" ? "turn limit" : label;
  return h("span.status", { dataset: { tone, status: String(status) }, title: `status ${status}` }, text);
}

/** Whether a run status means a loop is under way. */
export const active = (status) => status === 100 || status === 102 || status === 202;

/** An entry's HTTP-like code, with its tone. */
export function codeBadge(status, state) {
  const tone = state === "proposed" ? "wait" : state === "streaming" ? "run" : status >= 400 ? "bad" : "ok";
  return h("span.code", { dataset: { tone } }, state === "resolved" ? String(status) : state);
}

/** A side task a run waits for (`run/progress` status `sidecar`, its `detail`), in words. */
const SIDE_TASKS = {
  summary: "summarising what leaves the context",
  "summary.extend": "extending the summary",
  "summary.compress": "compressing the summary",
  session_state: "updating the session state",
  rerank: "re-ranking what it recalls",
  consolidate: "consolidating what it learned",
};

/** What a run is doing (`run/progress`), in a line: "turn 4: thinking", "turn 4: retrying (…)",
 * "turn 4: sidecar — updating the session state". */
export function activity(p) {
  if (p.status === "sidecar") return `turn ${p.turn}: sidecar — ${SIDE_TASKS[p.detail] || p.detail || "a side task"}`;
  return `turn ${p.turn}: ${p.status}${p.detail ? ` (${p.detail})` : ""}`;
}
