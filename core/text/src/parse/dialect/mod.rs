//! Native tool-call dialects, normalised into the same commands as the XML tags.
//!
//! Models fine-tuned on other formats call tools their own way even when the
//! prompt teaches XML. Each reader here starts at a marker the reply state
//! machine found in top-level prose, reads as far as the call goes, and
//! reports the commands, warnings and where the prose continues. Every
//! argument is kept (`arguments` maps names onto attributes and body).
//!
//! A call naming an unknown tool, or one that cannot be read, gives a
//! warning and no command; its text stays in the prose, so the healer still
//! sees that the model tried to act (and does not take it for an answer).

mod arguments;
mod json;
mod markup;
mod native;
mod python;

use std::ops::Range;

use super::{command_tag, Tag, TaggedCall};

pub(crate) use python::read_fence;

/// What reading one dialect call (or list of calls) found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DialectRead {
    /// Where the prose continues after the call.
    pub end: usize,
    /// The commands read, in order.
    pub calls: Vec<TaggedCall>,
    /// Warnings about calls that were not read.
    pub warnings: Vec<String>,
}

impl DialectRead {
    /// A read ending at `end` with nothing in it yet.
    fn new(end: usize) -> Self {
        DialectRead {
            end,
            calls: Vec::new(),
            warnings: Vec::new(),
        }
    }

    /// A read that only reports a call in `format` that could not be read;
    /// the prose continues at `end`, just after the marker.
    fn unreadable(end: usize, format: &str) -> Self {
        let mut read = DialectRead::new(end);
        read.warnings.push(super::warnings::unreadable_call(format));
        read
    }

    /// Adds what one call turned out to be.
    fn add(&mut self, found: Found, format: &str) {
        match found {
            Found::Call(call) => self.calls.push(call),
            Found::Unknown(name) => self
                .warnings
                .push(super::warnings::unknown_tool(&name, format)),
            Found::NotACall => self.warnings.push(super::warnings::unreadable_call(format)),
        }
    }
}

/// What one call in a dialect named.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Found {
    /// A known tool, with its arguments mapped.
    Call(TaggedCall),
    /// A call of a tool that does not exist, by the name the model used.
    Unknown(String),
    /// Something that is not a call after all.
    NotACall,
}

/// The marker that starts Mistral's list of calls.
const MISTRAL_MARKER: &str = "[TOOL_CALLS]";

/// Reads a dialect call that starts at `at` in top-level prose, if one does.
pub(crate) fn read_text(text: &str, at: usize, limit: usize) -> Option<DialectRead> {
    let rest = &text[at..limit];
    if rest.starts_with("<|") || rest.starts_with("<tool_call|>") {
        native::read(text, at, limit)
    } else if rest.starts_with('{') {
        json::read_object(text, at, limit)
    } else if rest.starts_with(MISTRAL_MARKER) {
        Some(json::read_mistral(text, at + MISTRAL_MARKER.len(), limit))
    } else {
        None
    }
}

/// Reads a dialect call written as markup (`<tool_use>`, `<invoke>`) whose
/// open tag is `tag`, if it is one.
pub(crate) fn read_markup(text: &str, tag: Range<usize>, limit: usize) -> Option<DialectRead> {
    markup::read(text, tag, limit)
}

/// The tool a native call's name refers to: its trailing word, so that
/// namespaced names (`rummy.nvim/get`, `functions.get`) work too.
pub(crate) fn tool_of(name: &str) -> Option<Tag> {
    let word = name
        .rsplit(|c: char| !(c.is_alphanumeric() || c == '_'))
        .find(|word| !word.is_empty())?;
    command_tag(word)
}

/// What a call named `name` with `args` is: a command or an unknown tool.
fn found(name: &str, args: Vec<arguments::Argument>) -> Found {
    match tool_of(name) {
        Some(tool) => Found::Call(arguments::build(tool, args)),
        None => Found::Unknown(name.to_owned()),
    }
}

/// The offset of the first non-whitespace byte at or after `pos`.
fn skip_space(text: &str, pos: usize, limit: usize) -> usize {
    let bytes = text.as_bytes();
    let mut pos = pos;
    while pos < limit && bytes[pos].is_ascii_whitespace() {
        pos += 1;
    }
    pos
}

/// The offset of `needle` in `text[from..limit]`, ignoring ASCII case.
fn find_ignore_case(text: &str, from: usize, limit: usize, needle: &str) -> Option<usize> {
    let hay = &text.as_bytes()[from..limit];
    let needle = needle.as_bytes();
    if needle.is_empty() || hay.len() < needle.len() {
        return None;
    }
    hay.windows(needle.len())
        .position(|window| window.eq_ignore_ascii_case(needle))
        .map(|i| from + i)
}
