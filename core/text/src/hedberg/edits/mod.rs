//! The eight edit formats a `set` body may use, read into one [`Edit`].
//!
//! [`recognise`] tries the formats in this order and takes the first that fits:
//!
//! 1. **attributes** — a `search` attribute: its block replaces it with the
//!    `replace` attribute, or with the body when there is none;
//! 2. **merge conflict** — `<<<<<<< SEARCH` / `=======` / `>>>>>>> REPLACE`
//!    blocks, markers of 3–12 characters that need not agree, text between
//!    blocks ignored. A body with a SEARCH marker but no complete block gives
//!    no blocks (and so a failed edit) rather than a file full of markers;
//! 3. **replace-only** — `=======` … `>>>>>>> REPLACE` without a SEARCH
//!    marker: the text between is the whole new content;
//! 4. **unified diff** — a body whose first line starts a diff (`@@`, `--- `,
//!    `diff `, `Index: `, or a ```` ```diff ```` fence); each hunk is one block,
//!    its old side (context and `-` lines) replaced by its new side, with the
//!    hunk's line number kept to choose between repeated matches;
//! 5. **Claude XML** — `<old_text>…</old_text><new_text>…</new_text>` pairs
//!    (also `old_str`/`new_str`);
//! 6. **JSON** — `{"search": …, "replace": …}` (or an array of them) with no
//!    other keys, or the loose `{search="…", replace="…"}`;
//! 7. **sed** — a body of `s` commands with any delimiter (see `sed`);
//! 8. **full replacement** — anything else is the new content, with leading
//!    blank lines and trailing spaces dropped (a final line break is kept).
//!
//! Formats 4, 6 and 7 are also recognised inside a surrounding ```` ``` ```` fence.

mod diff;
mod json;
mod markers;

use super::sed;

/// An edit read from a `set` body: blocks to apply in order, or a whole new content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Edit {
    /// Search/replace blocks, applied in order; all must match or nothing changes.
    Blocks(Vec<Block>),
    /// The new content, replacing everything.
    Replace(String),
}

/// One search/replace step of an edit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    /// The text to find; `None` means the replacement is the whole new content.
    pub search: Option<String>,
    /// What replaces the found text.
    pub replace: String,
    /// Whether `search` is literal text or a sed regex.
    pub kind: BlockKind,
    /// The 1-based line where the change is expected (from a diff hunk), used
    /// to choose among repeated matches and to place pure insertions.
    pub line_hint: Option<usize>,
}

/// How a block's search text is read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BlockKind {
    /// Literal text, matched exactly first and then with healing.
    Literal,
    /// A sed regex with its flags; falls back to literal matching if it finds nothing.
    Sed {
        /// The command's flag letters (`g`, `i`, `m`, `s`, …).
        flags: String,
    },
}

/// The edit attributes of a `set` tag, as the caller read them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EditAttrs {
    /// The `search` attribute: the text to replace.
    pub search: Option<String>,
    /// The `replace` attribute: its replacement (wins over the body).
    pub replace: Option<String>,
}

/// Which of the eight formats a body was read as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EditFormat {
    /// `search=`/`replace=` attributes.
    Attributes,
    /// `<<<<<<< SEARCH` … `=======` … `>>>>>>> REPLACE` blocks.
    MergeConflict,
    /// `=======` … `>>>>>>> REPLACE`: the whole content.
    ReplaceOnly,
    /// Unified diff hunks.
    UnifiedDiff,
    /// `<old_text>`/`<new_text>` pairs.
    ClaudeXml,
    /// A JSON or loose `{search, replace}` object.
    Json,
    /// sed `s` commands.
    Sed,
    /// Anything else: the new content.
    FullReplacement,
}

impl Block {
    /// A literal block.
    pub fn literal(search: &str, replace: &str) -> Block {
        Block {
            search: Some(search.to_owned()),
            replace: replace.to_owned(),
            kind: BlockKind::Literal,
            line_hint: None,
        }
    }

    /// A sed block.
    pub fn sed(search: &str, replace: &str, flags: &str) -> Block {
        Block {
            kind: BlockKind::Sed {
                flags: flags.to_owned(),
            },
            ..Block::literal(search, replace)
        }
    }

