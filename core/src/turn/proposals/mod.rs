//! Resolving a proposal: accept (apply the stored effect), reject, or error — and what that means for the rest of the turn.
//!
//! On accept the server applies the *stored* result (for file edits the
//! complete new content computed at dispatch, never re-derived from a merge
//! text); file writes stay inside the project root (no symlink followed at any
//! component, only regular files written or removed: [`crate::files::root`]),
//! honour `readonly` constraints, and are atomic and durable (a temporary file
//! created exclusively, synced to disk, then renamed; the file keeps its
//! permissions). Accepting `sh` or `env` opens the streaming channels
//! `<path>_1` (stdout) and `<path>_2` (stderr), visible to the model. A reject or
//! error aborts the rest of the turn's actions.
//!
//! A file proposal records the content the model saw of every file it would
//! write, remove or copy (`bases`, hashes); accepting it first checks the disk
//! against them. A file changed since — by someone in an editor, a build, another
//! run — refuses the whole proposal (failed, `conflict`, 409) before anything is
//! written, and the file's entry is brought in line with the disk, so the model
//! reads what is really there and can redo its change. A file that appeared where
//! the model saw none is refused without being read into the context (it may be a
//! file the scan keeps out, such as a hidden `.env`). A file that already holds
//! the proposed content passes (a client may apply an edit itself and accept it).
//! A symlink, FIFO, device or directory where a file is read, written or removed
//! refuses the proposal (failed, `permission`, 403) without being opened.
//!
//! Resolution runs in three phases, so that no filesystem work (which may be
//! slow, and which a hostile file must not be able to stall) runs on the
//! store's single writer: [`read`] (a read: what the proposal says, still
//! pending, and which of its files a `readonly` constraint covers), [`apply`]
//! (no connection: the disk work, in `disk.rs`), and [`record`] (the write: the
//! proposal's new state, the file entries written, removed or refreshed, the
//! constraints of created files, the `sh`/`env` channels). The caller keeps
//! two resolutions of one file, or of one proposal, from overlapping.

mod disk;

pub use disk::apply;

use super::TurnRef;
use crate::files::ScanLimits;
/// What a proposal proposes (defined with the tools that write it).
pub use crate::tools::proposal::Proposed;
use rummy_store::constraints::{self, ConstraintKind};
use rummy_store::db::Db;
use rummy_store::entries::{self as store_entries, EntryWrite, RunRef, ViewRow, WriteCtx};
use rummy_store::entry::{FailureKind, State, Visibility, Writer};
use rummy_store::files as store_files;
use rummy_store::ids::RunId;
use rummy_store::views;
use rummy_store::StoreError;
use rummy_text::hedberg;
use rummy_text::parse::ToolName;
use rummy_text::path::{normalize, scheme_of};
use serde_json::{json, Value};

/// A client's decision on a proposal (`set {state}` on its path).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// `resolved`: apply it; the body, if any, is the output (shell output, the user's answer).
    Accept(Option<String>),
    /// `cancelled`: do not apply; the body, if any, is the reason.
    Reject(Option<String>),
    /// `failed`: applying failed on the client's side; the body, if any, is the output.
    Error(Option<String>),
}

/// What a resolution did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    /// The proposal's path.
    pub path: String,
    /// Its final state.
    pub state: State,
    /// Its outcome when failed or cancelled (`readonly`, the reason, `error`).
    pub outcome: Option<String>,
    /// The tool that proposed it.
    pub tool: ToolName,
    /// Whether the rest of the turn's actions are aborted.
    pub aborts_rest: bool,
    /// The command's position in the turn, to resume after it.
    pub command_index: usize,
    /// The turn it belongs to.
    pub turn: i32,
}

/// The message a readonly refusal leaves for the model.
pub fn readonly_message(path: &str) -> String {
    format!("refused: {path} is readonly (file constraint)")
}

/// The pending proposal of a run, if any: the proposed entry with a command index.
pub fn pending(conn: &mut Db, run_id: RunId) -> Result<Option<ViewRow>, StoreError> {
    let rows = views::proposed(conn, run_id)?;
    Ok(rows.into_iter().find(|r| r.proposal().is_some()))
}

