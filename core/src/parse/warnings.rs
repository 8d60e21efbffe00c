//! Every model-facing warning the reply parser can produce, in one place.
//!
//! The model reads these on its next turn (as `error://` entries), so they
//! say what was wrong and how to write it next time. Templates use `{name}`
//! style placeholders, filled by the small functions below.

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
