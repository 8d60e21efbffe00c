//! `get`: show entries in full (promote them), read a slice of one without promoting it, or preview what a pattern selects; where the model's web fetch is on, fetch a web page ([`fetch`]).
//!
//! Views: the result body when visible, nothing when summarized.

pub mod fetch;

use super::handler::{path_and_filter, read_target, visibility_of, Handler, Target, ToolResult};
use super::wording::{self, listing, not_found};
use rummy_store::entries::ViewRow;
use rummy_store::entry::FailureKind;
use rummy_store::entry::{Visibility, Writer};
use rummy_store::StoreError;
use rummy_text::parse::ToolCall;

/// The model-facing doc.
pub const DOC: &str = include_str!("doc.md");

/// `line`/`limit` on something that is not one path.
pub const LINE_NEEDS_PATH: &str = "line/limit requires a single path, not a pattern or body filter";

/// A `line` that is no whole number.
pub const BAD_LINE: &str = "line must be a whole number (negative counts from the end)";

/// A `limit` that is no whole number of at least 1.
pub const BAD_LIMIT: &str = "limit must be a whole number of at least 1";

/// Runs `get`.
pub fn run(h: &mut Handler<'_>, call: &ToolCall) -> Result<ToolResult, StoreError> {
    let (raw, filter) = path_and_filter(call);
    let Some(raw) = raw else {
        return Ok(ToolResult::failed(
            "",
            FailureKind::Validation,
            wording::PATH_REQUIRED,
        ));
    };
    let invalid = |reason: &str| Ok(ToolResult::failed(raw, FailureKind::Validation, reason));
    let visibility = match visibility_of(call) {
        Ok(v) => v,
        Err(reason) => return invalid(reason),
    };
    let line = match call.attr("line").map(|l| l.trim().parse::<i64>()) {
        None => None,
        Some(Ok(l)) => Some(l),
        Some(Err(_)) => return invalid(BAD_LINE),
    };
    let limit = match call.attr("limit").map(|l| l.trim().parse::<i64>()) {
        None => None,
        Some(Ok(n)) if n >= 1 => Some(n),
        Some(_) => return invalid(BAD_LIMIT),
    };
    let plain = filter.is_none() && line.is_none() && limit.is_none();
    if let Some(domains) = h.ctx.web_domains.clone() {
        if plain && call.attr("preview").is_none() && fetch::is_url(raw) {
            if let Some(result) = fetch::get(h, raw.trim(), &domains)? {
                return Ok(result);
            }
        }
    }
    let target = match read_target(raw, filter) {
        Ok(target) => target,
        Err(reason) => return invalid(&reason),
    };
    if line.is_some() || limit.is_some() {
        let Target::Exact(path) = &target else {
            return invalid(LINE_NEEDS_PATH);
        };
        return Ok(match h.find(path)? {
            None => ToolResult::resolved(path, not_found(raw)),
            Some(row) => ToolResult::resolved(path, slice(&row.body, line, limit)),
        });
    }
    let rows = h.select(&target, filter)?;
    if rows.is_empty() {
        return Ok(ToolResult::resolved(target.as_str(), not_found(raw)));
    }
    let preview = call.attr("preview").is_some();
    let visibility = visibility.unwrap_or(Visibility::Visible);
    if !preview {
        // Promoting is reading: the model may bring any entry it can see into
        // view, its prompt and skills included, so promotion acts with the
        // plugin tier. Any other visibility is the model's own write.
        let writer = if visibility == Visibility::Visible {
            Writer::Plugin
        } else {
            Writer::Model
        };
        h.show(&rows, visibility, writer)?;
    }
    let body = match (&target, &rows[..]) {
        (Target::Exact(path), [row]) if !preview => shown(path, row, visibility),
        _ => matched(&target, filter, &rows, preview, visibility),
    };
    Ok(ToolResult::resolved(target.as_str(), body))
}

/// "src/app.js promoted (120 tokens)".
fn shown(path: &str, row: &ViewRow, visibility: Visibility) -> String {
    match visibility {
        Visibility::Visible => format!("{path} promoted ({} tokens)", row.tokens),
        other => format!("{path} set to {} ({} tokens)", other.as_str(), row.tokens),
    }
}

/// `[PREVIEW ]get path="p"[ body="f"]: K matched (T tokens)`, then `path (tokens)` per match.
fn matched(
    target: &Target,
    filter: Option<&str>,
    rows: &[ViewRow],
    preview: bool,
    visibility: Visibility,
) -> String {
    let total: i64 = rows.iter().map(|r| i64::from(r.tokens)).sum();
    let mut head = format!(
        "{}get path=\"{}\"",
        if preview { "PREVIEW " } else { "" },
        target.as_str()
    );
    if let Some(filter) = filter {
        head.push_str(&format!(" body=\"{filter}\""));
    }
    head.push_str(&format!(": {} matched ({total} tokens)", rows.len()));
    if !preview && visibility != Visibility::Visible {
        head.push_str(&format!(", now {}", visibility.as_str()));
    }
    let lines = listing(rows.iter().map(|r| format!("{} ({})", r.path, r.tokens)));
    format!("{head}\n{lines}")
}

/// `[lines S–E / T total]` and those lines; a negative `line` counts from the end.
pub fn slice(body: &str, line: Option<i64>, limit: Option<i64>) -> String {
    let lines: Vec<&str> = body.lines().collect();
    let total = i64::try_from(lines.len()).unwrap_or(i64::MAX);
    let start = match line {
        Some(l) if l < 0 => (total + l + 1).max(1),
        Some(l) => l.max(1),
        None => 1,
    };
    if start > total {
        return format!("[line {start} is past the end / {total} total]");
    }
    let end = limit.map_or(total, |n| start.saturating_add(n - 1).min(total));
    let from = usize::try_from(start - 1).unwrap_or(0);
    let to = usize::try_from(end).unwrap_or(lines.len());
    format!(
        "[lines {start}–{end} / {total} total]\n{}",
        lines[from..to].join("\n")
    )
}
