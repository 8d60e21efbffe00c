//! Resolving a proposal: accept (apply the stored effect), reject, or error — and what that means for the rest of the turn.
//!
//! On accept the server applies the *stored* result (for file edits the
//! complete new content computed at dispatch, never re-derived from a merge
//! text); file writes stay inside the project root, honour `readonly`
//! constraints, and are atomic and durable (temporary file synced to disk, then
//! rename; the file keeps its permissions). Accepting `sh`
//! or `env` opens the streaming channels `<path>_1` (stdout) and `<path>_2`
//! (stderr). A reject or error aborts the rest of the turn's actions.
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

use super::TurnRef;
use crate::entry::{strings_attr, text_attr, State, Visibility, Writer};
use crate::files::scan::{classify, read_capped, Outcome};
use crate::files::sync::ensure_view;
use crate::files::ScanLimits;
use crate::hedberg;
use crate::path::{normalize, scheme_of};
use crate::schema::{entries, run_views};
use crate::store::constraints::{self, ConstraintKind};
use crate::store::entries::{self as store_entries, hex_sha256, EntryWrite, RunRef, ViewRow};
use crate::store::StoreError;
use crate::time::Millis;
use crate::tokens;
use diesel::prelude::*;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

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
    pub tool: String,
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
pub fn pending(conn: &mut SqliteConnection, run_id: i32) -> Result<Option<ViewRow>, StoreError> {
    let rows: Vec<ViewRow> = run_views::table
        .inner_join(entries::table)
        .filter(run_views::run_id.eq(run_id))
        .filter(run_views::state.eq(State::Proposed.as_str()))
        .order(run_views::id.desc())
        .select(store_entries::VIEW_COLUMNS)
        .load(conn)?;
    Ok(rows
        .into_iter()
        .find(|r| r.attributes().get("commandIndex").is_some()))
}

/// Resolves the proposal at `path` of the run as decided; `root` is the project root on disk.
pub fn resolve(
    conn: &mut SqliteConnection,
    run: RunRef,
    path: &str,
    decision: &Decision,
    root: &Path,
    divisor: u32,
    now: Millis,
) -> Result<Resolved, StoreError> {
    let row = store_entries::by_path(conn, run.run_id, path)?
        .ok_or_else(|| StoreError::NotFound(format!("{path} not found in this run")))?;
    if row.state() != State::Proposed {
        return Err(StoreError::Conflict(format!(
            "{path} is not pending (it is {}); it was already resolved",
            row.state
        )));
    }
    let attrs = row.attributes();
    let kind = attrs
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let (state, outcome, body, extra) = match decision {
        Decision::Reject(reason) => {
            let reason = reason
                .clone()
                .filter(|r| !r.trim().is_empty())
                .unwrap_or_else(|| "rejected".to_owned());
            (State::Cancelled, Some(reason), None, json!({}))
        }
        Decision::Error(output) => (
            State::Failed,
            Some("error".to_owned()),
            output.clone(),
            json!({}),
        ),
        Decision::Accept(output) => match apply(
            conn,
            run,
            &row,
            &kind,
            &attrs,
            output.as_deref(),
            root,
            divisor,
            now,
        ) {
            Ok(extra) => (State::Resolved, None, output.clone(), extra),
            Err(Refusal::Readonly(p)) => (
                State::Failed,
                Some("readonly".to_owned()),
                Some(readonly_message(&p)),
                json!({}),
            ),
            Err(Refusal::Failed(message)) => (
                State::Failed,
                Some("error".to_owned()),
                Some(message),
                json!({}),
            ),
            Err(Refusal::Conflict(path, change)) => (
                State::Failed,
                Some("conflict".to_owned()),
                Some(conflict_message(&path, change)),
                json!({}),
            ),
            Err(Refusal::Store(e)) => return Err(e),
        },
    };
    let mut attributes = attrs.clone();
    if let (Some(map), Value::Object(more)) = (attributes.as_object_mut(), extra) {
        map.extend(more);
    }
    let body = body.unwrap_or_else(|| row.body.clone());
    let turn = row.turn;
    let loop_id: Option<i32> = run_views::table
        .find(row.view_id)
        .select(run_views::loop_id)
        .first(conn)?;
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
        divisor,
        now,
    )?;
    Ok(Resolved {
        path: path.to_owned(),
        state,
        outcome,
        tool: row.tag().to_owned(),
        aborts_rest: state != State::Resolved,
        command_index: attrs
            .get("commandIndex")
            .and_then(Value::as_u64)
            .unwrap_or(0) as usize,
        turn,
    })
}

