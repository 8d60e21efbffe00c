//! Mapping a native call's arguments onto a command's attributes and body.
//!
//! Dialects pass arguments by name (`{"query": …}`, `content:`), each model
//! with its own vocabulary. The names the XML tags use are kept; common
//! synonyms are mapped to them (`query` → `path` for search, `file` →
//! `path`, `content` → the body); every other argument is kept as an
//! attribute under its own name, so nothing the model said is lost.

use super::json::Json;
use crate::parse::{Tag, TaggedCall, ToolName};

/// One argument of a native call, in the order the model wrote it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Argument {
    /// Its name; `None` for a positional argument.
    pub key: Option<String>,
    /// Its value.
    pub value: Value,
}

/// An argument's value as the dialect gave it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Value {
    /// Plain text.
    Text(String),
    /// A JSON value (JSON dialects, or a bracketed native value).
    Json(Json),
}

/// Where an argument goes on the command.
enum Target {
    /// The command's body.
    Body,
    /// The attribute with this canonical name.
    Attr(&'static str),
    /// An attribute under the argument's own (normalised) name.
    Own,
}

/// The command for `tool` with `args` mapped onto its attributes and body.
///
/// The first body-like argument becomes the body; a later one, or an
/// argument whose canonical attribute is already set, keeps its own name.
/// The first positional argument is the body too (`<get>a.js</get>` is how
/// the XML form says it); further ones are `arg2`, `arg3`, …
pub(crate) fn build(tool: Tag, args: Vec<Argument>) -> TaggedCall {
    let mut call = TaggedCall {
        tag: tool,
        attributes: Vec::new(),
        body: String::new(),
    };
    let mut has_body = false;
    let mut positional = 0;
    for arg in args {
        let key = arg
            .key
            .as_deref()
            .map(normalize_key)
            .filter(|k| !k.is_empty());
        if key.is_none() {
            positional += 1;
        }
        let target = key.as_deref().map_or(Target::Body, |k| target(tool, k));
        let name = match target {
            Target::Body if !has_body => {
                if let Some(text) = render(&arg.value, true, false) {
                    call.body = text;
                    has_body = true;
                }
                continue;
            }
            Target::Attr(name) if call.attr(name).is_none() => name.to_owned(),
            _ => key.unwrap_or_else(|| format!("arg{positional}")),
        };
        if let Some(text) = render(&arg.value, false, name == "options") {
            call.attributes.push((name, text));
        }
    }
    call
}

/// Lower-case with `-` as `_`, as the XML attribute names are (`filePath` → `filepath`).
fn normalize_key(key: &str) -> String {
    key.trim().to_lowercase().replace('-', "_")
}

/// Where the argument `key` of `tool` goes.
fn target(tool: Tag, key: &str) -> Target {
    use Target::{Attr, Body};
    use ToolName::{AskUser, Cp, Env, Get, Mv, Rm, Search, Set, Sh, Think, Update};
    let Tag::Tool(tool) = tool else {
        return generic_target(key);
    };
    match (tool, key) {
        (_, "body" | "content" | "contents" | "text") => Body,
        (Update, "message" | "answer" | "summary" | "result") => Body,
        (Think, "thought" | "thoughts" | "thinking" | "reasoning") => Body,
        // The body of get and rm is their content filter.
        (Get | Rm, "filter") => Body,
        (Search, "query" | "q" | "search_query" | "search_term" | "term") => Attr("path"),
        (Search, "max_results" | "num_results" | "count" | "limit") => Attr("results"),
        (Sh | Env, "cmd" | "script" | "shell_command") => Attr("command"),
        (AskUser, "prompt" | "query") => Attr("question"),
        (AskUser, "choices") => Attr("options"),
        (Cp | Mv, "from" | "source" | "src" | "source_path" | "old_path") => Attr("path"),
        (Cp | Mv, "destination" | "dest" | "target" | "new_path" | "target_path") => Attr("to"),
        (Set, "old_string" | "old_text" | "find") => Attr("search"),
        (Set, "new_string" | "new_text" | "replacement") => Attr("replace"),
        (Get, "offset" | "start_line" | "line_number") => Attr("line"),
        (Get, "lines" | "max_lines" | "line_count") => Attr("limit"),
        _ => generic_target(key),
    }
}

/// Where the argument `key` goes whatever the tool (a retired tag's too).
fn generic_target(key: &str) -> Target {
    match key {
        "body" | "content" | "contents" | "text" => Target::Body,
        "file" | "file_path" | "filepath" | "filename" | "uri" | "url" => Target::Attr("path"),
        _ => Target::Own,
    }
}

/// The text of a value; `None` for JSON `null`, which says "not given".
///
/// Structured values become JSON text (indented when they are a body, such
/// as a JSON file's content); a list of options is joined with `; `, the
/// separator ask_user splits on first.
fn render(value: &Value, as_body: bool, options: bool) -> Option<String> {
    match value {
        Value::Text(text) => Some(text.clone()),
        Value::Json(Json::Null) => None,
        Value::Json(Json::Array(items)) if options && items.iter().all(Json::is_scalar) => Some(
            items
                .iter()
                .filter_map(Json::scalar_text)
                .collect::<Vec<_>>()
                .join("; "),
        ),
        Value::Json(json) => Some(json.scalar_text().unwrap_or_else(|| json.to_text(as_body))),
    }
}
