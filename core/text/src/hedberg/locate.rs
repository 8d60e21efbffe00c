//! Finding one block in a text and replacing it: exact, escape-healed, line-anchored, then whitespace-tolerant with indentation healing.

use std::borrow::Cow;

use super::edits::{Block, BlockKind};
use super::messages::{self as msg, fill};
use super::patch::{breaks, Splice};
use super::pattern::sed_replace_lines;
use super::rx;

/// A block applied to a text: the new text and what the model should hear about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    /// The text after the block.
    pub text: String,
    /// Ambiguity and healing notes, without a block prefix.
    pub warnings: Vec<String>,
    /// Where the old text was replaced, in order.
    pub splices: Vec<Splice>,
}

/// Why a block could not be applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    /// The SEARCH text matched nowhere, even with healing.
    NotFound {
        /// The 1-based line where the block's first line does occur, if it does.
        first_line_at: Option<usize>,
    },
    /// The body had edit markers but no complete block.
    NoBlocks,
}

/// Applies one block to `text` (whose line breaks are `\n`).
pub fn apply_block(text: &str, block: &Block) -> Result<Step, Problem> {
    let Some(search) = block.search.as_deref() else {
        return Ok(Step {
            text: block.replace.clone(),
            warnings: Vec::new(),
            splices: vec![Splice {
                start: 0,
                end: text.len(),
                inserted_breaks: breaks(&block.replace),
            }],
        });
    };
    let mut warnings = Vec::new();
    let mut replace = Cow::Borrowed(block.replace.as_str());
    if let BlockKind::Sed { flags } = &block.kind {
        match rx::build(search, flags, true) {
            Ok(regex) => {
                let global = flags.contains('g');
                if let Some(replaced) = sed_replace_lines(&regex, text, &block.replace, global) {
                    if replaced.lines.len() > 1 {
                        let count = replaced.lines.len().to_string();
                        let mut distinct = replaced.lines.clone();
                        distinct.dedup();
                        let list = msg::line_list(&distinct);
                        warnings.push(fill(msg::SED_MANY, &[("count", &count), ("lines", &list)]));
                    }
                    return Ok(Step {
                        text: replaced.text,
                        warnings,
                        splices: replaced.splices,
                    });
                }
            }
            Err(error) => {
                let error = error.to_string();
                let short = error
                    .lines()
                    .last()
                    .unwrap_or("")
                    .trim_start_matches("error: ");
                warnings.push(fill(msg::SED_LITERAL, &[("error", short)]));
            }
        }
        replace = Cow::Owned(rx::unescape_replacement(&block.replace));
    }
    literal(text, search, &replace, block.line_hint, warnings)
}

/// The literal pipeline: exact, escape-healed, line-anchored, whitespace-tolerant.
fn literal(
    text: &str,
    search: &str,
    replace: &str,
    hint: Option<usize>,
    mut warnings: Vec<String>,
) -> Result<Step, Problem> {
    if search.trim().is_empty() {
        return Ok(insert(text, replace, hint, warnings));
    }
    if let Some((new, splice)) = exact(text, search, replace, hint, &mut warnings) {
        return Ok(Step::one(new, warnings, splice));
    }
    let unescaped = rx::unescape_regex(search);
    if unescaped != search {
        if let Some((new, splice)) = exact(text, &unescaped, replace, hint, &mut warnings) {
            warnings.push(msg::ESCAPES_HEALED.to_owned());
            return Ok(Step::one(new, warnings, splice));
        }
    }
    let lines = Lines::new(text);
    let wanted = search_lines(search);
    let anchored = lines.find(&wanted, |file, want| file.trim_end() == want.trim_end());
    if let Some(&(first, last)) = choose(&anchored, hint, &mut warnings) {
        warnings.push(msg::WHITESPACE_HEALED.to_owned());
        let (new, splice) = lines.splice(first, last, replace);
        return Ok(Step::one(new, warnings, splice));
    }
    let tokens: Vec<&str> = wanted
        .iter()
        .copied()
        .filter(|l| !l.trim().is_empty())
        .collect();
    let loose = lines.find_skipping_blanks(&tokens);
    if let Some(&(first, last)) = choose(&loose, hint, &mut warnings) {
        let file_indent = indent(lines.line(first));
        let search_indent = indent(tokens.first().copied().unwrap_or(""));
        let healed = if file_indent == search_indent {
            warnings.push(msg::WHITESPACE_HEALED.to_owned());
            Cow::Borrowed(replace)
        } else {
            warnings.push(fill(
                msg::INDENT_HEALED,
                &[
                    ("file", &msg::show_indent(file_indent)),
                    ("search", &msg::show_indent(search_indent)),
                ],
            ));
            Cow::Owned(reindent(replace, search_indent, file_indent))
        };
        let (new, splice) = lines.splice(first, last, &healed);
        return Ok(Step::one(new, warnings, splice));
    }
    let first_line_at = (tokens.len() > 1)
        .then(|| {
            lines
                .find_skipping_blanks(&tokens[..1])
                .first()
                .map(|&(at, _)| at + 1)
        })
        .flatten();
    Err(Problem::NotFound { first_line_at })
}

