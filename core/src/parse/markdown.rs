//! Markdown code spans and fences in reply prose.
//!
//! A model that writes "use `<get path=…/>` to read" is quoting a tag, not
//! calling it; the same goes for a ```` ```rust ```` fence. Fences labelled
//! `tool_code`, `tool_command` or `xml` are how some models (Gemma) wrap
//! real calls, so their inside is parsed like any reply text.

use std::ops::Range;

/// Fence info strings whose content is tool calls, not a quotation.
const TOOL_FENCE_INFO: &[&str] = &["tool_code", "tool_command", "xml"];

/// Fences may be indented by at most this many spaces (CommonMark).
const MAX_FENCE_INDENT: usize = 3;

/// What a run of backticks in top-level prose starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Backticks {
    /// Nothing: the run is ordinary text ending at this offset.
    Literal(usize),
    /// A code span or quoting fence ending at this offset: text, never commands.
    Quoted(usize),
    /// A fence of tool calls: parse `inner`, then continue at `resume`.
    ToolFence {
        /// The lines between the fence markers.
        inner: Range<usize>,
        /// The end of the closing marker line.
        resume: usize,
    },
}

/// The length of the backtick run starting at `at`, not passing `limit`.
pub(crate) fn run_length(bytes: &[u8], at: usize, limit: usize) -> usize {
    bytes[at..limit].iter().take_while(|&&b| b == b'`').count()
}

/// The end of the line containing `at` (the newline's offset, or `limit`).
fn line_end(text: &str, at: usize, limit: usize) -> usize {
    text[at..limit].find('\n').map_or(limit, |i| at + i)
}

/// Classifies the backtick run at `at` in top-level text of the region
/// ending at `limit`.
pub(crate) fn classify(text: &str, at: usize, limit: usize) -> Backticks {
    let bytes = text.as_bytes();
    let run = run_length(bytes, at, limit);
    // Only a fence needs its line's start; looking it up for every inline
    // span would rescan a long line once per backtick.
    if run >= 3 {
        let line_start = text[..at].rfind('\n').map_or(0, |i| i + 1);
        let indent = &text[line_start..at];
        if indent.len() <= MAX_FENCE_INDENT && indent.bytes().all(|b| b == b' ') {
            if let Some(fence) = fence(text, at, run, limit) {
                return fence;
            }
        }
    }
    inline_span(text, at, run, limit)
}

/// A fenced block opened by the `run` backticks at `at`, if it is one and
/// it closes.
///
/// An unclosed fence would, by CommonMark, quote everything after it; a
/// model that forgot to close one more likely still meant the calls that
/// follow, so an unclosed fence is treated as plain text instead.
fn fence(text: &str, at: usize, run: usize, limit: usize) -> Option<Backticks> {
    let open_end = line_end(text, at, limit);
    let info = text[at + run..open_end].trim();
    if info.contains('`') || open_end >= limit {
        return None;
    }
    let inner_start = open_end + 1;
    let mut line = inner_start;
    while line < limit {
        let end = line_end(text, line, limit);
        if is_closing_marker(&text[line..end], run) {
            let language = info.split_whitespace().next().unwrap_or("");
            let is_tool = TOOL_FENCE_INFO
                .iter()
                .any(|tool| language.eq_ignore_ascii_case(tool));
            // The newline before the closing marker belongs to the fence.
            let inner_end = if line > inner_start { line - 1 } else { line };
            return Some(if is_tool {
                Backticks::ToolFence {
                    inner: inner_start..inner_end,
                    resume: end,
                }
            } else {
                Backticks::Quoted(end)
            });
        }
        line = end + 1;
    }
    None
}

/// Whether `line` closes a fence opened with `run` backticks: at most three
/// spaces, at least `run` backticks, then only whitespace.
fn is_closing_marker(line: &str, run: usize) -> bool {
    let trimmed = line.trim_start_matches(' ');
    if line.len() - trimmed.len() > MAX_FENCE_INDENT {
        return false;
    }
    let ticks = trimmed.bytes().take_while(|&b| b == b'`').count();
    ticks >= run && trimmed[ticks..].trim().is_empty()
}

/// An inline code span opened by the `run` backticks at `at`: it closes at
/// the next run of exactly the same length on the same line.
///
/// CommonMark lets spans cross lines, but a stray backtick in prose would
/// then quote whole paragraphs of real calls; models keep inline code on
/// one line, so spans stop at the line end.
pub(crate) fn inline_span(text: &str, at: usize, run: usize, limit: usize) -> Backticks {
    let bytes = text.as_bytes();
    let mut pos = at + run;
    // Stop at the line end as we go: finding it first would scan a long
    // line to its end once per backtick.
    while let Some(i) = text[pos..limit].find(['`', '\n']) {
        let candidate = pos + i;
        if bytes[candidate] == b'\n' {
            break;
        }
        let length = run_length(bytes, candidate, limit);
        if length == run {
            return Backticks::Quoted(candidate + length);
        }
        pos = candidate + length;
    }
    Backticks::Literal(at + run)
}
