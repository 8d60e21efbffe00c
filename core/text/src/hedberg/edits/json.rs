//! JSON edits: `{"search": …, "replace": …}` (or an array of them), and the loose `{search="…", replace="…"}`.
//!
//! An object with any other key is content (a JSON file being written), not an edit.

use serde_json::{Map, Value};

use super::Block;

/// The blocks of a JSON or loose edit body (already trimmed), or `None` if it is not one.
pub fn parse(text: &str) -> Option<Vec<Block>> {
    if !text.starts_with(['{', '[']) || !text.contains("search") {
        return None;
    }
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(map)) => Some(vec![block(&map)?]),
        Ok(Value::Array(items)) if !items.is_empty() => items
            .iter()
            .map(|item| item.as_object().and_then(block))
            .collect(),
        Ok(_) => None,
        Err(_) => loose(text).map(|b| vec![b]),
    }
}

/// One `{search, replace}` object with no other keys.
fn block(map: &Map<String, Value>) -> Option<Block> {
    if map.keys().any(|k| k != "search" && k != "replace") {
        return None;
    }
    let search = map.get("search")?.as_str()?;
    let replace = match map.get("replace") {
        None | Some(Value::Null) => "",
        Some(value) => value.as_str()?,
    };
    Some(Block::literal(search, replace))
}

/// The loose form: `{ search = "…", replace = "…" }`, `=` or `:`, keys bare or quoted,
/// values in double or single quotes with backslash escapes.
fn loose(text: &str) -> Option<Block> {
    let mut rest = text.strip_prefix('{')?;
    let mut search = None;
    let mut replace = None;
    loop {
        rest = rest.trim_start();
        if let Some(after) = rest.strip_prefix('}') {
            if !after.trim().is_empty() {
                return None;
            }
            break;
        }
        let (key, after) = key(rest)?;
        let after = after.trim_start();
        let after = after.strip_prefix(['=', ':'])?.trim_start();
        let (value, after) = quoted(after)?;
        match key {
            "search" => search = Some(value),
            "replace" => replace = Some(value),
            _ => return None,
        }
        rest = after.trim_start();
        rest = rest.strip_prefix(',').unwrap_or(rest);
    }
    Some(Block::literal(&search?, &replace.unwrap_or_default()))
}

/// A key, bare or quoted, at the start of `text`.
fn key(text: &str) -> Option<(&str, &str)> {
    for quote in ['"', '\''] {
        if let Some(after) = text.strip_prefix(quote) {
            let end = after.find(quote)?;
            return Some((&after[..end], &after[end + 1..]));
        }
    }
    let end = text
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(text.len());
    (end > 0).then(|| (&text[..end], &text[end..]))
}

/// A quoted value at the start of `text`, unescaped, and the text after it.
fn quoted(text: &str) -> Option<(String, &str)> {
    let quote = text.chars().next().filter(|&c| c == '"' || c == '\'')?;
    let mut out = String::new();
    let mut chars = text[1..].char_indices();
    while let Some((at, c)) = chars.next() {
        match c {
            '\\' => match chars.next()?.1 {
                'n' => out.push('\n'),
                't' => out.push('\t'),
                'r' => out.push('\r'),
                escaped @ ('"' | '\'' | '\\') => out.push(escaped),
                other => {
                    out.push('\\');
                    out.push(other);
                }
            },
            c if c == quote => return Some((out, &text[1 + at + 1..])),
            c => out.push(c),
        }
    }
    None
}
