//! Parsing model replies into tool commands, tolerant of whatever the model wrote.
//!
//! The model answers with XML-ish tool tags (`<get path="a.js"/>`,
//! `<set path="x">…</set>`) mixed with prose. [`parse_reply`] extracts the
//! commands in order with their raw attributes and body, collects the prose,
//! and describes every repair it made as a warning the model will see. It
//! never fails and never panics: model output is data, not an error.
//!
//! Models trained on other formats write native tool calls instead (Qwen's
//! and Gemma's `<|tool_call>`, Gemma's Python calls in `tool_code` fences,
//! OpenAI JSON, Anthropic `<tool_use>`/`<invoke>`, Mistral `[TOOL_CALLS]`);
//! `dialect` turns those into the same [`ToolCall`]s, every argument kept. Retired tags (`<known>`, `<summarize>`, `fidelity=`) are
//! healed into today's commands by `legacy`. [`looks_like_tool_call`] tells
//! the healer whether leftover prose is a command that failed to parse.
//!
//! Layout: `lexer` wraps the strict xmlparser tokenizer with recovery, `tag`
//! re-reads tool tags it rejects, `markdown` finds code spans and fences,
//! `reply` is the state machine, `entities` decodes references, `dialect`
//! reads native call formats, `legacy` heals retired forms, `suspect` spots
//! mangled calls in prose, and `warnings` holds every model-facing text.
//! Deciding what an attribute or body *means* for each tool is the next
//! layer's job, not this one's.

mod dialect;
mod entities;
mod legacy;
mod lexer;
mod markdown;
mod reply;
mod suspect;
mod tag;
pub mod warnings;

#[cfg(test)]
mod tests;

use serde::Serialize;

/// The tags that are tool commands; any other tag (but a [`LEGACY_TAGS`] one) is prose or body text.
pub const TOOL_NAMES: &[&str] = &[
    "think", "get", "set", "env", "sh", "rm", "cp", "mv", "ask_user", "update", "search",
];

/// Retired tags that are still read and healed into today's commands.
pub const LEGACY_TAGS: &[&str] = &["known", "unknown", "summarize"];

/// The canonical (lower-case) tool name for a tag name in any case, if it is a tool.
pub fn tool_name(name: &str) -> Option<&'static str> {
    TOOL_NAMES
        .iter()
        .copied()
        .find(|tool| tool.eq_ignore_ascii_case(name))
}

/// The canonical name of a tag the parser reads as a command: a tool or a legacy tag.
pub(crate) fn command_tag(name: &str) -> Option<&'static str> {
    tool_name(name).or_else(|| {
        LEGACY_TAGS
            .iter()
            .copied()
            .find(|tag| tag.eq_ignore_ascii_case(name))
    })
}

/// One tool command extracted from a model reply, in emission order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ToolCall {
    /// The lower-cased tool name, one of [`TOOL_NAMES`].
    pub name: String,
    /// Lower-cased names and decoded values in source order; a bare attribute has value "".
    /// A native call's arguments land here too, under the names the tags use.
    pub attributes: Vec<(String, String)>,
    /// The inner text verbatim, entities decoded and CDATA unwrapped; "" when self-closing.
    /// For a native call, its body-like argument (`content`, `text`, …).
    pub body: String,
}

impl ToolCall {
    /// The value of the first attribute called `name` (compared case-insensitively).
    pub fn attr(&self, name: &str) -> Option<&str> {
        self.attributes
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }
}

/// Everything extracted from one model reply.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ParsedReply {
    /// The tool commands, in the order the model wrote them.
    pub commands: Vec<ToolCall>,
    /// Model-facing descriptions of every repair made (texts in [`warnings`]).
    pub warnings: Vec<String>,
    /// Top-level text outside tool tags, joined in order and trimmed.
    pub unparsed: String,
}

/// Parses a model reply, keeping at most `max_commands` commands.
pub fn parse_reply(text: &str, max_commands: usize) -> ParsedReply {
    reply::Parser::new(text, max_commands).run()
}

/// Whether prose holds something that looks like a failed or mangled tool
/// command (a native call marker, a tool tag fragment, a JSON call), outside
/// code spans that merely quote one.
pub fn looks_like_tool_call(text: &str) -> bool {
    suspect::looks_like_tool_call(text)
}