/// A pending proposal as [`read`] found it: everything accepting it needs, so that the disk
/// work runs without a connection.
#[derive(Debug, Clone, PartialEq)]
pub struct Proposal {
    /// The proposal's path.
    pub path: String,
    /// The tool that proposed it.
    pub tool: ToolName,
    /// What it proposes; or, when its stored attributes hold no readable kind (a client
    /// changed them), why: accepting it then fails with that reason, rejecting it still works.
    pub kind: Result<Proposed, String>,
    /// Its attributes as dispatch stored them (the kind's data, `bases`).
    attrs: Value,
    /// The first file its acceptance would write or remove that a `readonly` constraint covers.
    readonly: Option<String>,
}

impl Proposal {
    /// The project files its acceptance reads, writes or removes (normalised, sorted, once
    /// each): what a caller locks so that two acceptances of one file do not overlap.
    pub fn files(&self) -> Vec<String> {
        let mut files: Vec<&str> = self
            .kind
            .as_ref()
            .map(Proposed::touched)
            .unwrap_or_default();
        if let Some(bases) = self.attrs.get("bases").and_then(Value::as_object) {
            files.extend(bases.keys().map(String::as_str));
        }
        let mut files: Vec<String> = files
            .into_iter()
            .filter(|p| scheme_of(p).is_none())
            .filter_map(|p| normalize(p).ok())
            .collect();
        files.sort();
        files.dedup();
        files
    }
}

/// Reads the proposal at `path` of the run, which must still be pending and a tool's (an
/// entry a client marked `proposed` is no proposal), with the `readonly` constraints of the
/// files its acceptance would write or remove.
pub fn read(conn: &mut Db, run: RunRef, path: &str) -> Result<Proposal, StoreError> {
    let row = pending_row(conn, run, path)?;
    let tool = ToolName::from_scheme(row.tag())
        .ok_or_else(|| StoreError::Invalid(format!("{path} is not a tool's proposal")))?;
    let attrs = row.attributes();
    let kind = Proposed::read(&attrs);
    // The files an acceptance changes, in the order their refusal is reported.
    let changed: Vec<&str> = kind.as_ref().map(Proposed::changed).unwrap_or_default();
    let readonly = if changed.is_empty() {
        None
    } else {
        let list = constraints::list(conn, run.project_id)?;
        changed
            .into_iter()
            .find(|path| {
                list.iter()
                    .rev()
                    .find(|c| hedberg::hedmatch(&c.pattern, path))
                    .is_some_and(|c| c.kind == ConstraintKind::Readonly)
            })
            .map(str::to_owned)
    };
    Ok(Proposal {
        path: row.path.clone(),
        tool,
        kind,
        attrs,
        readonly,
    })
}

/// The proposal entry at `path`, refused when it is missing or no longer pending.
fn pending_row(conn: &mut Db, run: RunRef, path: &str) -> Result<ViewRow, StoreError> {
    let row = store_entries::by_path(conn, run.run_id, path)?
        .ok_or_else(|| StoreError::NotFound(format!("{path} not found in this run")))?;
    if row.state != State::Proposed {
        return Err(StoreError::Conflict(format!(
            "{path} is not pending (it is {}); it was already resolved",
            row.state
        )));
    }
    Ok(row)
}

/// What [`apply`] made of a decision: for an acceptance, what it did on disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolution {
    /// Accepted, with the client's output (shell output, the user's answer).
    Accepted {
        /// The client's output, if any.
        output: Option<String>,
        /// What applying it did.
        applied: Applied,
    },
    /// Rejected, with the reason, if any.
    Rejected(Option<String>),
    /// Failed on the client's side, with its output, if any.
    Errored(Option<String>),
}

/// What accepting a proposal did on disk.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Applied {
    /// Whether it was applied, or why not.
    pub verdict: Verdict,
    /// What changed on disk, or was found there, that the file entries must follow (also when
    /// refused: a conflict refreshes an entry, a failure half-way keeps what was done).
    pub effects: Vec<Effect>,
}

/// Whether an accepted proposal was applied.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Verdict {
    /// Applied whole.
    #[default]
    Done,
    /// Refused: this file is readonly (403 `readonly`).
    Readonly(String),
    /// Refused: this file is not what the model saw (409 `conflict`).
    Conflict(String, DiskChange),
    /// Refused: a path leaves the root or is not a regular file (403 `permission`); the message.
    Refused(String),
    /// The disk failed, or the proposal cannot be applied (500 `error`); the message.
    Failed(String),
}

