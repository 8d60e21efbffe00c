//! Unified diffs: headered diffs with exact hunk counts through `unidiff`, and the bare `@@` hunks models often write, read directly.

use super::{skip_blank_lines, Block};

/// Digits a hunk-header number may have; longer numbers are no diff a model meant.
const MAX_DIGITS: usize = 9;

/// One hunk as read: where it starts and its old and new sides.
#[derive(Debug, Default)]
struct Hunk {
    line_hint: Option<usize>,
    old: Vec<String>,
    new: Vec<String>,
    changes: usize,
}

impl Hunk {
    fn into_block(mut self) -> Option<Block> {
        if self.changes == 0 {
            return None;
        }
        // A blank line at the very end is the body's trailing break, not an empty context line.
        while self.old.last().is_some_and(String::is_empty)
            && self.new.last().is_some_and(String::is_empty)
        {
            self.old.pop();
            self.new.pop();
        }
        Some(Block {
            line_hint: self.line_hint,
            ..Block::literal(&self.old.join("\n"), &self.new.join("\n"))
        })
    }
}

/// The blocks of a unified diff, or `None` if `text` does not start like one.
pub fn parse(text: &str) -> Option<Vec<Block>> {
    let text = skip_blank_lines(text);
    let first = text.lines().next()?;
    let starts = ["@@", "--- ", "diff ", "Index: ", "```diff", "```patch"];
    if !starts.iter().any(|s| first.starts_with(s))
        || !text.contains("\n@@") && !first.starts_with("@@")
    {
        return None;
    }
    let direct = read_directly(text);
    let changes: usize = direct.iter().map(|h| h.changes).sum();
    let hunks = match with_unidiff(text) {
        Some(hunks) if hunks.iter().map(|h| h.changes).sum::<usize>() == changes => hunks,
        _ => direct,
    };
    let blocks: Vec<Block> = hunks.into_iter().filter_map(Hunk::into_block).collect();
    (!blocks.is_empty()).then_some(blocks)
}

/// True when `line` is a file header line or other diff metadata, not hunk content.
fn is_metadata(line: &str) -> bool {
    [
        "diff ",
        "index ",
        "Index: ",
        "new file mode",
        "deleted file mode",
        "similarity ",
        "rename ",
        "```",
    ]
    .iter()
    .any(|p| line.starts_with(p))
}

/// Reads hunks line by line, tolerating missing counts, missing headers and unprefixed context.
fn read_directly(text: &str) -> Vec<Hunk> {
    let lines: Vec<&str> = text.lines().collect();
    let mut hunks = Vec::new();
    let mut current: Option<Hunk> = None;
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        let header_pair =
            line.starts_with("--- ") && lines.get(i + 1).is_some_and(|n| n.starts_with("+++ "));
        if line.starts_with("@@") {
            hunks.extend(current.take());
            current = Some(Hunk {
                line_hint: hint(line),
                ..Hunk::default()
            });
        } else if header_pair || is_metadata(line) {
            hunks.extend(current.take());
            i += usize::from(header_pair);
        } else if let Some(hunk) = current.as_mut() {
            if let Some(old) = line.strip_prefix('-') {
                hunk.old.push(old.to_owned());
                hunk.changes += 1;
            } else if let Some(new) = line.strip_prefix('+') {
                hunk.new.push(new.to_owned());
                hunk.changes += 1;
            } else if !line.starts_with('\\') {
                // A context line; models often drop its leading space.
                let context = line.strip_prefix(' ').unwrap_or(line);
                hunk.old.push(context.to_owned());
                hunk.new.push(context.to_owned());
            }
        }
        i += 1;
    }
    hunks.extend(current);
    hunks
}

/// The line a hunk header places its change at: the new side's start, else the old side's.
fn hint(header: &str) -> Option<usize> {
    let ranges = header.trim_start_matches('@').split("@@").next()?;
    let number = |sign: char| {
        ranges
            .split_whitespace()
            .find_map(|part| part.strip_prefix(sign))
            .and_then(|range| range.split(',').next())
            .and_then(|start| start.parse::<usize>().ok())
    };
    number('+').or_else(|| number('-')).filter(|&line| line > 0)
}

/// True when every `@@` line is a full `@@ -a[,b] +c[,d] @@` header with short ASCII numbers.
fn headers_have_counts(text: &str) -> bool {
    text.lines().filter(|l| l.starts_with("@@")).all(|line| {
        let Some(ranges) = line.strip_prefix("@@ ").and_then(|r| r.split(" @@").next()) else {
            return false;
        };
        let mut parts = ranges.split(' ');
        let ok = |part: Option<&str>, sign: char| {
            part.and_then(|p| p.strip_prefix(sign))
                .is_some_and(|range| {
                    range.split(',').count() <= 2
                        && range.split(',').all(|n| {
                            !n.is_empty()
                                && n.len() <= MAX_DIGITS
                                && n.bytes().all(|b| b.is_ascii_digit())
                        })
                })
        };
        ok(parts.next(), '-') && ok(parts.next(), '+') && parts.next().is_none()
    })
}

/// Reads a headered diff with exact counts through `unidiff`; `None` when it is not one.
///
/// `unidiff` trusts what it is given, so only diffs that pass these checks
/// reach it: a `--- name` line before the first `+++ ` line, and hunk
/// headers with counts (see [`headers_have_counts`]).
fn with_unidiff(text: &str) -> Option<Vec<Hunk>> {
    let first_target = text.lines().position(|l| l.starts_with("+++ "))?;
    let has_source = text.lines().take(first_target).any(|l| {
        l.strip_prefix("--- ")
            .is_some_and(|name| !name.starts_with('\t') && !name.is_empty())
    });
    if !has_source || !headers_have_counts(text) {
        return None;
    }
    let mut patch = unidiff::PatchSet::new();
    patch.parse(text).ok()?;
    let mut hunks = Vec::new();
    for file in patch.files() {
        for hunk in file.hunks() {
            if !hunk.is_valid() {
                return None;
            }
            let side = |lines: Vec<unidiff::Line>| lines.into_iter().map(|l| l.value).collect();
            let start = if hunk.target_start > 0 {
                hunk.target_start
            } else {
                hunk.source_start
            };
            hunks.push(Hunk {
                line_hint: (start > 0).then_some(start),
                old: side(hunk.source_lines()),
                new: side(hunk.target_lines()),
                changes: hunk.added() + hunk.removed(),
            });
        }
    }
    Some(hunks)
}