enum Refusal {
    Readonly(String),
    /// The file at this path is not what the model saw when it proposed.
    Conflict(String, DiskChange),
    Failed(String),
    Store(StoreError),
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

impl From<StoreError> for Refusal {
    fn from(e: StoreError) -> Self {
        Refusal::Store(e)
    }
}

fn str_attr(attrs: &Value, key: &str) -> String {
    text_attr(attrs, key).to_owned()
}

#[allow(clippy::too_many_arguments)]
fn apply(
    conn: &mut SqliteConnection,
    run: RunRef,
    row: &ViewRow,
    kind: &str,
    attrs: &Value,
    output: Option<&str>,
    root: &Path,
    divisor: u32,
    now: Millis,
) -> Result<Value, Refusal> {
    let readonly = |conn: &mut SqliteConnection, path: &str| -> Result<(), Refusal> {
        let list = constraints::list(conn, run.project_id)?;
        let hit = list
            .iter()
            .rev()
            .find(|c| hedberg::hedmatch(&c.pattern, path));
        match hit {
            Some(c) if c.kind == ConstraintKind::Readonly => {
                Err(Refusal::Readonly(path.to_owned()))
            }
            _ => Ok(()),
        }
    };
    let unchanged =
        |conn: &mut SqliteConnection| unchanged_on_disk(conn, run, kind, attrs, root, divisor, now);
    match kind {
        "edit" => {
            let path = str_attr(attrs, "path");
            readonly(conn, &path)?;
            unchanged(conn)?;
            let content = str_attr(attrs, "content");
            write_file(conn, run, root, &path, &content, divisor, now)?;
            Ok(json!({}))
        }
        "cp" | "mv" => {
            let (from, to) = (str_attr(attrs, "from"), str_attr(attrs, "to"));
            readonly(conn, &to)?;
            if kind == "mv" {
                readonly(conn, &from)?;
            }
            unchanged(conn)?;
            write_file(
                conn,
                run,
                root,
                &to,
                &str_attr(attrs, "content"),
                divisor,
                now,
            )?;
            if kind == "mv" && scheme_of(&from).is_none() {
                remove_file(conn, run, root, &from)?;
            } else if kind == "mv" {
                // An entry moved into a file leaves the run, as a move between entries does.
                if let Some(moved) = store_entries::by_path(conn, run.run_id, &from)? {
                    diesel::delete(run_views::table.find(moved.view_id))
                        .execute(conn)
                        .map_err(StoreError::from)?;
                }
            }
            Ok(json!({}))
        }
        "rm" => {
            let paths = strings_attr(attrs, "paths");
            for path in &paths {
                readonly(conn, path)?;
            }
            unchanged(conn)?;
            for path in paths {
                remove_file(conn, run, root, path)?;
            }
            Ok(json!({}))
        }
        "sh" | "env" => {
            let command = str_attr(attrs, "command");
            for channel in [1, 2] {
                let channel_path = format!("{}_{channel}", row.path);
                store_entries::write(
                    conn,
                    &EntryWrite {
                        run,
                        path: &channel_path,
                        body: "",
                        attributes: &json!({ "command": command, "summary": command, "channel": channel }),
                        state: State::Streaming,
                        outcome: None,
                        visibility: Visibility::Summarized,
                        loop_id: None,
                        turn: row.turn,
                        writer: Writer::System,
                    },
                    divisor,
                    now,
                )?;
            }
            Ok(json!({ "channels": [format!("{}_1", row.path), format!("{}_2", row.path)] }))
        }
        "ask_user" => Ok(json!({ "answer": output.unwrap_or_default() })),
        other => Err(Refusal::Failed(format!(
            "cannot apply a proposal of kind \"{other}\""
        ))),
    }
}

/// Refuses the proposal when a file it writes, removes or copies is no longer what the model saw
/// (`bases`); the refused file's entry then takes the disk's content (or leaves the project when
/// the file is gone). A file that already holds the proposed content passes. Proposals recorded
/// without `bases` (before they existed) are not checked.
fn unchanged_on_disk(
    conn: &mut SqliteConnection,
    run: RunRef,
    kind: &str,
    attrs: &Value,
    root: &Path,
    divisor: u32,
    now: Millis,
) -> Result<(), Refusal> {
    let Some(bases) = attrs.get("bases").and_then(Value::as_object) else {
        return Ok(());
    };
    let written = match kind {
        "edit" => attrs.get("path"),
        "cp" | "mv" => attrs.get("to"),
        _ => None,
    }
    .and_then(Value::as_str);
    let proposed = attrs.get("content").and_then(Value::as_str);
    for (path, base) in bases {
        let target = inside_root(root, path).map_err(Refusal::Failed)?;
        // No entry is larger than a scan takes, so the capped read tells every difference.
        let disk = match read_capped(&target, max_file_bytes()) {
            Ok(bytes) => Some(bytes),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(Refusal::Failed(format!("cannot read {path}: {e}"))),
        };
        let applied = written == Some(path.as_str())
            && disk.is_some()
            && disk.as_deref() == proposed.map(str::as_bytes);
        let change = match (disk, base.as_str()) {
            (None, None) => None,
            (Some(bytes), Some(hash)) if hex_sha256(&bytes) == hash => None,
            _ if applied => None,
            // The model saw no file here: what is there now stays out of its context (it may
            // be a file the scan keeps out, such as a hidden `.env`).
            (Some(_), None) => Some(DiskChange::Appeared),
            (None, Some(_)) => {
                forget_file(conn, run, path)?;
                Some(DiskChange::Removed)
            }
            (Some(bytes), Some(_)) => {
                refresh_entry(conn, run, path, bytes, divisor, now)?;
                Some(DiskChange::Changed)
            }
        };
        if let Some(change) = change {
            return Err(Refusal::Conflict(path.clone(), change));
        }
    }
    Ok(())
}

/// Gives a project file the model had read its content on disk, when that is text a scan would
/// take (the next scan settles any other).
fn refresh_entry(
    conn: &mut SqliteConnection,
    run: RunRef,
    path: &str,
    disk: Vec<u8>,
    divisor: u32,
    now: Millis,
) -> Result<(), StoreError> {
    match classify(disk, max_file_bytes()) {
        Outcome::Text(text) => upsert_file_entry(conn, run, path, &text, divisor, now),
        _ => Ok(()),
    }
}

/// The largest file a scan takes as an entry.
fn max_file_bytes() -> u64 {
    ScanLimits::default().max_file_bytes
}

/// Drops the project's entry of a file that is gone from disk.
fn forget_file(conn: &mut SqliteConnection, run: RunRef, path: &str) -> Result<(), StoreError> {
    let scope = crate::entry::Scope::Project(run.project_id).key();
    diesel::delete(
        entries::table
            .filter(entries::scope.eq(scope))
            .filter(entries::path.eq(path)),
    )
    .execute(conn)?;
    Ok(())
}

/// Resolves `path` under `root`, refusing anything that leaves it (`..`, absolute, a symlinked directory pointing outside).
pub fn inside_root(root: &Path, path: &str) -> Result<PathBuf, String> {
    let rel = normalize(path).map_err(|e| e.to_string())?;
    let root = root
        .canonicalize()
        .map_err(|e| format!("project root {}: {e}", root.display()))?;
    let target = root.join(&rel);
    let mut existing = target
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| root.clone());
    while !existing.exists() {
        match existing.parent() {
            Some(p) => existing = p.to_path_buf(),
            None => break,
        }
    }
    let real = existing.canonicalize().map_err(|e| e.to_string())?;
    if !real.starts_with(&root) {
        return Err(format!("{rel} escapes the project root"));
    }
    if target.is_symlink() {
        return Err(format!("{rel} is a symlink; refusing to write through it"));
    }
    Ok(target)
}

