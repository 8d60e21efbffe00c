//! Python-style calls in Gemma's `tool_code` fences: `print(default_api.get(path="a.js"))`.
//!
//! Only a fence that holds nothing but calls is read this way; a fence with
//! any tag in it, or with other code, is parsed as reply text like before.

use std::ops::Range;

use super::native::read_args;
use super::{found, DialectRead, Found};
use crate::parse::warnings::FORMAT_PYTHON;

/// The wrapper Gemma puts around its calls.
const PRINT: &str = "print";

/// Reads a tool fence whose inside is only Python-style calls.
pub(crate) fn read_fence(text: &str, inner: Range<usize>) -> Option<DialectRead> {
    let (start, limit) = (inner.start, inner.end);
    if text[start..limit].contains('<') {
        return None;
    }
    let mut read = DialectRead::new(limit);
    let mut pos = skip_separators(text, start, limit);
    while pos < limit {
        let (call, end) = read_call(text, pos, limit)?;
        read.add(call, FORMAT_PYTHON);
        pos = skip_separators(text, end, limit);
    }
    let any = !read.calls.is_empty() || !read.warnings.is_empty();
    any.then_some(read)
}

/// Reads `name(args)` or `print(name(args))` at `pos`.
fn read_call(text: &str, pos: usize, limit: usize) -> Option<(Found, usize)> {
    let name_end = text[pos..limit]
        .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == '.'))
        .map_or(limit, |i| pos + i);
    let name = &text[pos..name_end];
    let open = skip_blank(text, name_end, limit);
    if name.is_empty() || text.as_bytes().get(open) != Some(&b'(') {
        return None;
    }
    if name == PRINT {
        let inner = skip_blank(text, open + 1, limit);
        let (call, end) = read_call(text, inner, limit)?;
        let close = skip_blank(text, end, limit);
        return (text.as_bytes().get(close) == Some(&b')')).then_some((call, close + 1));
    }
    let (args, end) = read_args(text, open + 1, limit, b')')?;
    Some((found(name, args), end))
}

/// Skips whitespace.
fn skip_blank(text: &str, pos: usize, limit: usize) -> usize {
    text[pos..limit]
        .find(|c: char| !c.is_whitespace())
        .map_or(limit, |i| pos + i)
}

/// Skips whitespace and statement-separating semicolons.
fn skip_separators(text: &str, pos: usize, limit: usize) -> usize {
    text[pos..limit]
        .find(|c: char| !(c.is_whitespace() || c == ';'))
        .map_or(limit, |i| pos + i)
}
