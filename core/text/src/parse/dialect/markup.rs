//! Anthropic's calls written as markup: `<tool_use><name>get</name><input>{…}</input></tool_use>`
//! and `<invoke name="get"><parameter name="path">a.js</parameter></invoke>`.

use std::ops::Range;

use super::arguments::{Argument, Value};
use super::json::{arguments_of, interpret, parse_at, parse_whole, Json};
use super::{find_ignore_case, found, skip_space, DialectRead, Found};
use crate::parse::entities::decode;
use crate::parse::tag::scan_open_tag;
use crate::parse::warnings::FORMAT_ANTHROPIC;

/// Elements of a `tool_use` block that hold the arguments.
const INPUT_ELEMENTS: &[&str] = &["input", "arguments", "parameters"];

/// Reads the markup call whose open tag is `tag`, if the tag opens one.
pub(super) fn read(text: &str, tag: Range<usize>, limit: usize) -> Option<DialectRead> {
    let name_start = tag.start + 1;
    let name_end = text[name_start..tag.end]
        .find(|c: char| c.is_whitespace() || c == '>' || c == '/')
        .map_or(tag.end, |i| name_start + i);
    let qualified = &text[name_start..name_end];
    let local = qualified.rsplit(':').next().unwrap_or(qualified);
    if local.eq_ignore_ascii_case("tool_use") {
        Some(read_tool_use(text, tag, limit))
    } else if local.eq_ignore_ascii_case("invoke") {
        let prefix = &qualified[..qualified.len() - local.len()];
        Some(read_invoke(text, tag, name_end, prefix, limit))
    } else {
        None
    }
}

/// Where the content of an element opened at `from` ends, and where the
/// element ends: at `close`, or at `limit` when it never closes.
fn content_end(text: &str, from: usize, limit: usize, close: &str) -> (usize, usize) {
    find_ignore_case(text, from, limit, close).map_or((limit, limit), |i| (i, i + close.len()))
}

/// Reads a `<tool_use>` block.
fn read_tool_use(text: &str, tag: Range<usize>, limit: usize) -> DialectRead {
    let (inner_end, end) = content_end(text, tag.end, limit, "</tool_use>");
    match tool_use_call(text, tag.end..inner_end) {
        Some(call) => {
            let mut read = DialectRead::new(end);
            read.add(call, FORMAT_ANTHROPIC);
            read
        }
        None => DialectRead::unreadable(tag.end, FORMAT_ANTHROPIC),
    }
}

/// The call in a `tool_use` block's `content`: `<name>` and `<input>`
/// elements, or one JSON object with `name` and `input`.
fn tool_use_call(text: &str, content: Range<usize>) -> Option<Found> {
    if let Some(name) = element(text, content.clone(), "name") {
        let name = decode(text[name].trim());
        let input = INPUT_ELEMENTS
            .iter()
            .find_map(|el| element(text, content.clone(), el));
        let args = match input.map(|range| text[range].trim()) {
            None | Some("") => Vec::new(),
            Some(raw) => match parse_whole(raw) {
                Some(object @ Json::Object(_)) => arguments_of(&object),
                _ => vec![Argument {
                    key: None,
                    value: Value::Text(decode(raw)),
                }],
            },
        };
        return Some(found(&name, args));
    }
    let start = skip_space(text, content.start, content.end);
    let (value, _) = parse_at(text, start, content.end)?;
    match interpret(&value) {
        Found::NotACall => None,
        other => Some(other),
    }
}

/// The content of the first `<name>…</name>` element in `range`.
fn element(text: &str, range: Range<usize>, name: &str) -> Option<Range<usize>> {
    let open = format!("<{name}>");
    let start = find_ignore_case(text, range.start, range.end, &open)? + open.len();
    let end = find_ignore_case(text, start, range.end, &format!("</{name}>"))?;
    Some(start..end)
}

/// Reads an `<invoke name="…">` block with its `<parameter name="…">`
/// children; `prefix` is the tags' namespace prefix (with its colon), if any.
fn read_invoke(
    text: &str,
    tag: Range<usize>,
    name_end: usize,
    prefix: &str,
    limit: usize,
) -> DialectRead {
    let attributes = scan_open_tag(text, name_end, tag.end).attributes;
    let Some((_, name)) = attributes.iter().find(|(key, _)| key == "name") else {
        return DialectRead::unreadable(tag.end, FORMAT_ANTHROPIC);
    };
    let close = format!("</{prefix}invoke>");
    let (inner_end, end) = content_end(text, tag.end, limit, &close);
    let open_parameter = format!("<{prefix}parameter");
    let close_parameter = format!("</{prefix}parameter>");
    let mut args = Vec::new();
    let mut pos = tag.end;
    while let Some(open) = find_ignore_case(text, pos, inner_end, &open_parameter) {
        let after_name = open + open_parameter.len();
        // `<parameters>` is not `<parameter …>`.
        if text[after_name..inner_end].starts_with(|c: char| c.is_alphanumeric() || c == '_') {
            pos = after_name;
            continue;
        }
        let scanned = scan_open_tag(text, after_name, inner_end);
        let key = scanned
            .attributes
            .into_iter()
            .find(|(k, _)| k == "name")
            .map(|(_, v)| v);
        let (value_end, next) = content_end(text, scanned.end, inner_end, &close_parameter);
        args.push(Argument {
            key,
            value: parameter_value(&text[scanned.end..value_end]),
        });
        pos = next;
    }
    let mut read = DialectRead::new(end);
    read.add(found(name, args), FORMAT_ANTHROPIC);
    read
}

/// A parameter's value: JSON when it is a bracketed JSON value (a list of
/// options), else its text without the newlines that lay it out.
fn parameter_value(raw: &str) -> Value {
    let trimmed = raw.trim();
    if trimmed.starts_with(['[', '{']) {
        if let Some(json) = parse_whole(trimmed) {
            return Value::Json(json);
        }
    }
    Value::Text(decode(raw.trim_matches(['\n', '\r'])))
}
