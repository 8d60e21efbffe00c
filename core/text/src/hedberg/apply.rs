//! Applying an edit to one entry's text, atomically: every block must match, or nothing changes.

use std::borrow::Cow;
use std::fmt;

use super::edits::{Block, Edit};
use super::locate::{self, Problem};
use super::messages::{self as msg, fill};
use super::patch::Changes;
use crate::tokens;

/// A successful edit: the new content and what to show about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Applied {
    /// The entry's new content, with the original's line endings.
    pub content: String,
    /// The unified diff from the old content ("" when nothing changed).
    pub patch: String,
    /// Estimated tokens of the old content.
    pub tokens_before: i32,
    /// Estimated tokens of the new content.
    pub tokens_after: i32,
    /// Ambiguity and healing notes for the model, one per line of advice.
    pub warnings: Vec<String>,
}

/// A failed edit: nothing was changed, and why each failing block failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EditFailure {
    /// How many blocks the edit had.
    pub blocks: usize,
    /// One entry per failing block, in block order.
    pub diagnostics: Vec<BlockDiagnostic>,
}

/// Why one block failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockDiagnostic {
    /// The block's 1-based position in the edit (0 when the edit had no blocks).
    pub block: usize,
    /// What went wrong.
    pub problem: Problem,
    /// The model-facing message, naming the block.
    pub message: String,
}

impl fmt::Display for EditFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.blocks == 0 {
            write!(f, "{}", msg::NOTHING_CHANGED)?;
        } else {
            let failed = self.diagnostics.len().to_string();
            let total = self.blocks.to_string();
            write!(
                f,
                "{}",
                fill(msg::FAILED, &[("failed", &failed), ("total", &total)])
            )?;
        }
        for diagnostic in &self.diagnostics {
            write!(f, "\n{}", diagnostic.message)?;
        }
        Ok(())
    }
}

impl std::error::Error for EditFailure {}

/// Applies `edit` to `text`, the current content of the entry at `path`.
///
/// Blocks apply in order to a working copy, so a later block sees the
/// earlier ones' changes; every block is tried even after one fails, so the
/// failure lists them all. A text whose every line break is CRLF is edited
/// with LF and written back with CRLF. Token counts use
/// [`tokens::estimate`] with `token_divisor`.
pub fn apply(
    path: &str,
    text: &str,
    edit: &Edit,
    token_divisor: u32,
) -> Result<Applied, EditFailure> {
    let crlf = uses_crlf(text);
    let lf = |s: &str| -> String {
        if crlf {
            s.replace("\r\n", "\n")
        } else {
            s.to_owned()
        }
    };
    let mut work = lf(text);
    let mut warnings = Vec::new();
    let mut changes = Changes::default();
    match edit {
        Edit::Replace(content) => {
            let content = lf(content);
            changes = Changes::whole(&work, &content);
            work = content;
        }
        Edit::Blocks(blocks) if blocks.is_empty() => {
            return Err(EditFailure {
                blocks: 0,
                diagnostics: vec![BlockDiagnostic {
                    block: 0,
                    problem: Problem::NoBlocks,
                    message: msg::NO_BLOCKS.to_owned(),
                }],
            });
        }
        Edit::Blocks(blocks) => {
            let total = blocks.len();
            let mut diagnostics = Vec::new();
            for (index, block) in blocks.iter().enumerate() {
                let block = if crlf {
                    Cow::Owned(to_lf(block))
                } else {
                    Cow::Borrowed(block)
                };
                let prefix = prefix(index + 1, total, &block);
                match locate::apply_block(&work, &block) {
                    Ok(step) => {
                        changes.record(&work, &step.splices);
                        work = step.text;
                        let prefix = if total > 1 { prefix.as_str() } else { "" };
                        warnings.extend(step.warnings.into_iter().map(|w| format!("{prefix}{w}")));
                    }
                    Err(problem) => {
                        let message = format!("{prefix}{}", describe(&problem));
                        diagnostics.push(BlockDiagnostic {
                            block: index + 1,
                            problem,
                            message,
                        });
                    }
                }
            }
            if !diagnostics.is_empty() {
                return Err(EditFailure {
                    blocks: total,
                    diagnostics,
                });
            }
        }
    }
    let content = if crlf {
        work.replace('\n', "\r\n")
    } else {
        work
    };
    Ok(Applied {
        patch: changes.render(path, text, &content),
        tokens_before: tokens::estimate(text, token_divisor),
        tokens_after: tokens::estimate(&content, token_divisor),
        content,
        warnings,
    })
}

/// True when the text has line breaks and every one of them is CRLF.
fn uses_crlf(text: &str) -> bool {
    let bytes = text.as_bytes();
    // Most texts have no `\r` at all: one fast scan settles it.
    if memchr::memchr(b'\r', bytes).is_none() {
        return false;
    }
    let mut any = false;
    for at in memchr::memchr_iter(b'\n', bytes) {
        if at == 0 || bytes[at - 1] != b'\r' {
            return false;
        }
        any = true;
    }
    any
}

/// A block with its CRLF line breaks turned to LF, to match a CRLF text edited as LF.
fn to_lf(block: &Block) -> Block {
    Block {
        search: block.search.as_ref().map(|s| s.replace("\r\n", "\n")),
        replace: block.replace.replace("\r\n", "\n"),
        ..block.clone()
    }
}

/// "Block 2 of 3 (SEARCH starting `…`): ".
fn prefix(index: usize, total: usize, block: &Block) -> String {
    fill(
        msg::BLOCK_PREFIX,
        &[
            ("index", &index.to_string()),
            ("total", &total.to_string()),
            ("what", &msg::block_name(block.search.as_deref())),
        ],
    )
}

/// The model-facing text for a problem.
fn describe(problem: &Problem) -> String {
    match problem {
        Problem::NotFound {
            first_line_at: Some(line),
        } => format!(
            "{} {}",
            msg::NOT_FOUND,
            fill(msg::FIRST_LINE_AT, &[("line", &line.to_string())])
        ),
        Problem::NotFound {
            first_line_at: None,
        } => msg::NOT_FOUND.to_owned(),
        Problem::NoBlocks => msg::NO_BLOCKS.to_owned(),
    }
}
