//! Qwen's and Gemma's native calls: `<|tool_call>call:NAME{key:<|"|>v<|"|>, k2:"v", k3:bare}<tool_call|>`.
//!
//! The argument list is a loose `key: value` (or `key=value`) list: values
//! are `<|"|>`-quoted, double- or single-quoted with backslash escapes,
//! bracketed (`[…]`, `{…}`, read as JSON when they are), or bare up to the
//! next comma. The same grammar reads Python-style calls (`python.rs`).

use super::arguments::{Argument, Value};
use super::json::{interpret, parse_at, parse_whole};
use super::{found, skip_space, DialectRead};
use crate::parse::warnings::FORMAT_NATIVE;

/// Markers that open a native call.
const OPENERS: &[&str] = &["<|tool_call|>", "<|tool_call>"];

/// Markers that close one; `<|tool_call>` also closes when no call follows it.
const CLOSERS: &[&str] = &["<tool_call|>", "<|tool_call|>", "</tool_call>"];

/// Gemma's quote token.
const QUOTE: &str = "<|\"|>";

/// Markers that only make sense around a call; alone, they are what is
/// left of one that could not be read.
const STRAYS: &[&str] = &["<tool_call|>", QUOTE];

/// Reads the native call whose marker is at `at`, if `at` holds one.
pub(super) fn read(text: &str, at: usize, limit: usize) -> Option<DialectRead> {
    let rest = &text[at..limit];
    if let Some(stray) = STRAYS.iter().find(|marker| rest.starts_with(**marker)) {
        return Some(DialectRead::unreadable(at + stray.len(), FORMAT_NATIVE));
    }
    let opener = OPENERS.iter().find(|marker| rest.starts_with(**marker))?;
    let after_marker = at + opener.len();
    let start = skip_space(text, after_marker, limit);
    let read = if text.as_bytes().get(start) == Some(&b'{') {
        // Some templates put an OpenAI-style object inside the markers.
        parse_at(text, start, limit).map(|(value, end)| {
            let mut read = DialectRead::new(end);
            read.add(interpret(&value), FORMAT_NATIVE);
            read
        })
    } else {
        read_named(text, start, limit)
    };
    Some(match read {
        Some(mut read) => {
            read.end = skip_closer(text, read.end, limit);
            read
        }
        None => DialectRead::unreadable(after_marker, FORMAT_NATIVE),
    })
}

/// Reads `call:NAME{…}` (the `call:` prefix is optional) at `start`.
fn read_named(text: &str, start: usize, limit: usize) -> Option<DialectRead> {
    let name_end = text[start..limit]
        .find(|c: char| !(c.is_alphanumeric() || matches!(c, '_' | '.' | ':' | '/' | '-')))
        .map_or(limit, |i| start + i);
    let written = &text[start..name_end];
    let name = written.strip_prefix("call:").unwrap_or(written);
    let open = skip_space(text, name_end, limit);
    let close = match text.as_bytes().get(open) {
        Some(b'{') => b'}',
        Some(b'(') => b')',
        _ => return None,
    };
    if name.is_empty() {
        return None;
    }
    let (args, end) = read_args(text, open + 1, limit, close)?;
    let mut read = DialectRead::new(end);
    read.add(found(name, args), FORMAT_NATIVE);
    Some(read)
}

/// Skips a closing marker after a call ending at `pos`, if there is one.
fn skip_closer(text: &str, pos: usize, limit: usize) -> usize {
    let at = skip_space(text, pos, limit);
    let rest = &text[at..limit];
    if let Some(closer) = CLOSERS.iter().find(|marker| rest.starts_with(**marker)) {
        return at + closer.len();
    }
    // `<|tool_call>` closes too, unless it opens the next call.
    if let Some(after) = rest.strip_prefix("<|tool_call>") {
        let next = after.trim_start_matches([' ', '\t']);
        let opens_call = next
            .chars()
            .next()
            .is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '{');
        if !opens_call {
            return at + "<|tool_call>".len();
        }
    }
    pos
}

/// Reads a `key: value, …` list from `pos` (just inside the opening
/// bracket) to the `close` byte; returns the arguments and the offset just
/// past `close`, or `None` when the list is broken or never closes.
pub(super) fn read_args(
    text: &str,
    pos: usize,
    limit: usize,
    close: u8,
) -> Option<(Vec<Argument>, usize)> {
    let bytes = text.as_bytes();
    let mut args = Vec::new();
    let mut pos = pos;
    loop {
        while pos < limit && (bytes[pos].is_ascii_whitespace() || bytes[pos] == b',') {
            pos += 1;
        }
        if *bytes.get(pos)? == close {
            return Some((args, pos + 1));
        }
        let (key, value_at) = match read_key(text, pos, limit) {
            Some((key, after)) => (Some(key), after),
            None => (None, pos),
        };
        let (value, end) = read_value(text, value_at, limit, close)?;
        args.push(Argument { key, value });
        pos = skip_space(text, end, limit);
        if !matches!(bytes.get(pos), Some(&b) if b == b',' || b == close) {
            return None;
        }
    }
}

