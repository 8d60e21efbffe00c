//! Streaming channels of accepted `sh`/`env` proposals: chunks appended by `stream`, settled by `stream/completed`, `stream/aborted` or `stream/cancel`.

use crate::entry::{strings_attr, text_attr, State, Visibility, Writer};
use crate::store::entries::{self, EntryWrite, RunRef, ViewRow};
use crate::store::StoreError;
use crate::time::Millis;
use diesel::SqliteConnection;
use serde_json::Value;

/// How a stream ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StreamEnd {
    /// The producer finished with an exit code (0 = success).
    Completed {
        /// The exit code.
        exit_code: i32,
        /// How long it ran, as the producer reports it.
        duration: Option<String>,
    },
    /// The client stopped it.
    Aborted {
        /// Why.
        reason: Option<String>,
        /// How long it ran.
        duration: Option<String>,
    },
    /// The client cancelled it (clients also get `stream/cancelled`).
    Cancelled {
        /// Why.
        reason: Option<String>,
    },
}

fn channel_row(
    conn: &mut SqliteConnection,
    run_id: i32,
    path: &str,
) -> Result<ViewRow, StoreError> {
    entries::by_path(conn, run_id, path)?
        .ok_or_else(|| StoreError::NotFound(format!("no stream channel {path} in this run")))
}

/// Where and when a stream write lands: the run, the token divisor and the clock.
#[derive(Debug, Clone, Copy)]
pub struct StreamWrite {
    /// The run owning the stream.
    pub run: RunRef,
    /// Characters per token, for the entry's token count.
    pub divisor: u32,
    /// The write's timestamp.
    pub now: Millis,
}

fn rewrite(
    conn: &mut SqliteConnection,
    at: StreamWrite,
    row: &ViewRow,
    body: &str,
    state: State,
    outcome: Option<&str>,
) -> Result<(), StoreError> {
    entries::write(
        conn,
        &EntryWrite {
            run: at.run,
            path: &row.path,
            body,
            attributes: &row.attributes(),
            state,
            outcome,
            visibility: row.visibility(),
            loop_id: None,
            turn: row.turn,
            writer: Writer::System,
        },
        at.divisor,
        at.now,
    )
    .map(|_| ())
}

/// Appends a chunk to channel `channel` of the stream at `path`; a settled channel is a conflict.
pub fn append(
    conn: &mut SqliteConnection,
    at: StreamWrite,
    path: &str,
    channel: u32,
    chunk: &str,
) -> Result<(), StoreError> {
    let row = channel_row(conn, at.run.run_id, &format!("{path}_{channel}"))?;
    if row.state() != State::Streaming {
        return Err(StoreError::Conflict(format!(
            "{} is {}, no longer streaming",
            row.path, row.state
        )));
    }
    let body = format!("{}{chunk}", row.body);
    rewrite(conn, at, &row, &body, State::Streaming, None)
}

/// Settles every channel of the stream at `path` and rewrites its log entry; answers the channel paths.
pub fn settle(
    conn: &mut SqliteConnection,
    at: StreamWrite,
    path: &str,
    end: &StreamEnd,
) -> Result<Vec<String>, StoreError> {
    let log = channel_row(conn, at.run.run_id, path)?;
    let attrs = log.attributes();
    let command = text_attr(&attrs, "command").to_owned();
    let channel_paths: Vec<String> = strings_attr(&attrs, "channels")
        .into_iter()
        .map(str::to_owned)
        .collect();
    if channel_paths.is_empty() {
        return Err(StoreError::Conflict(format!(
            "{path} has no stream channels (was it accepted?)"
        )));
    }
    let (state, outcome) = match end {
        StreamEnd::Completed { exit_code: 0, .. } => (State::Resolved, None),
        StreamEnd::Completed { exit_code, .. } => {
            (State::Failed, Some(format!("exit:{exit_code}")))
        }
        StreamEnd::Aborted { reason, .. } => (
            State::Cancelled,
            Some(reason.clone().unwrap_or_else(|| "aborted".into())),
        ),
        StreamEnd::Cancelled { reason } => (
            State::Cancelled,
            Some(reason.clone().unwrap_or_else(|| "cancelled".into())),
        ),
    };
    let mut summaries = Vec::new();
    for channel_path in &channel_paths {
        let row = channel_row(conn, at.run.run_id, channel_path)?;
        if row.state() != State::Streaming {
            return Err(StoreError::Conflict(format!(
                "{channel_path} is already {}",
                row.state
            )));
        }
        rewrite(conn, at, &row, &row.body, state, outcome.as_deref())?;
        let size = if row.body.is_empty() {
            "empty".to_owned()
        } else {
            format!("{} tokens", row.tokens)
        };
        summaries.push(format!("{channel_path} ({size})"));
    }
    let output = summaries.join(", ");
    let body = match end {
        StreamEnd::Completed {
            exit_code,
            duration,
        } => {
            format!(
                "ran '{command}', exit={exit_code}{}. Output: {output}",
                duration
                    .as_ref()
                    .map(|d| format!(" ({d})"))
                    .unwrap_or_default()
            )
        }
        StreamEnd::Aborted { reason, duration } => {
            let why: Vec<&str> = [reason.as_deref(), duration.as_deref()]
                .into_iter()
                .flatten()
                .collect();
            let why = if why.is_empty() {
                String::new()
            } else {
                format!(" ({})", why.join(", "))
            };
            format!("aborted '{command}'{why}. Output: {output}")
        }
        StreamEnd::Cancelled { reason } => {
            format!(
                "cancelled '{command}'{}. Output: {output}",
                reason
                    .as_ref()
                    .map(|r| format!(" ({r})"))
                    .unwrap_or_default()
            )
        }
    };
    let mut log_attrs = attrs.clone();
    if let (Some(map), StreamEnd::Completed { exit_code, .. }) = (log_attrs.as_object_mut(), end) {
        map.insert("exitCode".into(), Value::from(*exit_code));
    }
    entries::write(
        conn,
        &EntryWrite {
            run: at.run,
            path: &log.path,
            body: &body,
            attributes: &log_attrs,
            state: log.state(),
            outcome: log.outcome.as_deref(),
            visibility: Visibility::Visible,
            loop_id: None,
            turn: log.turn,
            writer: Writer::System,
        },
        at.divisor,
        at.now,
    )?;
    Ok(channel_paths)
}
