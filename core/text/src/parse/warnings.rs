//! Every model-facing warning the reply parser can produce, in one place.
//!
//! The model reads these on its next turn (as `error://` entries), so they
//! say what was wrong and how to write it next time. Templates use `{name}`
//! style placeholders, filled by the small functions below.
//!
//! The dialect warnings never quote a native call marker or a tool tag: a
//! warning that contains one would itself look like a mangled call (the
//! original garbled its own notice that way).
//!
//! Healing a legacy form (`<known>`, `<unknown>`, `<summarize>`,
//! `fidelity=`) adds no warning: the command does what the model meant, and
//! a warning about a command that worked invites the model to send it again.

/// An unclosed tool tag ran to the end of the reply (or of its fence).
pub const UNCLOSED_TAG: &str = "Unclosed <{tag}> tag — content captured anyway";

/// An open tool tag with a blank body was followed by another tool tag.
pub const UNCLOSED_BEFORE: &str = "Unclosed <{tag}> before <{next}> — recovered";

/// A close tag of another tool closed the only open tool tag.
pub const MISMATCHED_CLOSE: &str = "Mismatched </{found}> closing <{tag}> — corrected to </{tag}>";

/// Attribute values whose quote was never closed were cut at the line end or next tag.
pub const REPAIRED_ATTRIBUTES: &str =
    "Repaired {count} malformed attribute(s) — close all attribute values with a quote.";

/// More tool tags than the per-reply cap allows; the rest were ignored.
pub const COMMAND_LIMIT: &str = "Tool call limit ({limit}) reached — remaining commands dropped";

/// A native tool call named a tool that does not exist; nothing was run.
pub const UNKNOWN_TOOL: &str =
    "Unknown tool '{tool}' in {format} tool-call format. Use the XML tool commands listed above.";

/// A native tool call was started but could not be read; nothing was run.
pub const UNREADABLE_CALL: &str = "A tool call in {format} tool-call format could not be read, so it was not run. Use the XML tool commands listed above (for example a get tag with a path attribute, or a set tag with a path attribute and the content as its body).";

/// Prose left over from a reply that looks like a command that was not read
/// (see `looks_like_tool_call`); the excerpt follows.
pub const UNREAD_TEXT: &str =
    "Not run — this part of your reply looks like a tool command but could not be read:\n{excerpt}";

/// Longest excerpt of unread prose quoted back.
const MAX_EXCERPT_CHARS: usize = 400;

/// Longest tool name quoted back in a warning.
const MAX_QUOTED_NAME: usize = 60;

/// Replaces each `{key}` in `template` with its value.
fn fill(template: &str, values: &[(&str, &str)]) -> String {
    let mut out = template.to_owned();
    for (key, value) in values {
        out = out.replace(&format!("{{{key}}}"), value);
    }
    out
}

/// The warning for a tool tag left open at the end of the text.
pub fn unclosed_tag(tag: &str) -> String {
    fill(UNCLOSED_TAG, &[("tag", tag)])
}

/// The warning for a blank open tool tag closed by the next tool tag.
pub fn unclosed_before(tag: &str, next: &str) -> String {
    fill(UNCLOSED_BEFORE, &[("tag", tag), ("next", next)])
}

/// The warning for `</found>` used to close `<tag>`.
pub fn mismatched_close(found: &str, tag: &str) -> String {
    fill(MISMATCHED_CLOSE, &[("found", found), ("tag", tag)])
}

/// The warning for `count` repaired attribute values.
pub fn repaired_attributes(count: usize) -> String {
    fill(REPAIRED_ATTRIBUTES, &[("count", &count.to_string())])
}

/// The warning for reaching the per-reply command cap `limit`.
pub fn command_limit(limit: usize) -> String {
    fill(COMMAND_LIMIT, &[("limit", &limit.to_string())])
}

/// The warning for a native call (in `format`) naming the unknown tool `tool`.
///
/// The name is the model's text: only name-like characters are quoted back,
/// so the warning cannot carry a tag or marker of its own.
pub fn unknown_tool(tool: &str, format: &str) -> String {
    let name: String = tool
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | ':' | '/'))
        .take(MAX_QUOTED_NAME)
        .collect();
    fill(UNKNOWN_TOOL, &[("tool", &name), ("format", format)])
}

/// The warning for a native call in `format` that could not be read.
pub fn unreadable_call(format: &str) -> String {
    fill(UNREADABLE_CALL, &[("format", format)])
}

/// How the native-call warnings name Qwen's and Gemma's `<|tool_call>` format.
pub const FORMAT_NATIVE: &str = "native";

/// How the native-call warnings name OpenAI-style `{"name":…}` objects.
pub const FORMAT_JSON: &str = "JSON";

/// How the native-call warnings name Anthropic's `tool_use` and `invoke` blocks.
pub const FORMAT_ANTHROPIC: &str = "Anthropic";

/// How the native-call warnings name Mistral's `[TOOL_CALLS]` lists.
pub const FORMAT_MISTRAL: &str = "Mistral";

/// How the native-call warnings name Python-style calls in `tool_code` fences.
pub const FORMAT_PYTHON: &str = "Python";

/// The notice for leftover prose that looks like a command that was not
/// read, quoting (the start of) it so the model can see what went wrong.
pub fn unread_text(prose: &str) -> String {
    let prose = prose.trim();
    let mut excerpt: String = prose.chars().take(MAX_EXCERPT_CHARS).collect();
    if excerpt.len() < prose.len() {
        excerpt.push('…');
    }
    fill(UNREAD_TEXT, &[("excerpt", &excerpt)])
}
