//! Healing retired forms into today's commands, so a model that learned them still gets its way.
//!
//! `<known>` and `<unknown>` were tags of their own; today they are `set` on
//! `known://…` and `unknown://…`. `<summarize>` ended the run; today that is
//! `update` with status 200. `fidelity=` (with its level names) is today's
//! `visibility=`. No warning is added (see `warnings`).

use super::{Legacy, Tag, TaggedCall, ToolCall, ToolName};
use crate::path::scheme_of;

/// Longest slug made from a summary or body for a path-less `<known>`.
const MAX_SLUG_CHARS: usize = 60;

/// The slug used when a path-less `<known>` has no words to name it by.
const EMPTY_SLUG: &str = "untitled";

/// The old attribute name for visibility.
const FIDELITY: &str = "fidelity";

/// Today's attribute name.
const VISIBILITY: &str = "visibility";

/// Today's form of `call`: legacy tags become their commands, and
/// `fidelity` becomes `visibility` with the old level names mapped.
pub(crate) fn heal(call: TaggedCall) -> ToolCall {
    let mut call = match call.tag {
        Tag::Tool(name) => ToolCall {
            name,
            attributes: call.attributes,
            body: call.body,
        },
        Tag::Legacy(legacy @ (Legacy::Known | Legacy::Unknown)) => entry_write(legacy, call),
        Tag::Legacy(Legacy::Summarize) => summarize(call),
    };
    rename_fidelity(&mut call.attributes);
    call
}

/// `<known …>body</known>` → `set` on `known://…` (same for unknown).
///
/// The path is the `path` attribute when it has a scheme, else
/// `<tag>://<path>`, else a slug of the summary or the body.
fn entry_write(legacy: Legacy, call: TaggedCall) -> ToolCall {
    let scheme = legacy.as_str();
    let given = call
        .attr("path")
        .map(str::trim)
        .filter(|path| !path.is_empty());
    let path = match given {
        Some(path) if scheme_of(path).is_some() => path.to_owned(),
        Some(path) => format!("{scheme}://{}", path.trim_start_matches('/')),
        None => {
            let words = call
                .attr("summary")
                .filter(|s| !s.trim().is_empty())
                .unwrap_or(&call.body);
            format!("{scheme}://{}", slug(words))
        }
    };
    let mut attributes = vec![("path".to_owned(), path)];
    attributes.extend(call.attributes.into_iter().filter(|(key, _)| key != "path"));
    ToolCall {
        name: ToolName::Set,
        attributes,
        body: call.body,
    }
}

/// `<summarize>answer</summarize>` → `update` with status 200.
fn summarize(call: TaggedCall) -> ToolCall {
    let mut attributes = vec![("status".to_owned(), "200".to_owned())];
    attributes.extend(
        call.attributes
            .into_iter()
            .filter(|(key, _)| key != "status"),
    );
    ToolCall {
        name: ToolName::Update,
        attributes,
        body: call.body,
    }
}

/// Renames `fidelity` to `visibility` in place (dropping it when
/// `visibility` is also given, which then wins) and maps old level names on
/// either attribute.
fn rename_fidelity(attributes: &mut Vec<(String, String)>) {
    let has_visibility = attributes.iter().any(|(key, _)| key == VISIBILITY);
    if has_visibility {
        attributes.retain(|(key, _)| key != FIDELITY);
    }
    for (key, value) in attributes.iter_mut() {
        if key == FIDELITY {
            VISIBILITY.clone_into(key);
        }
        if key == VISIBILITY {
            if let Some(level) = visibility_level(value) {
                level.clone_into(value);
            }
        }
    }
}

/// Today's visibility for an old fidelity level name.
fn visibility_level(old: &str) -> Option<&'static str> {
    match old.trim().to_ascii_lowercase().as_str() {
        "full" | "promoted" => Some("visible"),
        "summary" | "demoted" | "index" => Some("summarized"),
        "archive" | "stored" => Some("archived"),
        _ => None,
    }
}

/// A path segment made of the words of `text`: lower-case, words joined by
/// `_`, at most [`MAX_SLUG_CHARS`].
fn slug(text: &str) -> String {
    let mut out = String::new();
    let mut count = 0;
    let words = text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty());
    for word in words {
        if count > 0 {
            if count + 1 >= MAX_SLUG_CHARS {
                break;
            }
            out.push('_');
            count += 1;
        }
        for c in word.to_lowercase().chars().take(MAX_SLUG_CHARS - count) {
            out.push(c);
            count += 1;
        }
    }
    if out.is_empty() {
        EMPTY_SLUG.to_owned()
    } else {
        out
    }
}
