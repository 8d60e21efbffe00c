//! Spotting a tool command in prose that the parser could not read.
//!
//! When a reply has no commands, its prose is taken as the answer — unless
//! the model clearly tried to act and the call was mangled; then the model
//! must be told its command was not read. Code spans only
//! quote, so they never count; the inside of a `tool_code` fence does.

use super::dialect::tool_of;
use super::markdown::{classify, Backticks, FenceMemo};

/// Native-call markers, lower-cased: any of them is an attempted call.
const MARKERS: &[&str] = &[
    "<|tool_call",
    "tool_call|>",
    "[tool_calls]",
    "<tool_call",
    "</tool_call",
    "<tool_use",
    "<function_call",
    "<invoke",
    "<|\"|>",
    "<function=",
];

/// Whether `text` holds something that looks like a failed or mangled tool call.
pub(crate) fn looks_like_tool_call(text: &str) -> bool {
    let limit = text.len();
    let mut pos = 0;
    let mut segment = 0;
    let mut unclosed = FenceMemo::default();
    while let Some(i) = text[pos..].find('`') {
        let at = pos + i;
        match classify(text, at, limit, &mut unclosed) {
            Backticks::Literal(end) => pos = end,
            Backticks::Quoted(end) => {
                if suspicious(&text[segment..at]) {
                    return true;
                }
                segment = end;
                pos = end;
            }
            Backticks::ToolFence { inner, .. } => pos = inner.start,
        }
    }
    suspicious(&text[segment..])
}

/// Whether a stretch of unquoted prose looks like an attempted call.
fn suspicious(prose: &str) -> bool {
    let lower = prose.to_ascii_lowercase();
    MARKERS.iter().any(|marker| lower.contains(marker))
        || has_tool_tag(&lower)
        || has_json_call(&lower)
        || has_call_syntax(&lower)
}

/// The identifier (letters, digits, `_`, `.`, `:`, `/`, `-`) starting at `at`.
fn word_at(text: &str, at: usize) -> &str {
    let end = text[at..]
        .find(|c: char| !(c.is_alphanumeric() || matches!(c, '_' | '.' | ':' | '/' | '-')))
        .map_or(text.len(), |i| at + i);
    &text[at..end]
}

/// A tool tag or fragment: `<get`, `</set>`, `<update status=…` — a tool
/// name right after `<` or `</`, then a tag-like character or the end.
fn has_tool_tag(lower: &str) -> bool {
    lower.match_indices('<').any(|(at, _)| {
        let start = at + 1 + usize::from(lower[at + 1..].starts_with('/'));
        let end = lower[start..]
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .map_or(lower.len(), |i| start + i);
        let follows_tag = lower[end..]
            .chars()
            .next()
            .is_none_or(|c| c.is_whitespace() || c == '/' || c == '>');
        end > start && follows_tag && super::command_tag(&lower[start..end]).is_some()
    })
}

/// A JSON call: `"name": "<one of our tools>"`.
fn has_json_call(lower: &str) -> bool {
    lower.match_indices("\"name\"").any(|(at, key)| {
        let rest = lower[at + key.len()..].trim_start();
        let Some(rest) = rest.strip_prefix(':') else {
            return false;
        };
        let Some(rest) = rest.trim_start().strip_prefix('"') else {
            return false;
        };
        rest.split('"')
            .next()
            .is_some_and(|name| tool_of(name).is_some())
    })
}

/// Call syntax naming one of our tools: `call:get{…`, or a Python-style
/// `get(path=…` (a tool name, a bracket, then a keyword argument).
fn has_call_syntax(lower: &str) -> bool {
    let native = lower.match_indices("call:").any(|(at, _)| {
        let name = word_at(lower, at);
        let after = lower[at + name.len()..].trim_start();
        after.starts_with(['{', '(']) && tool_of(name).is_some()
    });
    native
        || lower.match_indices('(').any(|(at, _)| {
            let before = &lower[..at];
            let start = before
                .char_indices()
                .rev()
                .find(|(_, c)| !(c.is_alphanumeric() || *c == '_' || *c == '.'))
                .map_or(0, |(i, c)| i + c.len_utf8());
            let after = lower[at + 1..].trim_start();
            let key_end = after
                .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                .unwrap_or(after.len());
            let keyword = after[key_end..].trim_start();
            start < at
                && tool_of(&before[start..]).is_some()
                && key_end > 0
                && keyword.starts_with('=')
                && !keyword.starts_with("==")
        })
}
