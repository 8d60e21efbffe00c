//! Regular expressions as models write them: JavaScript-style flags and `$1` / `\1` references, on the `regex` crate.
//!
//! The `regex` crate has no look-around or back-references; a pattern that
//! needs them does not compile, and callers fall back to literal text.

use regex::{Captures, Regex, RegexBuilder};

/// Compiled regexes are capped at 1 MiB so a hostile pattern cannot eat memory.
const SIZE_LIMIT: usize = 1 << 20;

/// How a replacement template is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// JavaScript `String.replace`: `$&`, `$1`, `$<name>`, `$$`.
    Js,
    /// sed: the JavaScript forms plus `\1`…`\9` and backslash-escaped punctuation.
    Sed,
}

/// Compiles `body` with JavaScript-style `flags`.
///
/// `i`, `m` and `s` map to the crate's flags; `g`, `y`, `u`, `d` and `v` change
/// nothing here (matching is never stateful). `multi_line` forces `^`/`$` to
/// anchor at lines, as sed does. CRLF mode makes `$` stop before `\r\n`.
pub fn build(body: &str, flags: &str, multi_line: bool) -> Result<Regex, regex::Error> {
    RegexBuilder::new(body)
        .case_insensitive(flags.contains(['i', 'I']))
        .multi_line(multi_line || flags.contains(['m', 'M']))
        .dot_matches_new_line(flags.contains('s'))
        .crlf(true)
        .size_limit(SIZE_LIMIT)
        .build()
}

/// True when `c` is punctuation a regex or sed would let a backslash escape.
pub fn is_escapable(c: char) -> bool {
    c.is_ascii_punctuation()
}

/// Appends the expansion of `template` for one match to `out`.
pub fn expand(caps: &Captures<'_>, template: &str, style: Style, out: &mut String) {
    let mut at = 0;
    while let Some(c) = template[at..].chars().next() {
        at += c.len_utf8();
        match c {
            '$' => {
                let (used, text) = dollar(caps, &template[at..]);
                out.push_str(text.unwrap_or("$"));
                at += used;
            }
            '\\' if style == Style::Sed => match template[at..].chars().next() {
                Some(digit @ '1'..='9') => {
                    at += 1;
                    let group = digit as usize - '0' as usize;
                    out.push_str(caps.get(group).map_or("", |m| m.as_str()));
                }
                Some(next) if is_escapable(next) => {
                    at += 1;
                    out.push(next);
                }
                // `\n` and other letters stay verbatim: a model editing code
                // usually means the two characters, and a stray newline breaks
                // a string literal.
                _ => out.push('\\'),
            },
            other => out.push(other),
        }
    }
}

/// Reads a `$` reference at the start of `rest`: how many bytes it used and what it stands for.
fn dollar<'h>(caps: &Captures<'h>, rest: &str) -> (usize, Option<&'h str>) {
    let group = |index: usize| caps.get(index).map_or("", |m| m.as_str());
    let mut chars = rest.chars();
    match chars.next() {
        Some('$') => (1, Some("$")),
        Some('&') => (1, Some(group(0))),
        Some(first @ '0'..='9') => {
            let one = first as usize - '0' as usize;
            if let Some(second @ '0'..='9') = chars.next() {
                let two = one * 10 + (second as usize - '0' as usize);
                if two > 0 && two < caps.len() {
                    return (2, Some(group(two)));
                }
            }
            if one < caps.len() {
                (1, Some(group(one)))
            } else {
                (0, None)
            }
        }
        Some(open @ ('<' | '{')) => {
            let close = if open == '<' { '>' } else { '}' };
            match rest[1..].find(close) {
                Some(end) => {
                    let name = &rest[1..1 + end];
                    let text = caps.name(name).map(|m| m.as_str()).or_else(|| {
                        name.parse::<usize>()
                            .ok()
                            .and_then(|index| caps.get(index))
                            .map(|m| m.as_str())
                    });
                    (end + 2, Some(text.unwrap_or("")))
                }
                None => (0, None),
            }
        }
        _ => (0, None),
    }
}

/// A sed replacement used as literal text: backslash-escaped punctuation loses its backslash.
pub fn unescape_replacement(template: &str) -> String {
    let mut out = String::with_capacity(template.len());
    let mut chars = template.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, chars.peek()) {
            ('\\', Some(&next)) if is_escapable(next) => {
                out.push(next);
                chars.next();
            }
            _ => out.push(c),
        }
    }
    out
}

/// A regex-escaped literal (`foo\(\)`) read back as the text it escapes (`foo()`).
pub fn unescape_regex(text: &str) -> String {
    unescape_replacement(text)
}
