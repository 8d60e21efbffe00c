//! Streaming channels of accepted `sh`/`env` proposals: chunks appended by `stream` (or by the
//! server running the command), settled by `stream/completed`, `stream/aborted`,
//! `stream/cancel`, the server's runner, or recovery after a restart.
//!
//! An accepted command's log entry says who runs it (`runner`) and, while its turn waits for
//! the output, carries `awaiting: true`: set in the write that accepts it, removed in the
//! first write of the turn going on. So a restart knows exactly whether the turn still waited.

/// How a stream ended (defined with the commands that end one, which know nothing of turns).
pub use crate::shell::StreamEnd;

use crate::config::ShellRunner;
use crate::shell::output::ChannelText;
use crate::turn::state::Appended;
use rummy_store::db::Db;
use rummy_store::entries::{self, EntryWrite, RunRef, ViewRow, WriteCtx};
use rummy_store::entry::{strings_attr, text_attr, FailureKind, State, Visibility, Writer};
use rummy_store::ids::RunId;
use rummy_store::ops::{change_view, Op, ViewChange};
use rummy_store::{views, StoreError};
use rummy_text::parse::ToolName;
use serde_json::{Map, Value};

/// The log-entry attribute set while the command's turn waits for its output.
pub const AWAITING: &str = "awaiting";

fn channel_row(conn: &mut Db, run_id: RunId, path: &str) -> Result<ViewRow, StoreError> {
    entries::by_path(conn, run_id, path)?
        .ok_or_else(|| StoreError::NotFound(format!("no stream channel {path} in this run")))
}

/// Where and when a stream write lands: the run, and the token divisor and time of the write.
#[derive(Debug, Clone, Copy)]
pub struct StreamWrite {
    /// The run owning the stream.
    pub run: RunRef,
    /// The token divisor and the write's time.
    pub ctx: WriteCtx,
}

fn rewrite(
    conn: &mut Db,
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
            visibility: row.visibility,
            loop_id: None,
            turn: row.turn,
            writer: Writer::System,
        },
        at.ctx,
    )
    .map(|_| ())
}

/// Fails when the command at `path` is one the server runs (`runner: "server"`): its output and
/// its exit are the server's to write, so a client's `stream`, `stream/completed` or
/// `stream/aborted` on it is refused; `stream/cancel` still stops it. A command a client runs
/// (`runner: "client"`) is that client's to stream. A call of a client's tool is answered by
/// the client offering the tool, with `tool/result` alone.
pub fn check_client_producer(conn: &mut Db, run_id: RunId, path: &str) -> Result<(), StoreError> {
    let Some(log) = entries::by_path(conn, run_id, path)? else {
        return Ok(());
    };
    let attrs = log.attributes();
    if text_attr(&attrs, "kind") == ToolName::Call.as_str() {
        return Err(StoreError::Refused(format!(
            "permission denied: {path} is a call of a client's tool, which the client offering \
             the tool answers with tool/result; a client may only cancel it (stream/cancel)"
        )));
    }
    if text_attr(&attrs, "runner") != ShellRunner::Server.as_str() {
        return Ok(());
    }
    Err(StoreError::Refused(format!(
        "permission denied: {path} is run by the server, which streams its output and settles \
         it; a client may only cancel it (stream/cancel)"
    )))
}

/// Appends a chunk to channel `channel` of the stream at `path` (text the server's runner has
/// capped already); a settled channel is a conflict. Answers the channel and where the chunk
/// went in it, for the push to carry only what was appended.
pub fn append(
    conn: &mut Db,
    at: StreamWrite,
    path: &str,
    channel: u32,
    chunk: &str,
) -> Result<Appended, StoreError> {
    let row = streaming_channel(conn, at, path, channel)?;
    let appended = Appended {
        path: row.path.clone(),
        offset: row.body.len(),
    };
    let body = format!("{}{chunk}", row.body);
    rewrite(conn, at, &row, &body, State::Streaming, None)?;
    Ok(appended)
}