fn write_file(
    conn: &mut SqliteConnection,
    run: RunRef,
    root: &Path,
    path: &str,
    content: &str,
    divisor: u32,
    now: Millis,
) -> Result<(), Refusal> {
    let target = inside_root(root, path).map_err(Refusal::Failed)?;
    let created = !target.exists();
    let dir = target
        .parent()
        .ok_or_else(|| Refusal::Failed(format!("{path} has no parent directory")))?;
    std::fs::create_dir_all(dir)
        .map_err(|e| Refusal::Failed(format!("cannot create {}: {e}", dir.display())))?;
    let tmp = dir.join(format!(
        ".{}.rummy-tmp",
        target
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("file")
    ));
    replace_atomically(&target, &tmp, content).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        Refusal::Failed(format!("cannot write {path}: {e}"))
    })?;
    let rel = normalize(path).map_err(|e| Refusal::Failed(e.to_string()))?;
    upsert_file_entry(conn, run, &rel, content, divisor, now)?;
    if created {
        constraints::set(conn, run.project_id, &rel, ConstraintKind::Active, now)?;
    }
    Ok(())
}

/// Puts `content` at `target` through `tmp` in the same directory: the file keeps its
/// permissions (an edited script stays executable), and the content is on disk before the rename
/// makes it the file, so a crash leaves the old file or the new one, never an empty one.
fn replace_atomically(target: &Path, tmp: &Path, content: &str) -> std::io::Result<()> {
    use std::io::Write;
    let permissions = std::fs::metadata(target).ok().map(|m| m.permissions());
    let mut file = std::fs::File::create(tmp)?;
    file.write_all(content.as_bytes())?;
    if let Some(permissions) = permissions {
        file.set_permissions(permissions)?;
    }
    file.sync_all()?;
    std::fs::rename(tmp, target)?;
    // The rename is durable once its directory is; a directory that cannot be opened for
    // syncing (some filesystems) still has the file.
    if let Some(dir) = target.parent().and_then(|d| std::fs::File::open(d).ok()) {
        let _ = dir.sync_all();
    }
    Ok(())
}