/// Reads `key:` or `key=` at `pos`: the key and where its value starts.
fn read_key(text: &str, pos: usize, limit: usize) -> Option<(String, usize)> {
    let bytes = text.as_bytes();
    let (key, after) = match bytes.get(pos)? {
        b'"' | b'\'' => {
            let (key, end) = read_quoted(text, pos, limit)?;
            (key, end)
        }
        _ if text[pos..limit].starts_with(QUOTE) => read_gemma_quoted(text, pos, limit)?,
        _ => {
            let end = text[pos..limit]
                .find(|c: char| !(c.is_alphanumeric() || matches!(c, '_' | '-' | '.')))
                .map_or(limit, |i| pos + i);
            if end == pos {
                return None;
            }
            (text[pos..end].to_owned(), end)
        }
    };
    let sep = skip_space(text, after, limit);
    match bytes.get(sep)? {
        // `known://plan` is a positional value, not the key `known`.
        b':' if text[sep..limit].starts_with("://") => None,
        b':' | b'=' => Some((key, sep + 1)),
        _ => None,
    }
}

/// Reads one value at `pos`; returns it and where it ends.
fn read_value(text: &str, pos: usize, limit: usize, close: u8) -> Option<(Value, usize)> {
    let pos = skip_space(text, pos, limit);
    let bytes = text.as_bytes();
    if text[pos..limit].starts_with(QUOTE) {
        let (value, end) = read_gemma_quoted(text, pos, limit)?;
        return Some((Value::Text(value), end));
    }
    match *bytes.get(pos)? {
        b'"' | b'\'' => {
            let (value, end) = read_quoted(text, pos, limit)?;
            Some((Value::Text(value), end))
        }
        b'{' | b'[' => {
            let end = bracket_end(text, pos, limit)?;
            let raw = &text[pos..end];
            let value = parse_whole(&raw.replace(QUOTE, "\""))
                .map_or_else(|| Value::Text(raw.to_owned()), Value::Json);
            Some((value, end))
        }
        _ => {
            let end = text[pos..limit]
                .find(|c: char| c == ',' || c == char::from(close))
                .map(|i| pos + i)?;
            Some((Value::Text(text[pos..end].trim().to_owned()), end))
        }
    }
}

/// Reads `<|"|>…<|"|>` at `pos`: the raw text and where it ends.
fn read_gemma_quoted(text: &str, pos: usize, limit: usize) -> Option<(String, usize)> {
    let start = pos + QUOTE.len();
    let end = text[start..limit].find(QUOTE).map(|i| start + i)?;
    Some((text[start..end].to_owned(), end + QUOTE.len()))
}

/// Reads a `"…"` or `'…'` string at `pos` with backslash escapes decoded.
fn read_quoted(text: &str, pos: usize, limit: usize) -> Option<(String, usize)> {
    let quote = text.as_bytes()[pos];
    let mut out = String::new();
    let mut chars = text[pos + 1..limit].char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '\\' => {
                let Some((_, escaped)) = chars.next() else {
                    break;
                };
                match escaped {
                    'n' => out.push('\n'),
                    't' => out.push('\t'),
                    'r' => out.push('\r'),
                    'u' => {
                        let hex: String = chars.clone().take(4).map(|(_, c)| c).collect();
                        match u32::from_str_radix(&hex, 16).ok().and_then(char::from_u32) {
                            Some(decoded) if hex.len() == 4 => {
                                out.push(decoded);
                                chars.nth(3);
                            }
                            _ => out.push_str("\\u"),
                        }
                    }
                    '"' | '\'' | '\\' | '/' => out.push(escaped),
                    // An escape we do not know is kept as the model wrote it.
                    other => {
                        out.push('\\');
                        out.push(other);
                    }
                }
            }
            c if c == char::from(quote) => return Some((out, pos + 1 + i + 1)),
            c => out.push(c),
        }
    }
    None
}

/// The offset just past the bracket matching the one at `pos`, skipping
/// quoted strings.
fn bracket_end(text: &str, pos: usize, limit: usize) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut depth = 0usize;
    let mut i = pos;
    while i < limit {
        // Only ASCII bytes are looked at, so every slice starts on a character.
        if bytes[i] == b'<' && text[i..limit].starts_with(QUOTE) {
            let (_, end) = read_gemma_quoted(text, i, limit)?;
            i = end;
            continue;
        }
        match bytes[i] {
            b'"' => {
                let (_, end) = read_quoted(text, i, limit)?;
                i = end;
                continue;
            }
            b'{' | b'[' => depth += 1,
            b'}' | b']' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return Some(i + 1);
                }
            }
            _ => {}
        }
        i += 1;
    }
    None
}
