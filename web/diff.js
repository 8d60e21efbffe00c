// A unified diff (an edit proposal's `attributes.patch`) shown unified or side by side.

import { h } from "./dom.js";

/** Parses a unified diff into hunks of lines: {kind: " " | "+" | "-", text, old, new}. */
export function parse(patch) {
  const hunks = [];
  let hunk = null;
  let oldNo = 0;
  let newNo = 0;
  for (const line of (patch || "").split("\n")) {
    const head = line.match(/^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@(.*)$/);
    if (head) {
      oldNo = Number(head[1]);
      newNo = Number(head[2]);
      hunk = { head: line, lines: [] };
      hunks.push(hunk);
    } else if (line.startsWith("---") || line.startsWith("+++") || line.startsWith("\\")) {
      continue;
    } else if (hunk && line.length > 0) {
      const kind = line[0];
      const text = line.slice(1);
      if (kind === "+") hunk.lines.push({ kind, text, new: newNo++ });
      else if (kind === "-") hunk.lines.push({ kind, text, old: oldNo++ });
      else hunk.lines.push({ kind: " ", text, old: oldNo++, new: newNo++ });
    }
  }
  return hunks;
}

const rowClass = { "+": "add", "-": "del", " ": "" };

/** The diff as one column, old and new line numbers beside it. */
function unified(hunks) {
  const rows = [];
  for (const hunk of hunks) {
    rows.push(h("tr.hunk", h("td.n", ""), h("td.n", ""), h("td.t", hunk.head)));
    for (const l of hunk.lines) {
      rows.push(
        h(`tr${rowClass[l.kind] ? "." + rowClass[l.kind] : ""}`,
          h("td.n", l.old ?? ""), h("td.n", l.new ?? ""), h("td.t", `${l.kind}${l.text}`)),
      );
    }
  }
  return h("table.unified", h("tbody", rows));
}

/** The diff as two columns: removals on the left, additions on the right, paired in order. */
function split(hunks) {
  const rows = [];
  for (const hunk of hunks) {
    rows.push(h("tr.hunk", h("td.n", ""), h("td.t", { colspan: "3" }, hunk.head)));
    let dels = [];
    let adds = [];
    const flush = () => {
      for (let i = 0; i < Math.max(dels.length, adds.length); i++) {
        const d = dels[i];
        const a = adds[i];
        rows.push(h("tr",
          h(`td.n${d ? ".del" : ""}`, d ? d.old : ""), h(`td.t${d ? ".del" : ".empty"}`, d ? d.text : ""),
          h(`td.n${a ? ".add" : ""}`, a ? a.new : ""), h(`td.t${a ? ".add" : ".empty"}`, a ? a.text : "")));
      }
      dels = [];
      adds = [];
    };
    for (const l of hunk.lines) {
      if (l.kind === "-") dels.push(l);
      else if (l.kind === "+") adds.push(l);
      else {
        flush();
        rows.push(h("tr", h("td.n", l.old), h("td.t", l.text), h("td.n", l.new), h("td.t", l.text)));
      }
    }
    flush();
  }
  return h("table.split", h("tbody", rows));
}

/** The diff view in `mode` ("unified" or "split"). */
export function diffView(patch, mode) {
  const hunks = parse(patch);
  if (hunks.length === 0) return h("pre.diff", patch || "(no changes)");
  return h("div.diff", { dataset: { mode } }, mode === "split" ? split(hunks) : unified(hunks));
}
