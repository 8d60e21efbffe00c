//! A run's session state in the store: read, created when missing (silently, for old runs and
//! new ones alike), written after an update, and what happened since it was.

use super::{Event, Progress, SessionState, PATH};
use rummy_store::entries::WriteCtx;
use rummy_store::entries::{self, EntryWrite, RunRef, ViewRow};
use rummy_store::entry::{State, Visibility, Writer};
use rummy_store::ids::{LoopId, RunId};
use rummy_store::{session_state as queries, skills, StoreError};
use serde_json::{json, Value};

/// The attribute of `session://state` that holds the last turn it covers.
const COVERED: &str = "turn";

/// A run's stored session state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stored {
    /// The state.
    pub state: SessionState,
    /// The last turn it covers (0: none).
    pub covered: i32,
}

/// The run's session state, if it has one.
pub fn current(
    conn: &mut rummy_store::db::Db,
    run_id: RunId,
) -> Result<Option<Stored>, StoreError> {
    Ok(entries::by_path(conn, run_id, PATH)?.map(|row| Stored {
        state: SessionState::read(&row.body),
        covered: row
            .attributes()
            .get(COVERED)
            .and_then(Value::as_i64)
            .and_then(|t| i32::try_from(t).ok())
            .unwrap_or(0),
    }))
}

/// Whether the run's active skills leave it session state (`memoryScope: session`, or none).
pub fn allowed(conn: &mut rummy_store::db::Db, run_id: RunId) -> Result<bool, StoreError> {
    Ok(skills::memory_scope(conn, run_id)?.allows_session_state())
}

/// Gives the run the empty session state when it has none — a run older than session state,
/// or one just turned on — and answers whether it did. Nothing is said of it: it is what the
/// run would have had.
pub fn ensure(
    conn: &mut rummy_store::db::Db,
    run: RunRef,
    at: WriteCtx,
) -> Result<bool, StoreError> {
    if entries::by_path(conn, run.run_id, PATH)?.is_some() {
        return Ok(false);
    }
    write(conn, run, &SessionState::empty(), 0, at)?;
    Ok(true)
}

/// Stores `state` as the run's session state, covering the run's turns up to `covered`.
pub fn write(
    conn: &mut rummy_store::db::Db,
    run: RunRef,
    state: &SessionState,
    covered: i32,
    at: WriteCtx,
) -> Result<(), StoreError> {
    let body = state.render();
    entries::write(
        conn,
        &EntryWrite {
            run,
            path: PATH,
            body: &body,
            attributes: &json!({ COVERED: covered }),
            state: State::Resolved,
            outcome: None,
            visibility: Visibility::Visible,
            loop_id: None,
            turn: covered,
            writer: Writer::Plugin,
        },
        at,
    )?;
    Ok(())
}

/// What happened since turn `since`: the turns begun and the commands given (a command's
/// result each; a command's output channels are not commands of their own).
pub fn progress(
    conn: &mut rummy_store::db::Db,
    run_id: RunId,
    since: i32,
) -> Result<(Progress, Vec<ViewRow>), StoreError> {
    let turns = queries::turns_since(conn, run_id, since)?;
    let rows = queries::activity_since(conn, run_id, since)?;
    let commands = rows.iter().filter(|r| is_command(r)).count();
    let progress = Progress {
        turns,
        commands: u32::try_from(commands).unwrap_or(u32::MAX),
    };
    Ok((progress, rows))
}

/// The run's last turn (its loop and number), if it has begun one.
pub fn last_turn(
    conn: &mut rummy_store::db::Db,
    run_id: RunId,
) -> Result<Option<(LoopId, i32)>, StoreError> {
    queries::last_turn(conn, run_id)
}

/// Whether a row is a command's result: a tool's entry that is not an output channel.
fn is_command(row: &ViewRow) -> bool {
    !matches!(row.tag(), "prompt" | "error") && row.attributes().get("channel").is_none()
}

/// The events the sidecar reads, from the activity's rows (a command's output channels are
/// left out: its result says how it ended).
pub fn events(rows: &[ViewRow]) -> Vec<Event> {
    rows.iter()
        .filter(|r| r.tag() == "prompt" || r.tag() == "error" || is_command(r))
        .map(|row| {
            if row.tag() == "prompt" {
                return Event::Prompt {
                    turn: row.turn,
                    text: row.body.clone(),
                };
            }
            let attributes = row.attributes();
            let target = attributes
                .get("path")
                .or_else(|| attributes.get("command"))
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            let state = match &row.outcome {
                Some(outcome) => format!("{} {outcome}", row.state),
                None => row.state.as_str().to_owned(),
            };
            Event::Result {
                turn: row.turn,
                tool: row.tag().to_owned(),
                target,
                state,
                body: row.body.clone(),
            }
        })
        .collect()
}