fn upsert_file_entry(
    conn: &mut SqliteConnection,
    run: RunRef,
    path: &str,
    content: &str,
    divisor: u32,
    now: Millis,
) -> Result<(), StoreError> {
    let scope = crate::entry::Scope::Project(run.project_id).key();
    let id: i32 = diesel::insert_into(entries::table)
        .values((
            entries::scope.eq(&scope),
            entries::path.eq(path),
            entries::body.eq(content),
            entries::hash.eq(hex_sha256(content)),
            entries::tokens.eq(tokens::estimate(content, divisor)),
            entries::created_at.eq(now.0),
            entries::updated_at.eq(now.0),
        ))
        .on_conflict((entries::scope, entries::path))
        .do_update()
        .set((
            entries::body.eq(content),
            entries::hash.eq(hex_sha256(content)),
            entries::tokens.eq(tokens::estimate(content, divisor)),
            entries::updated_at.eq(now.0),
        ))
        .returning(entries::id)
        .get_result(conn)?;
    ensure_view(conn, run, id, Visibility::Visible, now)
}

fn remove_file(
    conn: &mut SqliteConnection,
    run: RunRef,
    root: &Path,
    path: &str,
) -> Result<(), Refusal> {
    let target = inside_root(root, path).map_err(Refusal::Failed)?;
    if target.exists() {
        std::fs::remove_file(&target)
            .map_err(|e| Refusal::Failed(format!("cannot remove {path}: {e}")))?;
    }
    forget_file(conn, run, path)?;
    Ok(())
}

/// Marks the run's pending proposal cancelled (the loop was cancelled or interrupted).
pub fn cancel_pending(
    conn: &mut SqliteConnection,
    t: TurnRef,
    reason: &str,
    divisor: u32,
    now: Millis,
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
        divisor,
        now,
    )?;
    Ok(Some(row.path))
}
