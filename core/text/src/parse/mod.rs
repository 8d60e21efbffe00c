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
mod steps;
mod suspect;
mod tag;
mod tool_name;
pub mod warnings;

#[cfg(test)]
mod tests;

use serde::Serialize;

pub use tool_name::ToolName;

/// A retired tag that is still read and healed into today's command (`legacy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Legacy {
    /// `<known>`: today `set` on `known://…`.
    Known,
    /// `<unknown>`: today `set` on `unknown://…`.
    Unknown,
    /// `<summarize>`: today `update` with status 200.
    Summarize,
}

impl Legacy {
    /// Every retired tag.
    const ALL: [Legacy; 3] = [Legacy::Known, Legacy::Unknown, Legacy::Summarize];

    /// The tag's name.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Legacy::Known => "known",
            Legacy::Unknown => "unknown",
            Legacy::Summarize => "summarize",
        }
    }
}

/// A tag the parser reads as a command: a tool's, or a retired one; any other tag is prose or
/// body text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Tag {
    /// A tool's tag.
    Tool(ToolName),
    /// A retired tag, healed into a tool's command.
    Legacy(Legacy),
}

impl Tag {
    /// The tag's canonical (lower-case) name.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Tag::Tool(tool) => tool.as_str(),
            Tag::Legacy(legacy) => legacy.as_str(),
        }
    }
}

/// The tag a tag name in any case is, if the parser reads it as a command.
pub(crate) fn command_tag(name: &str) -> Option<Tag> {
    ToolName::parse(name).map(Tag::Tool).or_else(|| {
        Legacy::ALL
            .into_iter()
            .find(|tag| tag.as_str().eq_ignore_ascii_case(name))
            .map(Tag::Legacy)
    })
}

/// One tool command extracted from a model reply, in emission order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ToolCall {
    /// The tool.
    pub name: ToolName,
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
        find_attr(&self.attributes, name)
    }
}

/// A command as read, before `legacy` heals a retired tag into a tool's command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TaggedCall {
    /// The tag it was written with.
    pub tag: Tag,
    /// As [`ToolCall::attributes`].
    pub attributes: Vec<(String, String)>,
    /// As [`ToolCall::body`].
    pub body: String,
}

impl TaggedCall {
    /// The value of the first attribute called `name` (compared case-insensitively).
    pub(crate) fn attr(&self, name: &str) -> Option<&str> {
        find_attr(&self.attributes, name)
    }
}

/// The value of the first attribute called `name` (compared case-insensitively).
fn find_attr<'a>(attributes: &'a [(String, String)], name: &str) -> Option<&'a str> {
    attributes
        .iter()
        .find(|(key, _)| key.eq_ignore_ascii_case(name))
        .map(|(_, value)| value.as_str())
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
