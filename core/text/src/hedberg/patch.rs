//! The unified diff shown with every edit: `--- path` / `+++ path` headers and 3 lines of context.
//!
//! Diffing two whole 10,000-line texts costs milliseconds, yet an edit knows
//! exactly where it changed the text. So [`Changes`] records each
//! replacement as a span of lines and only those spans are diffed (with
//! `similar`); the lines between them are equal by construction.
//! Coordinates are *segments*: a text with `n` line breaks has `n + 1`
//! segments, the last one possibly empty, so every byte offset has a segment.

use std::fmt::Write as _;
use std::ops::Range;

use similar::udiff::UnifiedHunkHeader;
use similar::{capture_diff_slices, group_diff_ops, Algorithm, DiffOp, DiffTag};

/// Lines of unchanged context around each change.
const CONTEXT: usize = 3;

/// One replacement in a text: bytes `start..end` replaced by text holding `inserted_breaks` line breaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Splice {
    /// Where the replaced bytes start.
    pub start: usize,
    /// Where the replaced bytes end.
    pub end: usize,
    /// How many line breaks the replacement has.
    pub inserted_breaks: usize,
}

/// A changed run of segments: where it is now, how long it is now, how long it was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Span {
    start: usize,
    len: usize,
    old_len: usize,
}

/// The changed spans of a text edited step by step, in the latest text's segments.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Changes {
    spans: Vec<Span>,
}

/// Line breaks in `text`.
pub fn breaks(text: &str) -> usize {
    memchr::memchr_iter(b'\n', text.as_bytes()).count()
}

impl Changes {
    /// Records the splices of one step, made to `before` (sorted, not overlapping).
    pub fn record(&mut self, before: &str, splices: &[Splice]) {
        let mut cursor = (0, 0);
        let mut shift: isize = 0;
        for splice in splices {
            let first = segment_of(before, splice.start, &mut cursor);
            let last = segment_of(before, splice.end, &mut cursor);
            let delta = splice.inserted_breaks as isize - (last - first) as isize;
            let start = first.saturating_add_signed(shift);
            self.replace(start, last + 1 - first, delta);
            shift += delta;
        }
    }

    /// Segments `start..start + len` now become `len + delta` segments.
    fn replace(&mut self, start: usize, len: usize, delta: isize) {
        let end = start + len;
        let touches = |s: &Span| s.start <= end && start <= s.start + s.len;
        let merged: Vec<Span> = self.spans.iter().copied().filter(|s| touches(s)).collect();
        let union_start = merged
            .iter()
            .map(|s| s.start)
            .chain([start])
            .min()
            .unwrap_or(start);
        let union_end = merged
            .iter()
            .map(|s| s.start + s.len)
            .chain([end])
            .max()
            .unwrap_or(end);
        let inside: usize = merged.iter().map(|s| s.len).sum();
        let was: usize = merged.iter().map(|s| s.old_len).sum();
        let span = Span {
            start: union_start,
            len: (union_end - union_start).saturating_add_signed(delta),
            old_len: union_end - union_start - inside + was,
        };
        let mut spans: Vec<Span> = Vec::with_capacity(self.spans.len() + 1);
        for s in self.spans.iter().copied().filter(|s| !touches(s)) {
            if s.start > union_end {
                spans.push(Span {
                    start: s.start.saturating_add_signed(delta),
                    ..s
                });
            } else {
                spans.push(s);
            }
        }
        spans.push(span);
        spans.sort_by_key(|s| s.start);
        self.spans = spans;
    }

    /// Everything changed: the whole of a text replaced.
    pub fn whole(before: &str, replacement: &str) -> Changes {
        let mut changes = Changes::default();
        changes.record(
            before,
            &[Splice {
                start: 0,
                end: before.len(),
                inserted_breaks: breaks(replacement),
            }],
        );
        changes
    }

    /// The unified diff from `old` to `new` (the texts before and after every recorded step).
    pub fn render(&self, path: &str, old: &str, new: &str) -> String {
        if old == new {
            return String::new();
        }
        let (old_count, new_count) = (line_count(old), line_count(new));
        let (mut old_lines, mut new_lines) = (LineCursor::new(old), LineCursor::new(new));
        let mut ops = Vec::new();
        let (mut at_old, mut at_new) = (0, 0);
        let mut drift: isize = 0;
        for span in &self.spans {
            // Clamping drops the empty segment after a final line break, which is no line.
            let new_range = clamp(span.start..span.start + span.len, new_count);
            let old_start = span.start.saturating_add_signed(-drift);
            let old_range = clamp(old_start..old_start + span.old_len, old_count);
            drift += span.len as isize - span.old_len as isize;
            push_equal(
                &mut ops,
                at_old,
                at_new,
                old_range.start.saturating_sub(at_old),
            );
            let before = old_lines.lines(old_range.clone());
            let after = new_lines.lines(new_range.clone());
            for op in capture_diff_slices(Algorithm::Myers, &before, &after) {
                push(&mut ops, shift_op(op, old_range.start, new_range.start));
            }
            (at_old, at_new) = (old_range.end, new_range.end);
        }
        push_equal(&mut ops, at_old, at_new, old_count.saturating_sub(at_old));
        let (mut old_lines, mut new_lines) = (LineCursor::new(old), LineCursor::new(new));
        let mut out = format!("--- {path}\n+++ {path}\n");
        for group in group_diff_ops(ops, CONTEXT) {
            if group.iter().all(|op| op.tag() == DiffTag::Equal) {
                continue;
            }
            let _ = writeln!(out, "{}", UnifiedHunkHeader::new(&group));
            for op in &group {
                let (tag, old_range, new_range) = op.as_tag_tuple();
                if tag != DiffTag::Insert {
                    let mark = if tag == DiffTag::Equal { ' ' } else { '-' };
                    write_lines(&mut out, mark, &old_lines.lines(old_range));
                }
                if tag == DiffTag::Insert || tag == DiffTag::Replace {
                    write_lines(&mut out, '+', &new_lines.lines(new_range));
                }
            }
        }
        out
    }
}