/// One change the file entries must follow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    /// The file at this (normalised) path now holds this content.
    Wrote {
        /// The file.
        path: String,
        /// Its content.
        content: String,
        /// No file was there before (it gets an `active` constraint).
        created: bool,
    },
    /// The file at this path is gone (removed, or found removed): its entry goes.
    Forget(String),
    /// The file at this path holds this text on disk, unlike what the model saw.
    Refresh(String, String),
}

/// What [`record`] wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Recorded {
    /// The proposal is resolved as decided.
    Resolved(Resolved),
    /// The proposal stopped being pending while its files were being written (the loop was
    /// cancelled): it keeps that state; what the disk now holds is recorded all the same.
    Stale(State),
}

/// Writes what a resolution did: the file entries follow the disk, and the proposal takes its
/// final state unless it stopped being pending meanwhile.
pub fn record(
    conn: &mut Db,
    run: RunRef,
    proposal: &Proposal,
    resolution: &Resolution,
    by: Option<&str>,
    at: WriteCtx,
) -> Result<Recorded, StoreError> {
    let now = at.now;
    let path = proposal.path.as_str();
    let row = store_entries::by_path(conn, run.run_id, path)?
        .ok_or_else(|| StoreError::NotFound(format!("{path} not found in this run")))?;
    if let Resolution::Accepted { applied, .. } = resolution {
        for effect in &applied.effects {
            record_effect(conn, run, effect, at)?;
        }
    }
    if row.state != State::Proposed {
        return Ok(Recorded::Stale(row.state));
    }
    let attrs = row.attributes();
    let (state, outcome, body, extra) = match resolution {
        Resolution::Rejected(reason) => {
            let reason = reason
                .clone()
                .filter(|r| !r.trim().is_empty())
                .unwrap_or_else(|| "rejected".to_owned());
            (State::Cancelled, Some(reason), None, json!({}))
        }
        Resolution::Errored(output) => (
            State::Failed,
            Some(FailureKind::Error.into()),
            output.clone(),
            json!({}),
        ),
        Resolution::Accepted { output, applied } => match &applied.verdict {
            Verdict::Done => {
                let extra = match &proposal.kind {
                    Ok(kind) => accepted(conn, run, &row, kind, output, at)?,
                    // Not applied: an unreadable kind fails in the disk phase.
                    Err(_) => json!({}),
                };
                (State::Resolved, None, output.clone(), extra)
            }
            Verdict::Readonly(p) => (
                State::Failed,
                Some(FailureKind::Readonly.into()),
                Some(readonly_message(p)),
                json!({}),
            ),
            Verdict::Conflict(p, change) => (
                State::Failed,
                Some(FailureKind::Conflict.into()),
                Some(conflict_message(p, *change)),
                json!({}),
            ),
            Verdict::Refused(message) => (
                State::Failed,
                Some(FailureKind::Permission.into()),
                Some(message.clone()),
                json!({}),
            ),
            Verdict::Failed(message) => (
                State::Failed,
                Some(FailureKind::Error.into()),
                Some(message.clone()),
                json!({}),
            ),
        },
    };
    let mut attributes = attrs.clone();
    if let (Some(map), Value::Object(more)) = (attributes.as_object_mut(), extra) {
        map.extend(more);
    }
    // The audit: when, and by whom when a token names the person.
    if let Some(map) = attributes.as_object_mut() {
        map.insert("resolvedAt".into(), Value::from(now.to_rfc3339()));
        if let Some(user) = by {
            map.insert("resolvedBy".into(), Value::from(user));
        }
    }
    let body = body.unwrap_or_else(|| row.body.clone());
    let turn = row.turn;
    let loop_id = views::loop_of(conn, row.view_id)?;
    store_entries::write(
        conn,
        &EntryWrite {
            run,
            path,
            body: &body,
            attributes: &attributes,
            state,
            outcome: outcome.as_deref(),
            visibility: Visibility::Visible,
            loop_id,
            turn,
            writer: Writer::System,
        },
        at,
    )?;
    Ok(Recorded::Resolved(Resolved {
        path: path.to_owned(),
        state,
        outcome,
        tool: proposal.tool,
        aborts_rest: state != State::Resolved,
        command_index: attrs
            .get(rummy_protocol::ProposalKind::MARK)
            .and_then(Value::as_u64)
            .unwrap_or(0) as usize,
        turn,
    }))
}

/// How a file on disk differs from what the model saw.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DiskChange {
    /// Its content changed.
    Changed,
    /// It was removed.
    Removed,
    /// It exists, and the model saw no file there.
    Appeared,
}

