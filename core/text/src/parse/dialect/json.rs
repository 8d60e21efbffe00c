//! JSON tool calls: OpenAI `{"name":…,"arguments":…}` objects and Mistral `[TOOL_CALLS]` lists.
//!
//! Objects are read into [`Json`], which keeps keys in the order the model
//! wrote them (serde_json's own map sorts them unless a feature elsewhere
//! in the build says otherwise), so attributes keep their written order.

use std::fmt;

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

use super::arguments::{Argument, Value};
use super::{found, skip_space, tool_of, DialectRead, Found};
use crate::parse::warnings::{FORMAT_JSON, FORMAT_MISTRAL};

/// A JSON value with object keys in source order.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Json {
    /// `null`.
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// A number, as serde_json reads it.
    Number(serde_json::Number),
    /// A string.
    String(String),
    /// An array.
    Array(Vec<Json>),
    /// An object, keys in source order.
    Object(Vec<(String, Json)>),
}

/// Keys that hold a call's arguments, in the dialects we know.
const ARGUMENT_KEYS: &[&str] = &["arguments", "parameters", "input", "args", "params"];

/// Keys of a call object that are about the call, not arguments of it.
const CALL_KEYS: &[&str] = &["name", "type", "id"];

impl Json {
    /// Whether this is a string, number or boolean.
    pub(crate) fn is_scalar(&self) -> bool {
        matches!(self, Json::Bool(_) | Json::Number(_) | Json::String(_))
    }

    /// The text of a scalar (a string without quotes); `None` otherwise.
    pub(crate) fn scalar_text(&self) -> Option<String> {
        match self {
            Json::Bool(b) => Some(b.to_string()),
            Json::Number(n) => Some(n.to_string()),
            Json::String(s) => Some(s.clone()),
            _ => None,
        }
    }

    /// The value of `key` in an object.
    fn get(&self, key: &str) -> Option<&Json> {
        match self {
            Json::Object(entries) => entries.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// JSON text for this value, indented by two spaces when `pretty`.
    pub(crate) fn to_text(&self, pretty: bool) -> String {
        let mut out = String::new();
        self.write(&mut out, pretty, 0);
        out
    }

    /// Appends this value's JSON text at nesting `depth`.
    fn write(&self, out: &mut String, pretty: bool, depth: usize) {
        match self {
            Json::Null => out.push_str("null"),
            Json::Bool(_) | Json::Number(_) => {
                out.push_str(&self.scalar_text().unwrap_or_default())
            }
            Json::String(s) => write_string(out, s),
            Json::Array(items) => {
                let items = items.iter().map(|item| (None, item));
                write_container(out, ('[', ']'), items, pretty, depth);
            }
            Json::Object(entries) => {
                let entries = entries.iter().map(|(k, v)| (Some(k.as_str()), v));
                write_container(out, ('{', '}'), entries, pretty, depth);
            }
        }
    }
}

/// Appends `s` as a JSON string literal.
fn write_string(out: &mut String, s: &str) {
    // Serialising a &str cannot fail; the Debug form is only a fallback.
    out.push_str(&serde_json::to_string(s).unwrap_or_else(|_| format!("{s:?}")));
}

/// Appends an array or object with its `items` (keys for objects).
fn write_container<'a>(
    out: &mut String,
    (open, close): (char, char),
    items: impl ExactSizeIterator<Item = (Option<&'a str>, &'a Json)>,
    pretty: bool,
    depth: usize,
) {
    out.push(open);
    let empty = items.len() == 0;
    for (i, (key, value)) in items.enumerate() {
        if i > 0 {
            out.push(',');
        }
        if pretty {
            out.push('\n');
            out.push_str(&"  ".repeat(depth + 1));
        }
        if let Some(key) = key {
            write_string(out, key);
            out.push_str(if pretty { ": " } else { ":" });
        }
        value.write(out, pretty, depth + 1);
    }
    if pretty && !empty {
        out.push('\n');
        out.push_str(&"  ".repeat(depth));
    }
    out.push(close);
}

impl<'de> Deserialize<'de> for Json {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(JsonVisitor)
    }
}

/// Builds [`Json`] values from serde's events.
struct JsonVisitor;

impl<'de> Visitor<'de> for JsonVisitor {
    type Value = Json;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_unit<E>(self) -> Result<Json, E> {
        Ok(Json::Null)
    }

    fn visit_none<E>(self) -> Result<Json, E> {
        Ok(Json::Null)
    }

