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

/// Writes an audit entry (`system://N`, `assistant://N`, …): archived, system-only, never shown to the model.
pub fn audit(
    conn: &mut SqliteConnection,
    t: TurnRef,
    scheme: &str,
    body: &str,
    attributes: &Value,
    divisor: u32,
    now: Millis,
) -> Result<(), StoreError> {
    let path = format!("{scheme}://{}", t.turn);
    write(
        conn,
        t,
        &path,
        body,
        attributes,
        State::Resolved,
        None,
        Visibility::Archived,
        Writer::System,
        divisor,
        now,
    )
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
#[allow(clippy::too_many_arguments)]
pub(crate) fn write(
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