/// Appends a client's chunk to channel `channel` of the stream at `path`, the channel capped
/// at `cap` bytes as the server caps the output of a command it runs
/// ([`ChannelText`]: past the cap the marker, once, then nothing). Answers where the chunk
/// went, or `None` when nothing of it was kept (the channel was full): nothing is written.
pub fn append_capped(
    conn: &mut Db,
    at: StreamWrite,
    path: &str,
    channel: u32,
    chunk: &str,
    cap: usize,
) -> Result<Option<Appended>, StoreError> {
    let row = streaming_channel(conn, at, path, channel)?;
    let kept = ChannelText::resumed(cap, row.body.len()).push(chunk.as_bytes());
    if kept.is_empty() {
        return Ok(None);
    }
    let appended = Appended {
        path: row.path.clone(),
        offset: row.body.len(),
    };
    let body = format!("{}{kept}", row.body);
    rewrite(conn, at, &row, &body, State::Streaming, None)?;
    Ok(Some(appended))
}

/// The channels at `paths` as they stand, each as "nothing appended at its end": what a push
/// after settling them carries, so a channel's state change does not send its whole body
/// again (a client that holds less reads it again).
pub fn unchanged(
    conn: &mut Db,
    run_id: RunId,
    paths: &[String],
) -> Result<Vec<Appended>, StoreError> {
    paths
        .iter()
        .map(|path| {
            let row = channel_row(conn, run_id, path)?;
            Ok(Appended {
                offset: row.body.len(),
                path: row.path,
            })
        })
        .collect()
}

/// Channel `channel` of the stream at `path`, still streaming; a settled one is a conflict.
fn streaming_channel(
    conn: &mut Db,
    at: StreamWrite,
    path: &str,
    channel: u32,
) -> Result<ViewRow, StoreError> {
    let row = channel_row(conn, at.run.run_id, &format!("{path}_{channel}"))?;
    if row.state != State::Streaming {
        return Err(StoreError::Conflict(format!(
            "{} is {}, no longer streaming",
            row.path, row.state
        )));
    }
    Ok(row)
}

/// Settles every channel of the stream at `path` and rewrites its log entry; answers the channel paths.
pub fn settle(
    conn: &mut Db,
    at: StreamWrite,
    path: &str,
    end: &StreamEnd,
) -> Result<Vec<String>, StoreError> {
    let log = channel_row(conn, at.run.run_id, path)?;
    let attrs = log.attributes();
    // What ran: the command line, or a call's `server/tool`.
    let tool = text_attr(&attrs, "tool");
    let call = text_attr(&attrs, "kind") == ToolName::Call.as_str();
    let fetch = text_attr(&attrs, "kind") == "fetch";
    let command = if call {
        format!("{}/{tool}", text_attr(&attrs, "server"))
    } else if fetch {
        text_attr(&attrs, "url").to_owned()
    } else {
        text_attr(&attrs, "command").to_owned()
    };
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
            let failure = FailureKind::Exit {
                code: i64::from(*exit_code),
            };
            (State::Failed, Some(failure.to_string()))
        }
        StreamEnd::Aborted { reason, .. } => (
            State::Cancelled,
            Some(reason.clone().unwrap_or_else(|| "aborted".into())),
        ),
        StreamEnd::Cancelled { reason } => (
            State::Cancelled,
            Some(reason.clone().unwrap_or_else(|| "cancelled".into())),
        ),
        StreamEnd::Failed { reason, .. } => (State::Failed, Some(reason.clone())),
    };
    let mut summaries = Vec::new();
    for channel_path in &channel_paths {
        let row = channel_row(conn, at.run.run_id, channel_path)?;
        if row.state != State::Streaming {
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
        StreamEnd::Completed { exit_code, .. } if call => {
            let answered = if *exit_code == 0 {
                "it answered"
            } else {
                "it answered with an error"
            };
            format!("called '{command}': {answered}. Output: {output}")
        }
        StreamEnd::Completed { .. } if fetch => format!("fetched '{command}'. Output: {output}"),
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
        StreamEnd::Failed { reason, duration } => {
            let took = duration
                .as_ref()
                .map(|d| format!(", after {d}"))
                .unwrap_or_default();
            format!("failed '{command}' ({reason}{took}). Output: {output}")
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
            state: log.state,
            outcome: log.outcome.as_deref(),
            visibility: Visibility::Visible,
            loop_id: None,
            turn: log.turn,
            writer: Writer::System,
        },
        at.ctx,
    )?;
    Ok(channel_paths)
}

/// Merges `merge` into the attributes of the entry at `path` (a `null` removes the key).
fn merge_attributes(
    conn: &mut Db,
    at: StreamWrite,
    row: &ViewRow,
    merge: Map<String, Value>,
) -> Result<(), StoreError> {
    let op = Op {
        run: at.run,
        writer: Writer::System,
        // Only attributes change: no body passes the size gate here.
        max_entry_tokens: u32::MAX,
        at: at.ctx,
    };
    let change = ViewChange {
        merge: Some(merge),
        ..ViewChange::default()
    };
    change_view(conn, &op, row, &change)
}