impl Step {
    /// A step that made one splice.
    fn one(text: String, warnings: Vec<String>, splice: Splice) -> Step {
        Step {
            text,
            warnings,
            splices: vec![splice],
        }
    }
}

/// Replaces one exact occurrence (the one nearest the hint, else the first); `None` if there is none.
fn exact(
    text: &str,
    search: &str,
    replace: &str,
    hint: Option<usize>,
    warnings: &mut Vec<String>,
) -> Option<(String, Splice)> {
    let starts: Vec<usize> =
        memchr::memmem::find_iter(text.as_bytes(), search.as_bytes()).collect();
    let mut start = *starts.first()?;
    if starts.len() > 1 || hint.is_some() {
        let numbers = line_numbers(text, &starts);
        let ranges: Vec<(usize, usize)> = numbers.iter().map(|&n| (n - 1, n - 1)).collect();
        let chosen = choose(&ranges, hint, warnings)?;
        let index = ranges.iter().position(|r| r == chosen)?;
        start = starts[index];
    }
    let mut end = start + search.len();
    // An emptied run of whole lines takes its line break with it, so no blank line is left.
    let whole_lines = (start == 0 || text[..start].ends_with('\n'))
        && (end == text.len() || text[end..].starts_with('\n'));
    if replace.is_empty() && whole_lines && !search.ends_with('\n') {
        if end < text.len() {
            end += 1;
        } else {
            start = start.saturating_sub(1);
        }
    }
    let splice = Splice {
        start,
        end,
        inserted_breaks: breaks(replace),
    };
    Some((
        format!("{}{replace}{}", &text[..start], &text[end..]),
        splice,
    ))
}

/// The 1-based line of each sorted byte offset.
fn line_numbers(text: &str, offsets: &[usize]) -> Vec<usize> {
    let mut line = 1;
    let mut from = 0;
    offsets
        .iter()
        .map(|&at| {
            line += breaks(&text[from..at]);
            from = at;
            line
        })
        .collect()
}

/// Picks one candidate line range: nearest the 1-based hint, else the first; warns when there were several.
fn choose<'c>(
    candidates: &'c [(usize, usize)],
    hint: Option<usize>,
    warnings: &mut Vec<String>,
) -> Option<&'c (usize, usize)> {
    let chosen = match hint {
        Some(hint) => candidates
            .iter()
            .min_by_key(|(first, _)| (first + 1).abs_diff(hint))?,
        None => candidates.first()?,
    };
    if candidates.len() > 1 {
        let lines: Vec<usize> = candidates.iter().map(|(first, _)| first + 1).collect();
        warnings.push(fill(
            msg::AMBIGUOUS,
            &[
                ("count", &candidates.len().to_string()),
                ("lines", &msg::line_list(&lines)),
                ("used", &(chosen.0 + 1).to_string()),
            ],
        ));
    }
    Some(chosen)
}

/// An empty SEARCH: the replacement is the content of an empty text, goes before the
/// hinted line, or is appended at the end.
fn insert(text: &str, replace: &str, hint: Option<usize>, mut warnings: Vec<String>) -> Step {
    if text.trim().is_empty() {
        let splice = Splice {
            start: 0,
            end: text.len(),
            inserted_breaks: breaks(replace),
        };
        return Step::one(replace.to_owned(), warnings, splice);
    }
    let lines = Lines::new(text);
    let mut block = replace.to_owned();
    if !block.ends_with('\n') {
        block.push('\n');
    }
    let (at, sep) = match hint.and_then(|h| lines.ranges.get(h.saturating_sub(1))) {
        Some(&(start, _)) => (start, ""),
        None => {
            if hint.is_none() {
                warnings.push(msg::APPENDED.to_owned());
            }
            (text.len(), if text.ends_with('\n') { "" } else { "\n" })
        }
    };
    let inserted = format!("{sep}{block}");
    let splice = Splice {
        start: at,
        end: at,
        inserted_breaks: breaks(&inserted),
    };
    let new = format!("{}{inserted}{}", &text[..at], &text[at..]);
    Step::one(new, warnings, splice)
}