    fn visit_bool<E>(self, v: bool) -> Result<Json, E> {
        Ok(Json::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Json, E> {
        Ok(Json::Number(v.into()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Json, E> {
        Ok(Json::Number(v.into()))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Json, E> {
        // JSON text cannot spell a non-finite number, so this never falls back.
        Ok(serde_json::Number::from_f64(v).map_or(Json::Null, Json::Number))
    }

    fn visit_str<E>(self, v: &str) -> Result<Json, E> {
        Ok(Json::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Json, E> {
        Ok(Json::String(v))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Json, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Json::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Json, A::Error> {
        let mut entries = Vec::new();
        while let Some((key, value)) = map.next_entry()? {
            entries.push((key, value));
        }
        Ok(Json::Object(entries))
    }
}

/// Parses the JSON value at `text[at..limit]`, returning it and where it ends.
pub(super) fn parse_at(text: &str, at: usize, limit: usize) -> Option<(Json, usize)> {
    let mut stream = serde_json::Deserializer::from_str(&text[at..limit]).into_iter::<Json>();
    match stream.next() {
        Some(Ok(value)) => Some((value, at + stream.byte_offset())),
        _ => None,
    }
}

/// Parses a whole string as JSON.
pub(super) fn parse_whole(text: &str) -> Option<Json> {
    serde_json::from_str(text).ok()
}

/// What a JSON value is as a call: `{"name": …, "arguments": {…}}`, with
/// the arguments also as a JSON string, under `parameters`/`input`, or
/// wrapped as OpenAI's `{"type": "function", "function": {…}}`.
pub(super) fn interpret(value: &Json) -> Found {
    let Some(Json::String(name)) = value.get("name") else {
        return match value.get("function") {
            Some(inner @ Json::Object(_)) => interpret(inner),
            _ => Found::NotACall,
        };
    };
    let given = ARGUMENT_KEYS.iter().find_map(|key| value.get(key));
    if given.is_some_and(is_schema) {
        return Found::NotACall;
    }
    let args = match given {
        Some(args) => arguments_of(args),
        // A flat object (`{"name": "get", "path": "a.js"}`) is a call only
        // when it names a tool; otherwise it is just data with a name.
        None if tool_of(name).is_some() => match value {
            Json::Object(entries) => entries
                .iter()
                .filter(|(k, _)| !CALL_KEYS.contains(&k.as_str()))
                .map(|(k, v)| named(k, v))
                .collect(),
            _ => Vec::new(),
        },
        None => return Found::NotACall,
    };
    found(name, args)
}

/// Whether arguments are a JSON Schema (`{"type": "object", "properties": …}`):
/// a model echoing a tool's definition is not calling it.
fn is_schema(args: &Json) -> bool {
    args.get("properties").is_some()
        && matches!(args.get("type"), Some(Json::String(kind)) if kind == "object")
}

/// The arguments in an `arguments` value: an object, a JSON string holding
/// one, or a single positional value.
pub(super) fn arguments_of(args: &Json) -> Vec<Argument> {
    match args {
        Json::Object(entries) => entries.iter().map(|(k, v)| named(k, v)).collect(),
        Json::String(text) => match parse_whole(text) {
            Some(parsed @ Json::Object(_)) => arguments_of(&parsed),
            _ => vec![Argument {
                key: None,
                value: Value::Text(text.clone()),
            }],
        },
        Json::Null => Vec::new(),
        other => vec![Argument {
            key: None,
            value: Value::Json(other.clone()),
        }],
    }
}

/// The argument `key` with a JSON value.
fn named(key: &str, value: &Json) -> Argument {
    Argument {
        key: Some(key.to_owned()),
        value: Value::Json(value.clone()),
    }
}

/// Reads a JSON call object starting at the `{` at `at` in prose, if it is one.
///
/// Prose holds ordinary JSON too; only an object with a `name` and
/// arguments (or naming one of our tools) is a call. A broken object that
/// starts like a call of one of our tools is reported as unreadable.
pub(super) fn read_object(text: &str, at: usize, limit: usize) -> Option<DialectRead> {
    let key = skip_space(text, at + 1, limit);
    if text.as_bytes().get(key) != Some(&b'"') {
        return None;
    }
    let Some((value, end)) = parse_at(text, at, limit) else {
        return starts_like_call(text, key, limit)
            .then(|| DialectRead::unreadable(at + 1, FORMAT_JSON));
    };
    match interpret(&value) {
        Found::NotACall => None,
        other => {
            let mut read = DialectRead::new(end);
            read.add(other, FORMAT_JSON);
            Some(read)
        }
    }
}

/// Whether the text at `key` reads `"name": "<one of our tools>"`.
fn starts_like_call(text: &str, key: usize, limit: usize) -> bool {
    let Some(rest) = text[key..limit].strip_prefix("\"name\"") else {
        return false;
    };
    let rest = rest.trim_start();
    let Some(rest) = rest.strip_prefix(':') else {
        return false;
    };
    let Some(rest) = rest.trim_start().strip_prefix('"') else {
        return false;
    };
    rest.split('"')
        .next()
        .is_some_and(|name| tool_of(name).is_some())
}

/// Reads what follows Mistral's `[TOOL_CALLS]` marker (which ends at `pos`):
/// a JSON list of calls, one call object, or `name[ARGS]{…}`.
pub(super) fn read_mistral(text: &str, pos: usize, limit: usize) -> DialectRead {
    let start = skip_space(text, pos, limit);
    let bytes = text.as_bytes();
    if matches!(bytes.get(start), Some(b'[' | b'{')) {
        if let Some((value, end)) = parse_at(text, start, limit) {
            let mut read = DialectRead::new(end);
            match value {
                Json::Array(items) => {
                    for item in &items {
                        read.add(interpret(item), FORMAT_MISTRAL);
                    }
                }
                other => read.add(interpret(&other), FORMAT_MISTRAL),
            }
            return read;
        }
        return DialectRead::unreadable(pos, FORMAT_MISTRAL);
    }
    let name_end = text[start..limit]
        .find(|c: char| !(c.is_alphanumeric() || matches!(c, '_' | '.' | '-' | '/' | ':')))
        .map_or(limit, |i| start + i);
    let name = &text[start..name_end];
    let after = text[name_end..limit]
        .strip_prefix("[ARGS]")
        .map_or(name_end, |_| name_end + "[ARGS]".len());
    let args_at = skip_space(text, after, limit);
    match parse_at(text, args_at, limit) {
        Some((args @ Json::Object(_), end)) if !name.is_empty() => {
            let mut read = DialectRead::new(end);
            read.add(found(name, arguments_of(&args)), FORMAT_MISTRAL);
            read
        }
        _ => DialectRead::unreadable(pos, FORMAT_MISTRAL),
    }
}
