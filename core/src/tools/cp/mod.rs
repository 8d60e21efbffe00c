//! `cp` and `mv`: copy or move an entry (or every match of a glob) now, and propose copies and moves into project files.
//!
//! A destination that is a scheme entry is written at once (after the writer
//! checks and the `known://` size gate); `mv` then removes the source from
//! the run. A destination that is a project file becomes a `cp`/`mv`
//! proposal carrying the content to write. A glob source copies each match,
//! its part after the glob's literal prefix appended to the destination.
//! Without a destination, `visibility=`/`summary=` change the source in place.
//!
//! Views: the result body when visible, nothing when summarized.

use super::handler::{
    attr, bases, body, is_file, read_target, summary_of, visibility_of, Handler, Target, ToolResult,
};
use super::proposal::Proposed;
use super::wording::{self, listing, not_found};
use rummy_store::entries::ViewRow;
use rummy_store::entry::FailureKind;
use rummy_store::entry::Visibility;
use rummy_store::run::Mode;
use rummy_store::StoreError;
use rummy_text::hedberg::{self, PatternKind};
use rummy_text::parse::ToolCall;
use rummy_text::path::normalize;

/// The model-facing doc of `cp`.
pub const DOC: &str = include_str!("doc.md");

/// A `cp`/`mv` without a source.
pub const SOURCE_REQUIRED: &str = "path (the source) is required";

/// A `cp`/`mv` without a destination or an in-place change.
pub const DESTINATION_REQUIRED: &str =
    "a destination is required: to=\"…\" or the body (or visibility=/summary= to change the source in place)";

/// Source and destination are one path.
pub const SAME_PATH: &str = "source and destination are the same path";

/// A project file moved into a scheme entry: the file would have to be deleted too.
pub const MV_FILE_TO_ENTRY: &str =
    "mv cannot move a project file into an entry; cp it, then rm the file";

/// A glob source whose copies would land in project files.
pub const BATCH_TO_FILES: &str =
    "a glob source copies into entries only; copy into project files one file at a time";

/// A pattern source that is not a glob.
pub const SOURCE_GLOB_ONLY: &str = "the source must be one path or a glob";

/// Which of the two tools runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Copy: the source stays.
    Cp,
    /// Move: the source leaves the run.
    Mv,
}

impl Kind {
    /// The tool name, also the proposal kind.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Cp => "cp",
            Kind::Mv => "mv",
        }
    }

    fn done(self) -> &'static str {
        match self {
            Kind::Cp => "copied",
            Kind::Mv => "moved",
        }
    }
}

/// Runs `cp` or `mv`.
pub fn run(h: &mut Handler<'_>, call: &ToolCall, kind: Kind) -> Result<ToolResult, StoreError> {
    let Some(from) = attr(call, "path") else {
        return Ok(ToolResult::failed(
            "",
            FailureKind::Validation,
            SOURCE_REQUIRED,
        ));
    };
    let visibility = match visibility_of(call) {
        Ok(v) => v,
        Err(reason) => return Ok(ToolResult::failed(from, FailureKind::Validation, reason)),
    };
    let Some(to) = attr(call, "to").or_else(|| body(call)) else {
        let summary = summary_of(call);
        if visibility.is_none() && summary.is_none() {
            return Ok(ToolResult::failed(
                from,
                FailureKind::Validation,
                DESTINATION_REQUIRED,
            ));
        }
        return h.change_views(from, None, visibility, summary);
    };
    let copy = Copy {
        kind,
        visibility: visibility.unwrap_or(Visibility::Visible),
    };
    match read_target(from, None) {
        Err(reason) => Ok(ToolResult::failed(from, FailureKind::Validation, reason)),
        Ok(Target::Exact(source)) => copy.one(h, &source, to),
        Ok(Target::Pattern(pattern)) => copy.batch(h, from, &pattern, to),
    }
}

/// One `cp`/`mv` command's settings.
struct Copy {
    kind: Kind,
    visibility: Visibility,
}