/// Marks the accepted command at `path` as the one its turn waits for, run by `runner`.
pub fn await_output(
    conn: &mut Db,
    at: StreamWrite,
    path: &str,
    runner: ShellRunner,
) -> Result<(), StoreError> {
    let row = channel_row(conn, at.run.run_id, path)?;
    let mut merge = Map::new();
    merge.insert("runner".into(), Value::from(runner.as_str()));
    merge.insert(AWAITING.into(), Value::Bool(true));
    merge_attributes(conn, at, &row, merge)
}

/// The turn no longer waits for the command at `path` (it goes on).
pub fn stop_awaiting(conn: &mut Db, at: StreamWrite, path: &str) -> Result<(), StoreError> {
    let row = channel_row(conn, at.run.run_id, path)?;
    if row.attributes().get(AWAITING).is_none() {
        return Ok(());
    }
    let mut merge = Map::new();
    merge.insert(AWAITING.into(), Value::Null);
    merge_attributes(conn, at, &row, merge)
}

/// The states of the channels of the command at `path`, in channel order.
pub fn channel_states(conn: &mut Db, run_id: RunId, path: &str) -> Result<Vec<State>, StoreError> {
    let log = channel_row(conn, run_id, path)?;
    strings_attr(&log.attributes(), "channels")
        .into_iter()
        .map(|channel| Ok(channel_row(conn, run_id, channel)?.state))
        .collect()
}

/// An accepted command whose output its turn waits for: where the turn goes on after it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Awaited {
    /// The command's log entry (the accepted proposal).
    pub path: String,
    /// `sh` or `env`.
    pub tool: ToolName,
    /// Its turn.
    pub turn: i32,
    /// Its position among the turn's commands.
    pub command_index: usize,
}

impl Awaited {
    /// The command whose log entry is `row`, if it is a tool's.
    pub fn of(row: &ViewRow) -> Option<Awaited> {
        Some(Awaited {
            path: row.path.clone(),
            tool: ToolName::from_scheme(row.tag())?,
            turn: row.turn,
            command_index: row
                .attributes()
                .get(rummy_protocol::ProposalKind::MARK)
                .and_then(Value::as_u64)
                .unwrap_or(0) as usize,
        })
    }
}

/// The accepted command turn `turn` of the run waits for, if any.
pub fn awaited(conn: &mut Db, run_id: RunId, turn: i32) -> Result<Option<Awaited>, StoreError> {
    let rows = views::commands_of_turn(conn, run_id, turn)?;
    Ok(rows
        .iter()
        .filter(|r| r.attributes().get(AWAITING) == Some(&Value::Bool(true)))
        .find_map(Awaited::of))
}

/// Fails every channel still streaming of the runs `of` takes, with `reason` (a restart:
/// nobody streams into them any more); answers each run touched and the commands settled.
pub fn fail_streaming(
    conn: &mut Db,
    of: impl Fn(RunId) -> bool,
    reason: &str,
    ctx: WriteCtx,
) -> Result<Vec<(RunRef, String)>, StoreError> {
    let mut channels = views::streaming_commands(conn)?;
    channels.retain(|(run_id, ..)| of(*run_id));
    let mut settled: Vec<(RunRef, String)> = Vec::new();
    for (run_id, project_id, channel) in channels {
        let run = RunRef { run_id, project_id };
        // A channel is `<log>_<n>`; its log lists it among its channels.
        let Some((log, _)) = channel.rsplit_once('_') else {
            continue;
        };
        if settled.iter().any(|(r, p)| r.run_id == run_id && p == log) {
            continue;
        }
        let listed = entries::by_path(conn, run_id, log)?.is_some_and(|row| {
            strings_attr(&row.attributes(), "channels").contains(&channel.as_str())
        });
        if !listed {
            tracing::warn!(
                run_id = run_id.0,
                channel,
                "a streaming channel without its command's entry"
            );
            continue;
        }
        let at = StreamWrite { run, ctx };
        let end = StreamEnd::Failed {
            reason: reason.to_owned(),
            duration: None,
        };
        settle(conn, at, log, &end)?;
        settled.push((run, log.to_owned()));
    }
    Ok(settled)
}