/// The lines of a SEARCH text; a final line break does not start another line.
fn search_lines(search: &str) -> Vec<&str> {
    search
        .strip_suffix('\n')
        .unwrap_or(search)
        .split('\n')
        .collect()
}

/// The leading whitespace of a line.
fn indent(line: &str) -> &str {
    &line[..line.len() - line.trim_start().len()]
}

/// A line with its whitespace runs collapsed, for whitespace-tolerant comparison.
fn squash(line: &str) -> String {
    line.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Re-indents a replacement written with `from` indentation to `to`, keeping relative indentation.
fn reindent(replace: &str, from: &str, to: &str) -> String {
    let lines: Vec<String> = replace
        .split('\n')
        .map(|line| {
            if line.trim().is_empty() {
                return line.to_owned();
            }
            if let Some(rest) = line.strip_prefix(from) {
                return format!("{to}{rest}");
            }
            let own = indent(line);
            let content = line.trim_start();
            if from.starts_with(own) {
                // Indented less than the SEARCH's first line: keep that difference.
                let less = from.chars().count() - own.chars().count();
                let kept: String = to
                    .chars()
                    .take(to.chars().count().saturating_sub(less))
                    .collect();
                return format!("{kept}{content}");
            }
            format!("{to}{content}")
        })
        .collect();
    lines.join("\n")
}

/// A text's lines as byte ranges without their line breaks.
struct Lines<'t> {
    text: &'t str,
    ranges: Vec<(usize, usize)>,
}

impl<'t> Lines<'t> {
    fn new(text: &'t str) -> Lines<'t> {
        let mut ranges = Vec::new();
        let mut start = 0;
        for (at, _) in text.match_indices('\n') {
            ranges.push((start, at));
            start = at + 1;
        }
        if start < text.len() {
            ranges.push((start, text.len()));
        }
        Lines { text, ranges }
    }

    fn line(&self, index: usize) -> &'t str {
        self.ranges
            .get(index)
            .map_or("", |&(s, e)| &self.text[s..e])
    }

    /// Every run of consecutive lines equal to `wanted` under `same`, as (first, last) indexes.
    fn find(&self, wanted: &[&str], same: impl Fn(&str, &str) -> bool) -> Vec<(usize, usize)> {
        let n = wanted.len();
        if n == 0 || n > self.ranges.len() {
            return Vec::new();
        }
        (0..=self.ranges.len() - n)
            .filter(|&i| (0..n).all(|j| same(self.line(i + j), wanted[j])))
            .map(|i| (i, i + n - 1))
            .collect()
    }

    /// Every run of non-blank lines equal to `tokens` up to whitespace, blank lines skipped.
    fn find_skipping_blanks(&self, tokens: &[&str]) -> Vec<(usize, usize)> {
        let tokens: Vec<String> = tokens.iter().map(|t| squash(t)).collect();
        let filled: Vec<(usize, String)> = (0..self.ranges.len())
            .filter(|&i| !self.line(i).trim().is_empty())
            .map(|i| (i, squash(self.line(i))))
            .collect();
        let n = tokens.len();
        if n == 0 || n > filled.len() {
            return Vec::new();
        }
        (0..=filled.len() - n)
            .filter(|&i| (0..n).all(|j| filled[i + j].1 == tokens[j]))
            .map(|i| (filled[i].0, filled[i + n - 1].0))
            .collect()
    }

    /// The text with lines `first..=last` replaced by `replace`; an empty replacement removes them.
    fn splice(&self, first: usize, last: usize, replace: &str) -> (String, Splice) {
        let mut start = self.ranges[first].0;
        let mut end = self.ranges[last].1;
        let replace = replace.strip_suffix('\n').unwrap_or(replace);
        if replace.is_empty() {
            if end < self.text.len() {
                end += 1;
            } else {
                start = start.saturating_sub(1);
            }
        }
        let splice = Splice {
            start,
            end,
            inserted_breaks: breaks(replace),
        };
        let new = format!("{}{replace}{}", &self.text[..start], &self.text[end..]);
        (new, splice)
    }
}