impl Copy {
    /// Copies or moves one entry.
    fn one(&self, h: &mut Handler<'_>, from: &str, to: &str) -> Result<ToolResult, StoreError> {
        let Some(row) = h.find(from)? else {
            return Ok(ToolResult::failed(
                from,
                FailureKind::NotFound,
                not_found(from),
            ));
        };
        let to = match normalize(to) {
            Ok(to) => to,
            Err(e) => {
                return Ok(ToolResult::failed(
                    from,
                    FailureKind::Validation,
                    e.to_string(),
                ))
            }
        };
        if to == from {
            return Ok(ToolResult::failed(from, FailureKind::Validation, SAME_PATH));
        }
        if self.kind == Kind::Mv && is_file(from) && !is_file(&to) {
            return Ok(ToolResult::failed(
                from,
                FailureKind::Validation,
                MV_FILE_TO_ENTRY,
            ));
        }
        if is_file(&to) {
            if h.ctx.mode == Mode::Ask {
                let reason = wording::ask_copy_to_file(self.kind.name(), &to);
                return Ok(ToolResult::failed(from, FailureKind::Permission, reason));
            }
            let body = format!("{from} → {to} ({} tokens)", row.tokens);
            let existing = h.file_body(&to)?;
            let mut seen = vec![(to.as_str(), existing.as_deref())];
            // A file source is checked too: a copy of what changed since would not be the file.
            if is_file(from) {
                seen.push((from, Some(row.body.as_str())));
            }
            let seen = bases(seen);
            let (source, to, content) = (from.to_owned(), to.clone(), row.body);
            let kind = match self.kind {
                Kind::Cp => Proposed::Cp {
                    from: source,
                    to,
                    content,
                },
                Kind::Mv => Proposed::Mv {
                    from: source,
                    to,
                    content,
                },
            };
            return Ok(ToolResult::proposed(from, body, &kind).with("bases", seen));
        }
        h.check_all([to.as_str()])?;
        if self.kind == Kind::Mv {
            h.check_all([from])?;
        }
        if let Some(overflow) = h.size_gate(from, &to, &row.body) {
            return Ok(overflow);
        }
        let existed = h.find(&to)?.is_some();
        self.apply(h, &row, &to)?;
        let mut body = format!(
            "{from} {} to {to} ({} tokens)",
            self.kind.done(),
            row.tokens
        );
        if existed {
            body.push_str(&format!("\nOverwrote existing entry at {to}"));
        }
        Ok(ToolResult::resolved(from, body)
            .with("from", from)
            .with("to", to.as_str()))
    }

    /// Copies or moves every entry a glob selects.
    fn batch(
        &self,
        h: &mut Handler<'_>,
        raw: &str,
        pattern: &str,
        to: &str,
    ) -> Result<ToolResult, StoreError> {
        if hedberg::detect(pattern) != PatternKind::Glob {
            return Ok(ToolResult::failed(
                pattern,
                FailureKind::Validation,
                SOURCE_GLOB_ONLY,
            ));
        }
        let rows = h.select(&Target::Pattern(pattern.to_owned()), None)?;
        if rows.is_empty() {
            return Ok(ToolResult::failed(
                pattern,
                FailureKind::NotFound,
                not_found(raw),
            ));
        }
        let prefix = glob_prefix(pattern);
        let base = to.trim_end_matches('*');
        let mut pairs: Vec<(ViewRow, String)> = Vec::new();
        for row in rows {
            let rest = row.path.strip_prefix(prefix).unwrap_or(&row.path);
            let dest = match normalize(&format!("{base}{rest}")) {
                Ok(dest) => dest,
                Err(e) => {
                    return Ok(ToolResult::failed(
                        pattern,
                        FailureKind::Validation,
                        e.to_string(),
                    ))
                }
            };
            let refusal = if is_file(&dest) {
                Some(BATCH_TO_FILES)
            } else if dest == row.path {
                Some(SAME_PATH)
            } else if self.kind == Kind::Mv && is_file(&row.path) {
                Some(MV_FILE_TO_ENTRY)
            } else {
                None
            };
            if let Some(reason) = refusal {
                return Ok(ToolResult::failed(pattern, FailureKind::Validation, reason));
            }
            pairs.push((row, dest));
        }
        h.check_all(pairs.iter().map(|(_, dest)| dest.as_str()))?;
        if self.kind == Kind::Mv {
            h.check_all(pairs.iter().map(|(row, _)| row.path.as_str()))?;
        }
        for (row, dest) in &pairs {
            if let Some(overflow) = h.size_gate(pattern, dest, &row.body) {
                return Ok(overflow);
            }
        }
        for (row, dest) in &pairs {
            self.apply(h, row, dest)?;
        }
        let body = listing(
            pairs
                .iter()
                .map(|(row, dest)| format!("{} → {dest}", row.path)),
        );
        let dests: Vec<&str> = pairs.iter().map(|(_, dest)| dest.as_str()).collect();
        Ok(ToolResult::resolved(pattern, body)
            .with("from", pattern)
            .with("to", to)
            .with("paths", dests))
    }

    /// Writes the destination; for `mv` also removes the source from the run.
    fn apply(&self, h: &mut Handler<'_>, row: &ViewRow, to: &str) -> Result<(), StoreError> {
        h.write(to, &row.body, &row.attributes(), self.visibility)?;
        if self.kind == Kind::Mv {
            h.remove_views(std::slice::from_ref(row))?;
        }
        Ok(())
    }
}

/// The literal start of a glob: everything before its first unescaped `*` or `?`.
fn glob_prefix(pattern: &str) -> &str {
    let mut escaped = false;
    for (at, c) in pattern.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            '*' | '?' => return &pattern[..at],
            _ => {}
        }
    }
    pattern
}
