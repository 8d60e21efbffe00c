//! The project's history: one short `history://<date>/<run>/<loop>` entry per finished loop — who ran it, the prompt's gist, how it ended — written in the loop's finishing write and never rewritten.
//!
//! A daily entry rewritten at every loop would grow with the square of the day's loops; one
//! entry per loop stays as small as the loop's line, and reads in date order by path.

use super::messages;
use rummy_provider::time::Millis;
use rummy_store::db::Db;
use rummy_store::entries::RunRef;
use rummy_store::entries::WriteCtx;
use rummy_store::entry::Visibility;
use rummy_store::ids::{LoopId, ProjectId};
use rummy_store::memory::{self, insert_history};
use rummy_store::run::StopReason;
use rummy_store::{loops, runs, views, StoreError};
use serde_json::{Map, Value};

/// Characters of a prompt, an answer or an error a history line keeps.
pub const GIST_CHARS: usize = 160;

/// How a loop ended, as its history entry tells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoopEnd<'a> {
    /// The project.
    pub project_id: ProjectId,
    /// The run's alias.
    pub run: &'a str,
    /// The loop's number in its run.
    pub loop_number: i32,
    /// Its mode.
    pub mode: &'a str,
    /// Its model alias.
    pub model: &'a str,
    /// Its prompt.
    pub prompt: &'a str,
    /// Its final status.
    pub status: i32,
    /// Why it ended.
    pub stop_reason: StopReason,
    /// The last status report the loop gave, if any.
    pub update: Option<&'a str>,
    /// Why it failed, if it did.
    pub error: Option<&'a str>,
}

/// `text` on one line, whitespace collapsed, cut to [`GIST_CHARS`] with `…`.
pub fn gist(text: &str) -> String {
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match line.char_indices().nth(GIST_CHARS) {
        None => line,
        Some((cut, _)) => format!("{}…", line[..cut].trim_end()),
    }
}

/// The entry's path: `history://<UTC date of the end>/<run>/<loop>`.
pub fn path(end: &LoopEnd<'_>, now: Millis) -> String {
    let date = now.to_rfc3339().chars().take(10).collect::<String>();
    format!(
        "history://{date}/{}/{}",
        rummy_text::path::encode_component(end.run),
        end.loop_number
    )
}

/// The history line of a loop's end.
pub fn line(end: &LoopEnd<'_>) -> String {
    let update = end.update.map(gist);
    let error = end.error.map(gist);
    let outcome = messages::outcome(end.stop_reason, update.as_deref(), error.as_deref());
    messages::history_line(
        end.run,
        end.loop_number,
        end.mode,
        &gist(end.prompt),
        &outcome,
    )
}

/// The entry's attributes: the loop's facts, for clients to read without parsing the line.
pub fn attributes(end: &LoopEnd<'_>) -> Map<String, Value> {
    let mut map = Map::new();
    map.insert("run".into(), Value::from(end.run));
    map.insert("loop".into(), Value::from(end.loop_number));
    map.insert("mode".into(), Value::from(end.mode));
    map.insert("model".into(), Value::from(end.model));
    map.insert("status".into(), Value::from(end.status));
    map.insert("stopReason".into(), Value::from(end.stop_reason.as_str()));
    map.insert("prompt".into(), Value::from(gist(end.prompt)));
    map
}

/// Writes the loop's history entry, not yet indexed (the finishing write indexes it with the
/// loop's facts); answers its path and id.
pub fn record(conn: &mut Db, end: &LoopEnd<'_>, at: WriteCtx) -> Result<(String, i32), StoreError> {
    insert_history(
        conn,
        end.project_id,
        &path(end, at.now),
        &line(end),
        &attributes(end),
        at,
    )
}

/// How a loop ended, as its finishing write knows it.
#[derive(Debug, Clone, Copy)]
pub struct Outcome<'a> {
    /// The loop's status.
    pub status: i32,
    /// Why it ended.
    pub stop_reason: StopReason,
    /// Why it failed, if it did.
    pub error: Option<&'a str>,
    /// Whether the project keeps it for recall ([`recall::kept`](super::recall::kept)): its
    /// history line and its facts and session state indexed. Otherwise only its recall leaves
    /// the view.
    pub kept: bool,
}

/// What the project keeps of a loop that ended, in the write that ends it: when `kept`, the
/// facts and session state it wrote, indexed for recall, and its history line; and — a recall
/// being context for its own loop alone — the loop's `recall://` leaves the model's view
/// (archived, at one revision).
pub fn loop_ended(
    conn: &mut Db,
    run: RunRef,
    alias: &str,
    loop_id: LoopId,
    outcome: Outcome<'_>,
    at: WriteCtx,
) -> Result<(), StoreError> {
    let Outcome {
        status,
        stop_reason,
        error,
        kept,
    } = outcome;
    let ended = loops::by_id(conn, loop_id)?;
    if kept {
        let update = memory::last_update_of_loop(conn, run.run_id, loop_id)?;
        let end = LoopEnd {
            project_id: run.project_id,
            run: alias,
            loop_number: ended.sequence,
            mode: &ended.mode,
            model: &ended.model,
            prompt: &ended.prompt,
            status,
            stop_reason,
            update: update.as_deref(),
            error,
        };
        let (_, history) = record(conn, &end, at)?;
        memory::index_loop(conn, run.run_id, loop_id, history)?;
    }
    if let Some(recall) = memory::visible_recall_of_loop(conn, run.run_id, ended.sequence)? {
        let rev = runs::take_rev(conn, run.run_id)?;
        views::set_visibility_at(
            conn,
            run.run_id,
            &[recall],
            Visibility::Archived,
            rev,
            at.now,
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn end<'a>(
        stop_reason: StopReason,
        update: Option<&'a str>,
        error: Option<&'a str>,
    ) -> LoopEnd<'a> {
        LoopEnd {
            project_id: rummy_store::ids::ProjectId(1),
            run: "b_1",
            loop_number: 3,
            mode: "act",
            model: "fast",
            prompt: "Add a\n  --version   flag",
            status: 200,
            stop_reason,
            update,
            error,
        }
    }

    /// A history line names the run, the loop, its mode, the prompt's gist and how it ended.
    #[test]
    fn a_line_says_who_asked_what_and_how_it_ended() {
        let lines: Vec<String> = [
            end(
                StopReason::Concluded,
                Some("Added it in\nsrc/main.rs."),
                None,
            ),
            end(StopReason::Failed, None, Some("provider unreachable")),
            end(StopReason::Cancelled, None, None),
            end(StopReason::MaxTurns, None, None),
        ]
        .iter()
        .map(line)
        .collect();
        assert_eq!(
            lines,
            vec![
                "b_1 loop 3 (act): \"Add a --version flag\" → concluded: Added it in src/main.rs.",
                "b_1 loop 3 (act): \"Add a --version flag\" → failed: provider unreachable",
                "b_1 loop 3 (act): \"Add a --version flag\" → cancelled",
                "b_1 loop 3 (act): \"Add a --version flag\" → stopped at the turn limit",
            ]
        );
        assert_eq!(
            path(
                &end(StopReason::Cancelled, None, None),
                Millis(1_700_000_000_000)
            ),
            "history://2023-11-14/b_1/3"
        );
    }

    /// A long prompt is cut to its gist.
    #[test]
    fn a_gist_is_one_short_line() {
        let long = "word ".repeat(100);
        let cut = gist(&long);
        assert_eq!(cut.chars().count(), GIST_CHARS);
        assert!(cut.ends_with("word…"), "{cut}");
    }
}