    /// A block whose replacement is the whole new content.
    pub fn whole(replace: &str) -> Block {
        Block {
            search: None,
            ..Block::literal("", replace)
        }
    }

    /// The same block, expected at 1-based `line`.
    pub fn at_line(self, line: usize) -> Block {
        Block {
            line_hint: Some(line),
            ..self
        }
    }
}

/// Reads a `set` body and its edit attributes into an [`Edit`].
pub fn parse_edit(body: &str, attrs: &EditAttrs) -> Edit {
    recognise(body, attrs).1
}

/// Reads a `set` body and its edit attributes, also saying which format it was.
pub fn recognise(body: &str, attrs: &EditAttrs) -> (EditFormat, Edit) {
    if let Some(search) = &attrs.search {
        let replace = attrs.replace.clone().unwrap_or_else(|| trim_fragment(body));
        let block = Block::literal(search, &replace);
        return (EditFormat::Attributes, Edit::Blocks(vec![block]));
    }
    let text = body.replace("\r\n", "\n");
    if markers::has_search_marker(&text) {
        return (
            EditFormat::MergeConflict,
            Edit::Blocks(markers::merge_conflict(&text)),
        );
    }
    if let Some(block) = markers::replace_only(&text) {
        return (EditFormat::ReplaceOnly, Edit::Blocks(vec![block]));
    }
    if markers::has_replace_marker(&text) {
        return (EditFormat::MergeConflict, Edit::Blocks(Vec::new()));
    }
    let inner = unfence(&text);
    for candidate in [text.as_str(), inner] {
        if let Some(blocks) = diff::parse(candidate) {
            return (EditFormat::UnifiedDiff, Edit::Blocks(blocks));
        }
    }
    let pairs = markers::claude(&text);
    if !pairs.is_empty() {
        return (EditFormat::ClaudeXml, Edit::Blocks(pairs));
    }
    for candidate in [text.trim(), inner.trim()] {
        if let Some(blocks) = json::parse(candidate) {
            return (EditFormat::Json, Edit::Blocks(blocks));
        }
    }
    for candidate in [text.trim(), inner.trim()] {
        if let Some(commands) = sed::parse_script(candidate) {
            let blocks = commands
                .into_iter()
                .map(|c| Block::sed(&c.search, &c.replace, &c.flags))
                .collect();
            return (EditFormat::Sed, Edit::Blocks(blocks));
        }
    }
    (
        EditFormat::FullReplacement,
        Edit::Replace(trim_content(body)),
    )
}

/// The inside of a body wrapped in one ```` ``` ```` fence, or the body itself.
fn unfence(text: &str) -> &str {
    let trimmed = text.trim();
    let Some(rest) = trimmed.strip_prefix("```") else {
        return text;
    };
    let Some(rest) = rest.strip_suffix("```") else {
        return text;
    };
    match rest.split_once('\n') {
        Some((_language, inner)) => inner,
        None => text,
    }
}

/// Strips the blank lines before the first line of text.
fn skip_blank_lines(body: &str) -> &str {
    let mut rest = body;
    while let Some((line, after)) = rest.split_once('\n') {
        if !line.trim().is_empty() {
            break;
        }
        rest = after;
    }
    rest
}

/// A replacement given as a body: one line is trimmed; several keep their indentation.
fn trim_fragment(body: &str) -> String {
    if !body.trim().contains('\n') {
        return body.trim().to_owned();
    }
    skip_blank_lines(body).trim_end().to_owned()
}

/// A whole new content: leading blank lines and trailing whitespace dropped, a final line break kept.
fn trim_content(body: &str) -> String {
    let content = skip_blank_lines(body);
    let trimmed = content.trim_end();
    let had_break = content[trimmed.len()..].contains('\n');
    let line_break = if content.contains("\r\n") {
        "\r\n"
    } else {
        "\n"
    };
    if had_break && !trimmed.is_empty() {
        format!("{trimmed}{line_break}")
    } else {
        trimmed.to_owned()
    }
}