/// How many lines a text has (a final line without a break counts).
fn line_count(text: &str) -> usize {
    breaks(text) + usize::from(!text.is_empty() && !text.ends_with('\n'))
}

/// Reads a text's lines by index, moving forward, so a diff touching a few
/// lines of a long text never splits all of it.
struct LineCursor<'t> {
    text: &'t str,
    /// The index and byte offset of the line the cursor is at.
    line: usize,
    offset: usize,
}

impl<'t> LineCursor<'t> {
    fn new(text: &'t str) -> LineCursor<'t> {
        LineCursor {
            text,
            line: 0,
            offset: 0,
        }
    }

    /// The byte offset where line `index` starts (the text's end past the last line).
    fn seek(&mut self, index: usize) -> usize {
        if index < self.line {
            (self.line, self.offset) = (0, 0);
        }
        // Whole chunks are skipped by counting their breaks, which is far
        // faster than finding the breaks one by one.
        const CHUNK: usize = 4096;
        let bytes = self.text.as_bytes();
        let mut remaining = index - self.line;
        let mut at = self.offset;
        while remaining > 0 {
            let end = (at + CHUNK).min(bytes.len());
            let in_chunk = memchr::memchr_iter(b'\n', &bytes[at..end]).count();
            if in_chunk >= remaining {
                at = memchr::memchr_iter(b'\n', &bytes[at..end])
                    .nth(remaining - 1)
                    .map_or(end, |found| at + found + 1);
                break;
            }
            remaining -= in_chunk;
            at = end;
            if at == bytes.len() {
                break;
            }
        }
        (self.line, self.offset) = (index, at);
        self.offset
    }

    /// Lines `range`, each with its line break.
    fn lines(&mut self, range: Range<usize>) -> Vec<&'t str> {
        let start = self.seek(range.start);
        let end = self.seek(range.end);
        self.text[start..end].split_inclusive('\n').collect()
    }
}

/// The segment holding byte `at`, counting on from `cursor` (offset, segment) when `at` is past it.
fn segment_of(text: &str, at: usize, cursor: &mut (usize, usize)) -> usize {
    let (from, segment) = if at >= cursor.0 { *cursor } else { (0, 0) };
    let segment = segment + breaks(&text[from..at]);
    *cursor = (at, segment);
    segment
}

/// `range` cut to `0..len`.
fn clamp(range: Range<usize>, len: usize) -> Range<usize> {
    range.start.min(len)..range.end.min(len)
}

/// Adds an equal run, if it is not empty.
fn push_equal(ops: &mut Vec<DiffOp>, old_index: usize, new_index: usize, len: usize) {
    if len > 0 {
        push(
            ops,
            DiffOp::Equal {
                old_index,
                new_index,
                len,
            },
        );
    }
}

/// Adds an op, joining it to a preceding equal run so hunks split only at long equal runs.
fn push(ops: &mut Vec<DiffOp>, op: DiffOp) {
    if let (Some(DiffOp::Equal { len, .. }), DiffOp::Equal { len: more, .. }) = (ops.last_mut(), op)
    {
        *len += more;
        return;
    }
    ops.push(op);
}

/// An op from a span's diff moved to whole-text indexes.
fn shift_op(op: DiffOp, old: usize, new: usize) -> DiffOp {
    match op {
        DiffOp::Equal {
            old_index,
            new_index,
            len,
        } => DiffOp::Equal {
            old_index: old_index + old,
            new_index: new_index + new,
            len,
        },
        DiffOp::Delete {
            old_index,
            old_len,
            new_index,
        } => DiffOp::Delete {
            old_index: old_index + old,
            old_len,
            new_index: new_index + new,
        },
        DiffOp::Insert {
            old_index,
            new_index,
            new_len,
        } => DiffOp::Insert {
            old_index: old_index + old,
            new_index: new_index + new,
            new_len,
        },
        DiffOp::Replace {
            old_index,
            old_len,
            new_index,
            new_len,
        } => DiffOp::Replace {
            old_index: old_index + old,
            old_len,
            new_index: new_index + new,
            new_len,
        },
    }
}

/// Writes lines with their mark; a line without a break gets the "No newline" note.
fn write_lines(out: &mut String, mark: char, lines: &[&str]) {
    for line in lines {
        out.push(mark);
        out.push_str(line);
        if !line.ends_with('\n') {
            out.push_str("\n\\ No newline at end of file\n");
        }
    }
}

/// The unified diff between two texts, diffing them whole.
pub fn unified(path: &str, old: &str, new: &str) -> String {
    Changes::whole(old, new).render(path, old, new)
}
