//! Markdown code spans and fences in reply prose.
//!
//! A model that writes "use `<get path=…/>` to read" is quoting a tag, not
//! calling it; the same goes for a ```` ```rust ```` fence. Fences labelled
//! `tool_code`, `tool_command` or `xml` are how some models (Gemma) wrap
//! real calls, so their inside is parsed like any reply text.

use super::steps;
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
pub(crate) fn classify(text: &str, at: usize, limit: usize, memo: &mut FenceMemo) -> Backticks {
    let bytes = text.as_bytes();
    let run = run_length(bytes, at, limit);
    if run >= 3 && starts_line(bytes, at) && !memo.rules_out(at, run, limit) {
        if let Some(fence) = fence(text, at, run, limit) {
            return fence;
        }
        memo.record(at, run, limit);
    }
    inline_span(text, at, run, limit)
}

/// Whether the backticks at `at` open their line: at most three spaces before them, then the
/// line's start. Looks back at most four bytes, so a long line is never rescanned.
fn starts_line(bytes: &[u8], at: usize) -> bool {
    let mut i = at;
    while i > 0 && bytes[i - 1] == b' ' {
        if at - i == MAX_FENCE_INDENT {
            return false;
        }
        i -= 1;
    }
    i == 0 || bytes[i - 1] == b'\n'
}

/// Fences already known not to close: a fence opened at `from` with `run` backticks found no
/// closing line before `limit`, so no later fence of at least as many backticks closes there
/// either (its closing line would have closed the earlier one). Without it, a reply of many
/// unclosed fence lines would search to its end once per line.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct FenceMemo {
    unclosed: Option<(usize, usize, usize)>,
}

impl FenceMemo {
    fn rules_out(&self, at: usize, run: usize, limit: usize) -> bool {
        self.unclosed
            .is_some_and(|(from, min_run, end)| at >= from && run >= min_run && limit <= end)
    }

    fn record(&mut self, at: usize, run: usize, limit: usize) {
        let narrower = self
            .unclosed
            .is_none_or(|(_, min_run, end)| run < min_run || limit > end);
        if narrower {
            self.unclosed = Some((at, run, limit));
        }
    }
}

/// A fenced block opened by the `run` backticks at `at`, if it is one and
/// it closes.
///
/// An unclosed fence would, by CommonMark, quote everything after it; a
/// model that forgot to close one more likely still meant the calls that
/// follow, so an unclosed fence is treated as plain text instead.
fn fence(text: &str, at: usize, run: usize, limit: usize) -> Option<Backticks> {
    let open_end = line_end(text, at, limit);
    steps::add(open_end - at);
    let info = text[at + run..open_end].trim();
    if info.contains('`') || open_end >= limit {
        return None;
    }
    let inner_start = open_end + 1;
    let mut line = inner_start;
    while line < limit {
        let end = line_end(text, line, limit);
        steps::add(end + 1 - line);
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
        steps::add(i + 1);
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
