//! Writes of a turn outside dispatch: the loop's prompt, the audit trail, and the healer's warnings.

use super::TurnRef;
use crate::entry::{State, Visibility, Writer};
use crate::path::result_path;
use crate::run::Mode;
use crate::store::entries::{self, EntryWrite};
use crate::store::StoreError;
use crate::time::Millis;
use diesel::SqliteConnection;
use serde_json::{json, Value};

/// How many characters of a warning go into its `error://` path.
const ERROR_PATH_CHARS: usize = 80;

/// Writes `prompt://<turn>`, which marks the start of the loop in the model's context.
pub fn prompt(
    conn: &mut SqliteConnection,
    t: TurnRef,
    body: &str,
    mode: Mode,
    divisor: u32,
    now: Millis,
) -> Result<(), StoreError> {
    let path = format!("prompt://{}", t.turn);
    let attributes = json!({ "mode": mode.as_str() });
    write(
        conn,
        t,
        &path,
        body,
        &attributes,
        State::Resolved,
        None,
        Visibility::Visible,
        Writer::Plugin,
        divisor,
        now,
    )
}

/// Writes a turn's audit entries (`(scheme, body)` pairs, e.g. `system://N`, `assistant://N`)
/// as one change: archived, system-only, at one view revision.
pub fn audit_all(
    conn: &mut SqliteConnection,
    t: TurnRef,
    entries: &[(&str, &str)],
    divisor: u32,
    now: Millis,
) -> Result<(), StoreError> {
    if entries.is_empty() {
        return Ok(());
    }
    let rev = crate::store::runs::take_rev(conn, t.run.run_id)?;
    let attributes = json!({});
    for (scheme, body) in entries {
        let path = format!("{scheme}://{}", t.turn);
        entries::write_at(
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
            divisor,
            now,
            Some(rev),
        )?;
    }
    Ok(())
}

/// Writes a warning the model sees next turn as an `error://` entry; returns its path.
pub fn warning(
    conn: &mut SqliteConnection,
    t: TurnRef,
    message: &str,
    divisor: u32,
    now: Millis,
) -> Result<String, StoreError> {
    let short: String = message.chars().take(ERROR_PATH_CHARS).collect();
    let path = entries::unique_path(conn, t.run, &result_path("error", t.turn, &short))?;
    write(
        conn,
        t,
        &path,
        message,
        &json!({}),
        State::Failed,
        Some("validation"),
        Visibility::Visible,
        Writer::Plugin,
        divisor,
        now,
    )?;
    Ok(path)
}

/// One entry write on behalf of a turn.
#[expect(
    clippy::too_many_arguments,
    reason = "every field of an entry write; one write context is issue 28 item 5"
)]
fn write(
    conn: &mut SqliteConnection,
    t: TurnRef,
    path: &str,
    body: &str,
    attributes: &Value,
    state: State,
    outcome: Option<&str>,
    visibility: Visibility,
    writer: Writer,
    divisor: u32,
    now: Millis,
) -> Result<(), StoreError> {
    entries::write(
        conn,
        &EntryWrite {
            run: t.run,
            path,
            body,
            attributes,
            state,
            outcome,
            visibility,
            loop_id: Some(t.loop_id),
            turn: t.turn,
            writer,
        },
        divisor,
        now,
    )
    .map(|_| ())
}
