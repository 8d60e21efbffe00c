//! Writes of a turn outside dispatch: the loop's prompt, the audit trail, and the healer's warnings.

use super::TurnRef;
use rummy_store::db::Db;
use rummy_store::entries::{self, EntryWrite, WriteCtx};
use rummy_store::entry::{FailureKind, State, Visibility, Writer};
use rummy_store::run::Mode;
use rummy_store::StoreError;
use rummy_text::path::result_path;
use serde_json::json;

/// How many characters of a warning go into its `error://` path.
const ERROR_PATH_CHARS: usize = 80;

/// Writes `prompt://<turn>`, which marks the start of the loop in the model's context.
pub fn prompt(
    conn: &mut Db,
    t: TurnRef,
    body: &str,
    mode: Mode,
    at: WriteCtx,
) -> Result<(), StoreError> {
    let path = format!("prompt://{}", t.turn);
    let attributes = json!({ "mode": mode.as_str() });
    entries::write(conn, &EntryWrite::plugin(t, &path, body, &attributes), at).map(|_| ())
}

/// Writes a turn's audit entries (`(scheme, body)` pairs, e.g. `system://N`, `assistant://N`)
/// as one change: archived, system-only, at one view revision; a long text as a delta from the
/// previous turn's text of its scheme when that is worth it (`store::audit`).
pub fn audit_all(
    conn: &mut Db,
    t: TurnRef,
    entries: &[(&str, &str)],
    at: WriteCtx,
) -> Result<(), StoreError> {
    if entries.is_empty() {
        return Ok(());
    }
    let rev = rummy_store::runs::take_rev(conn, t.run.run_id)?;
    let attributes = json!({});
    for (scheme, body) in entries {
        let path = format!("{scheme}://{}", t.turn);
        let previous = format!("{scheme}://{}", t.turn - 1);
        entries::write_audit(
            conn,
            &EntryWrite {
                run: t.run,
                path: &path,
                body,
                attributes: &attributes,
                state: State::Resolved,
                outcome: None,
                visibility: Visibility::Archived,
                loop_id: Some(t.loop_id),
                turn: t.turn,
                writer: Writer::System,
            },
            &previous,
            at,
            Some(rev),
        )?;
    }
    Ok(())
}

/// Writes a warning the model sees next turn as an `error://` entry; returns its path.
pub fn warning(
    conn: &mut Db,
    t: TurnRef,
    message: &str,
    at: WriteCtx,
) -> Result<String, StoreError> {
    let short: String = message.chars().take(ERROR_PATH_CHARS).collect();
    let path = entries::unique_path(conn, t.run, &result_path("error", t.turn, &short))?;
    let attributes = json!({});
    let outcome = FailureKind::Validation.to_string();
    let warning = EntryWrite {
        state: State::Failed,
        outcome: Some(&outcome),
        ..EntryWrite::plugin(t, &path, message, &attributes)
    };
    entries::write(conn, &warning, at)?;
    Ok(path)
}