/// The message a conflict refusal leaves for the model.
pub fn conflict_message(path: &str, change: DiskChange) -> String {
    match change {
        DiskChange::Changed => format!(
            "refused: {path} changed on disk after you read it; nothing was applied. \
             Its entry now holds the file as it is on disk: read it and make your change again."
        ),
        DiskChange::Removed => {
            format!("refused: {path} was removed from disk after you read it; nothing was applied.")
        }
        DiskChange::Appeared => format!(
            "refused: {path} exists on disk but was not in your context; nothing was written \
             over it."
        ),
    }
}

/// The store side of an applied proposal (its files are written by then): an entry moved into
/// a file leaves the run, `sh`/`env` and `call` open their channels, `ask_user` keeps the
/// answer. Answers the attributes the proposal gains.
fn accepted(
    conn: &mut Db,
    run: RunRef,
    row: &ViewRow,
    kind: &Proposed,
    output: &Option<String>,
    at: WriteCtx,
) -> Result<Value, StoreError> {
    match kind {
        Proposed::Mv { from, .. } => {
            // An entry moved into a file leaves the run, as a move between entries does.
            if scheme_of(from).is_some() {
                if let Some(moved) = store_entries::by_path(conn, run.run_id, from)? {
                    views::remove(conn, moved.view_id)?;
                }
            }
            Ok(json!({}))
        }
        Proposed::Sh { .. }
        | Proposed::Env { .. }
        | Proposed::Call { .. }
        | Proposed::Fetch { .. } => {
            // What each channel is the output of: the command line, the tool called, the page.
            let (key, what) = match kind {
                Proposed::Call { server, tool, .. } => {
                    ("tool", crate::tools::call::qualified(server, tool))
                }
                Proposed::Fetch { url } => ("url", url.clone()),
                _ => ("command", kind.command().unwrap_or_default().to_owned()),
            };
            let mut paths = Vec::new();
            for &channel in kind.channels() {
                let channel_path = format!("{}_{channel}", row.path);
                store_entries::write(
                    conn,
                    &EntryWrite {
                        run,
                        path: &channel_path,
                        body: "",
                        attributes: &json!({ key: what, "summary": what, "channel": channel }),
                        state: State::Streaming,
                        outcome: None,
                        // The model reads the output next turn; the budget demotes it when it
                        // does not fit.
                        visibility: Visibility::Visible,
                        loop_id: None,
                        turn: row.turn,
                        writer: Writer::System,
                    },
                    at,
                )?;
                paths.push(channel_path);
            }
            Ok(json!({ "channels": paths }))
        }
        Proposed::AskUser { .. } => Ok(json!({ "answer": output.as_deref().unwrap_or_default() })),
        Proposed::Edit { .. } | Proposed::Cp { .. } | Proposed::Rm { .. } => Ok(json!({})),
    }
}

/// Brings the project's file entries in line with one change on disk.
fn record_effect(
    conn: &mut Db,
    run: RunRef,
    effect: &Effect,
    at: WriteCtx,
) -> Result<(), StoreError> {
    let now = at.now;
    match effect {
        Effect::Wrote {
            path,
            content,
            created,
        } => {
            store_files::write_file(conn, run, path, content, Writer::System, at)?;
            if *created {
                constraints::set(conn, run.project_id, path, ConstraintKind::Active, now)?;
            }
            Ok(())
        }
        Effect::Forget(path) => {
            store_files::forget_file(conn, run.project_id, path, Writer::System)
        }
        Effect::Refresh(path, text) => {
            store_files::write_file(conn, run, path, text, Writer::System, at)
        }
    }
}

/// The largest file a scan takes as an entry.
fn max_file_bytes() -> u64 {
    ScanLimits::default().max_file_bytes
}

/// Marks the run's pending proposal cancelled (the loop was cancelled or interrupted).
pub fn cancel_pending(
    conn: &mut Db,
    t: TurnRef,
    reason: &str,
    at: WriteCtx,
) -> Result<Option<String>, StoreError> {
    let Some(row) = pending(conn, t.run.run_id)? else {
        return Ok(None);
    };
    store_entries::write(
        conn,
        &EntryWrite {
            run: t.run,
            path: &row.path,
            body: &row.body,
            attributes: &row.attributes(),
            state: State::Cancelled,
            outcome: Some(reason),
            visibility: Visibility::Visible,
            loop_id: Some(t.loop_id),
            turn: row.turn,
            writer: Writer::System,
        },
        at,
    )?;
    Ok(Some(row.path))
}
