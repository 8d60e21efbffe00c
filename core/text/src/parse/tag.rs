//! Tolerant scanning of tool tags the strict XML tokenizer rejected.
//!
//! Models write `<get path=a.js>`, `<get path="a.js" preview/>` or forget a
//! closing quote. xmlparser stops at the first such error; for tool tags we
//! then re-read the tag here, byte by byte, and always come back with an end.

use super::entities::decode;
use super::{command_tag, Tag};

/// One open tool tag as recovered by [`scan_open_tag`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ScannedTag {
    /// Lower-cased names and decoded values, in source order.
    pub attributes: Vec<(String, String)>,
    /// Whether the tag ended with `/>`.
    pub self_closing: bool,
    /// Byte offset just past the tag: where the body (or following text) starts.
    pub end: usize,
    /// How many attribute values had an unclosed quote and were cut short.
    pub repaired: usize,
}

/// Whitespace as XML counts it.
fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | b'\x0c')
}

/// Bytes that end an attribute name (or an unquoted value, minus `=`).
fn ends_name(b: u8) -> bool {
    is_space(b) || matches!(b, b'=' | b'>' | b'/' | b'<' | b'"' | b'\'')
}

/// Reads the attributes of an open tag whose name ends at `pos`, stopping at
/// `limit`. Never fails: a tag cut off by `<` or the end of text ends there.
pub(crate) fn scan_open_tag(text: &str, pos: usize, limit: usize) -> ScannedTag {
    let bytes = &text.as_bytes()[..limit];
    let mut tag = ScannedTag {
        attributes: Vec::new(),
        self_closing: false,
        end: limit,
        repaired: 0,
    };
    let mut i = pos;
    loop {
        while i < limit && is_space(bytes[i]) {
            i += 1;
        }
        let Some(&b) = bytes.get(i) else {
            return tag;
        };
        match b {
            b'>' => {
                tag.end = i + 1;
                return tag;
            }
            b'/' => {
                // `/>`, and also `/ >`, which is clearly meant as self-closing.
                let mut j = i + 1;
                while j < limit && is_space(bytes[j]) {
                    j += 1;
                }
                if bytes.get(j) == Some(&b'>') {
                    tag.self_closing = true;
                    tag.end = j + 1;
                    return tag;
                }
                i += 1;
            }
            // The tag's `>` is missing; the next tag starts here.
            b'<' => {
                tag.end = i;
                return tag;
            }
            // Stray punctuation between attributes carries nothing.
            b'"' | b'\'' | b'=' => i += 1,
            _ => {
                let name_start = i;
                while i < limit && !ends_name(bytes[i]) {
                    i += 1;
                }
                let name = text[name_start..i].to_lowercase();
                let mut j = i;
                while j < limit && is_space(bytes[j]) {
                    j += 1;
                }
                if bytes.get(j) != Some(&b'=') {
                    // A bare attribute like `preview` is present with no value.
                    tag.attributes.push((name, String::new()));
                    continue;
                }
                j += 1;
                while j < limit && is_space(bytes[j]) {
                    j += 1;
                }
                match bytes.get(j) {
                    Some(&quote) if quote == b'"' || quote == b'\'' => {
                        match scan_quoted(bytes, j + 1, quote) {
                            Ok(close) => {
                                tag.attributes.push((name, decode(&text[j + 1..close])));
                                i = close + 1;
                            }
                            Err(stop) => {
                                tag.repaired += 1;
                                return finish_repaired(text, tag, name, j + 1, stop);
                            }
                        }
                    }
                    _ => {
                        let value_start = j;
                        while j < limit
                            && !is_space(bytes[j])
                            && bytes[j] != b'>'
                            && bytes[j] != b'<'
                            && !(bytes[j] == b'/' && bytes.get(j + 1) == Some(&b'>'))
                        {
                            j += 1;
                        }
                        tag.attributes.push((name, decode(&text[value_start..j])));
                        i = j;
                    }
                }
            }
        }
    }
}

/// Where an unclosed quoted value stops.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cut {
    /// At a `>`, which then ends the tag.
    Gt(usize),
    /// At a `<`, a newline or the end of text, where the body starts.
    Before(usize),
}

/// Finds the closing `quote` of a value starting at `start`: `Ok(index)` of
/// the quote, or where to cut the value when it never closes.
///
/// A value must close on its own line before any `<`; a quote found later
/// belongs to prose or another tag, and taking it would swallow both.
fn scan_quoted(bytes: &[u8], start: usize, quote: u8) -> Result<usize, Cut> {
    let mut first_gt = None;
    for (offset, &b) in bytes[start..].iter().enumerate() {
        let at = start + offset;
        if b == quote {
            return Ok(at);
        }
        match b {
            b'<' | b'\n' => return Err(first_gt.map_or(Cut::Before(at), Cut::Gt)),
            b'>' if first_gt.is_none() => first_gt = Some(at),
            _ => {}
        }
    }
    Err(first_gt.map_or(Cut::Before(bytes.len()), Cut::Gt))
}

/// Ends a tag whose last value (`name`, from `value_start`) never closed its
/// quote: the value stops at the cut, and so does the tag.
fn finish_repaired(
    text: &str,
    mut tag: ScannedTag,
    name: String,
    value_start: usize,
    cut: Cut,
) -> ScannedTag {
    let value = match cut {
        Cut::Gt(at) => {
            tag.end = at + 1;
            let value = text[value_start..at].trim_end();
            match value.strip_suffix('/') {
                Some(stripped) => {
                    tag.self_closing = true;
                    stripped.trim_end()
                }
                None => value,
            }
        }
        Cut::Before(at) => {
            // At `<` or a newline the body starts right there.
            tag.end = at;
            text[value_start..at].trim_end()
        }
    };
    tag.attributes.push((name, decode(value)));
    tag
}

/// Recognises a tool close tag the tokenizer rejected (`</set` with no `>`,
/// `</set foo>`): the tool and the end of what counts as the tag.
pub(crate) fn scan_close_tag(text: &str, start: usize, limit: usize) -> Option<(Tag, usize)> {
    let bytes = &text.as_bytes()[..limit];
    let name_start = start + 2;
    if bytes.get(start..name_start) != Some(b"</") {
        return None;
    }
    let mut i = name_start;
    while i < limit
        && (bytes[i].is_ascii_alphanumeric()
            || matches!(bytes[i], b'_' | b'-' | b'.' | b':')
            || bytes[i] >= 0x80)
    {
        i += 1;
    }
    let tool = command_tag(&text[name_start..i])?;
    let mut j = i;
    while j < limit && matches!(bytes[j], b' ' | b'\t') {
        j += 1;
    }
    let end = if bytes.get(j) == Some(&b'>') {
        j + 1
    } else {
        i
    };
    Some((tool, end))
}
