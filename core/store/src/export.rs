//! A run as one JSON document (`rummy export`): the run, its loops, turns,
//! side-task calls, usage totals and every entry it has a view of, read in one transaction so
//! the parts agree with each other while a server goes on writing.

use super::entries::{self, EntryFilter, ViewRow};
use super::loops::Loop;
use super::runs::Run;
use super::turns::Turn;
use super::{projects, runs, turns, StoreError};
use crate::db::Db;
use crate::entry::http_status;
use crate::ids::RunId;
use crate::schema::{loops, sidecar_calls as calls};
use diesel::prelude::*;
use rummy_protocol::results::Entry;
use rummy_provider::time::Millis;
use rummy_provider::Usage;
use serde::Serialize;
use serde_json::Value;

/// The export's format, first in the document, so a reader knows what it holds.
pub const FORMAT: &str = "rummy-export/1";

/// A run exported: what `rummy export RUN` prints.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunExport {
    /// [`FORMAT`].
    pub format: &'static str,
    /// The project's name.
    pub project: String,
    /// The run itself.
    pub run: RunPart,
    /// Its loops, in order.
    pub loops: Vec<LoopPart>,
    /// Its turns, in order.
    pub turns: Vec<TurnPart>,
    /// The side tasks its turns made, oldest first.
    pub sidecar: Vec<SidecarPart>,
    /// Its tokens and cost, turns and side tasks together (`getRun`'s `telemetry`).
    pub telemetry: Usage,
    /// Every entry the run has a view of, in the order it first saw them, as `getEntries`
    /// answers them with their bodies.
    pub entries: Vec<Entry>,
}

/// The run's own row.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunPart {
    /// Its alias.
    pub run: String,
    /// The run it was forked from.
    pub parent: Option<String>,
    /// Its model alias.
    pub model: String,
    /// `ask` or `act`.
    pub mode: String,
    /// Its status, an HTTP code.
    pub status: i32,
    /// Who started it (a token's user).
    pub user: Option<String>,
    /// Its temperature, if set.
    pub temperature: Option<f64>,
    /// Its persona, if set.
    pub persona: Option<String>,
    /// Its own context limit, if set.
    pub context_limit: Option<i32>,
    /// The flags its loops start with.
    pub flags: super::flags::RunFlags,
    /// When it was created (RFC 3339).
    pub created: String,
    /// When it last changed (RFC 3339).
    pub updated: String,
}

/// One loop: a prompt and how it ended.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LoopPart {
    /// Its number in the run.
    pub sequence: i32,
    /// `ask` or `act`.
    pub mode: String,
    /// The model it ran on.
    pub model: String,
    /// The prompt that started it.
    pub prompt: String,
    /// 100 queued, 102 running, else how it ended.
    pub status: i32,
    /// Its flags (and routing's choice).
    pub config: Value,
    /// How it ended (`null` until it did).
    pub result: Value,
    /// When it was queued (RFC 3339).
    pub created: String,
    /// When it last changed (RFC 3339).
    pub updated: String,
}

/// One turn: a model call and its usage.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TurnPart {
    /// Its number in the run.
    pub sequence: i32,
    /// The number of its loop.
    pub loop_sequence: i32,
    /// 102 running, 200 done, 500 failed.
    pub status: i32,
    /// Estimated tokens of the context sent.
    pub context_tokens: i32,
    /// The provider's counts and cost.
    pub usage: Usage,
    /// The model's reasoning text, when it sent one.
    pub reasoning_content: Option<String>,
    /// When it began (RFC 3339).
    pub created: String,
    /// When it last changed (RFC 3339).
    pub updated: String,
}

/// One side task's call.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SidecarPart {
    /// The turn that caused it.
    pub turn: i32,
    /// The task (`summary`, `rerank`, …).
    pub task: String,
    /// The model asked.
    pub model: String,
    /// `ok`, `failed`, `timeout` or `unparseable`.
    pub outcome: String,
    /// Why it failed.
    pub error: Option<String>,
    /// The provider's counts and cost.
    pub usage: Usage,
    /// How long it took, in ms.
    pub elapsed_ms: i64,
    /// When it was recorded (RFC 3339).
    pub created: String,
}

/// A row as `getEntries` answers it: its status from its state and outcome, its attributes as
/// an object, its body when asked for.
pub fn wire_entry(row: ViewRow, with_body: bool) -> Entry {
    let hash = row.proposal_hash();
    let proposal = row.proposal();
    Entry {
        status: i64::from(http_status(row.state, row.outcome.as_deref())),
        attributes: row.attribute_map(),
        path: row.path,
        scheme: row.scheme,
        state: row.state.into(),
        outcome: row.outcome,
        visibility: row.visibility.into(),
        turn: i64::from(row.turn),
        tokens: i64::from(row.tokens),
        body: with_body.then_some(row.body),
        body_bytes: None,
        body_truncated: false,
        hash,
        proposal,
    }
}

/// Run `alias` of project `project`, whole, read in one transaction. `NotFound` names what is
/// missing.
pub fn run(conn: &mut Db, project: &str, alias: &str) -> Result<RunExport, StoreError> {
    conn.transaction(|c| {
        let p = projects::by_name(c, project)?
            .ok_or_else(|| StoreError::NotFound(format!("no project \"{project}\"")))?;
        let r = runs::by_alias(c, p.id, alias)?.ok_or_else(|| {
            StoreError::NotFound(format!("no run \"{alias}\" in project \"{project}\""))
        })?;
        let parent = r
            .parent_run_id
            .map(|id| runs::by_id(c, id).map(|parent| parent.alias))
            .transpose()?;
        let loop_rows = loops_of(c, r.id)?;
        let turn_rows = turns_of(c, r.id)?;
        let sidecar = sidecar_of(c, r.id)?;
        let telemetry = turns::totals(c, r.id)?;
        let rows = entries::list(c, r.id, &EntryFilter::default(), i64::MAX, 0)?;
        let loop_sequence = |turn: &Turn| {
            loop_rows
                .iter()
                .find(|l| l.id == turn.loop_id)
                .map_or(0, |l| l.sequence)
        };
        Ok(RunExport {
            format: FORMAT,
            project: p.name,
            turns: turn_rows
                .iter()
                .map(|t| turn_part(t, loop_sequence(t)))
                .collect(),
            loops: loop_rows.into_iter().map(loop_part).collect(),
            sidecar,
            telemetry,
            entries: rows.into_iter().map(|row| wire_entry(row, true)).collect(),
            run: run_part(r, parent),
        })
    })
}

fn run_part(r: Run, parent: Option<String>) -> RunPart {
    RunPart {
        flags: r.flags(),
        run: r.alias,
        parent,
        model: r.model,
        mode: r.mode,
        status: r.status,
        user: r.user,
        temperature: r.temperature,
        persona: r.persona,
        context_limit: r.context_limit,
        created: Millis(r.created_at).to_rfc3339(),
        updated: Millis(r.updated_at).to_rfc3339(),
    }
}

fn loop_part(l: Loop) -> LoopPart {
    LoopPart {
        config: l.config(),
        result: l
            .result
            .as_deref()
            .and_then(|text| serde_json::from_str(text).ok())
            .unwrap_or(Value::Null),
        sequence: l.sequence,
        mode: l.mode,
        model: l.model,
        prompt: l.prompt,
        status: l.status,
        created: Millis(l.created_at).to_rfc3339(),
        updated: Millis(l.updated_at).to_rfc3339(),
    }
}

fn turn_part(t: &Turn, loop_sequence: i32) -> TurnPart {
    TurnPart {
        sequence: t.sequence,
        loop_sequence,
        status: t.status,
        context_tokens: t.context_tokens,
        usage: Usage {
            prompt_tokens: t.prompt_tokens,
            cached_tokens: t.cached_tokens,
            completion_tokens: t.completion_tokens,
            reasoning_tokens: t.reasoning_tokens,
            total_tokens: t.total_tokens,
            cost: t.cost,
        },
        reasoning_content: t.reasoning_content.clone(),
        created: Millis(t.created_at).to_rfc3339(),
        updated: Millis(t.updated_at).to_rfc3339(),
    }
}

/// The run's loops, in order.
fn loops_of(conn: &mut Db, run_id: RunId) -> Result<Vec<Loop>, StoreError> {
    Ok(loops::table
        .filter(loops::run_id.eq(run_id))
        .order(loops::sequence.asc())
        .select(Loop::as_select())
        .load(conn)?)
}

/// The run's turns, in order.
fn turns_of(conn: &mut Db, run_id: RunId) -> Result<Vec<Turn>, StoreError> {
    use crate::schema::turns;
    Ok(turns::table
        .filter(turns::run_id.eq(run_id))
        .order(turns::sequence.asc())
        .select(Turn::as_select())
        .load(conn)?)
}

/// The run's side-task calls, oldest first, every column.
fn sidecar_of(conn: &mut Db, run_id: RunId) -> Result<Vec<SidecarPart>, StoreError> {
    type Row = (
        i32,
        String,
        String,
        String,
        Option<String>,
        (i32, i32, i32, i32, i32, f64),
        i64,
        i64,
    );
    let rows: Vec<Row> = calls::table
        .filter(calls::run_id.eq(run_id))
        .order(calls::id.asc())
        .select((
            calls::turn,
            calls::task,
            calls::model,
            calls::outcome,
            calls::error,
            (
                calls::prompt_tokens,
                calls::cached_tokens,
                calls::completion_tokens,
                calls::reasoning_tokens,
                calls::total_tokens,
                calls::cost,
            ),
            calls::elapsed_ms,
            calls::created_at,
        ))
        .load(conn)?;
    Ok(rows
        .into_iter()
        .map(
            |(turn, task, model, outcome, error, (p, c, co, r, t, cost), elapsed_ms, at)| {
                SidecarPart {
                    turn,
                    task,
                    model,
                    outcome,
                    error,
                    usage: Usage {
                        prompt_tokens: p,
                        cached_tokens: c,
                        completion_tokens: co,
                        reasoning_tokens: r,
                        total_tokens: t,
                        cost,
                    },
                    elapsed_ms,
                    created: Millis(at).to_rfc3339(),
                }
            },
        )
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::entry::{Visibility, Writer};
    use crate::flags::RunFlags;
    use crate::run::Mode;
    use crate::sidecar_calls::{self, SidecarCall};
    use crate::testing::{memory, project, run as new_run, write, NOW};
    use crate::{loops, turns};
    use pretty_assertions::assert_eq;
    use serde_json::json;

    /// A run exports whole: its row, its loop and how it ended, its turn with the provider's
    /// figures and the loop's number, its side task, the totals of both, and its entry with
    /// its body in `getEntries`' shape.
    #[test]
    fn a_run_exports_with_its_loops_turns_side_tasks_and_entries() {
        let mut c = memory();
        let p = project(&mut c, "web");
        let r = new_run(&mut c, p.id, "first");
        loops::enqueue(
            &mut c,
            r.run_id,
            Mode::Act,
            "m",
            "Fix it",
            &RunFlags::default(),
            NOW,
        )
        .unwrap();
        let active = loops::claim_next(&mut c, r.run_id, NOW).unwrap().unwrap();
        let turn = turns::begin(&mut c, r.run_id, active.id, NOW).unwrap();
        let usage = Usage {
            prompt_tokens: 100,
            cached_tokens: 40,
            completion_tokens: 20,
            reasoning_tokens: 5,
            total_tokens: 120,
            cost: 0.5,
        };
        turns::record_usage(&mut c, turn.id, 90, &usage, Some("thinking"), NOW).unwrap();
        turns::finish(&mut c, turn.id, turns::DONE, NOW).unwrap();
        let side = Usage {
            prompt_tokens: 10,
            cached_tokens: 0,
            completion_tokens: 2,
            reasoning_tokens: 0,
            total_tokens: 12,
            cost: 0.25,
        };
        let call = SidecarCall {
            run_id: r.run_id,
            turn: 1,
            task: "summary",
            model: "m",
            outcome: "ok",
            error: None,
            usage: side,
            elapsed_ms: 7,
        };
        sidecar_calls::record(&mut c, &call, NOW).unwrap();
        loops::finish(&mut c, active.id, 200, &json!({"status": 200}), NOW).unwrap();
        write(
            &mut c,
            r,
            "known://a",
            "fact",
            Visibility::Visible,
            Writer::Model,
        )
        .unwrap();

        let exported = run(&mut c, "web", "first").unwrap();
        let at = NOW.to_rfc3339();
        assert_eq!(
            serde_json::to_value(&exported).unwrap(),
            json!({
                "format": "rummy-export/1",
                "project": "web",
                "run": {
                    "run": "first", "parent": null, "model": "m", "mode": "ask",
                    "status": 100, "user": null, "temperature": null, "persona": null,
                    "contextLimit": null, "flags": {}, "created": at, "updated": at,
                },
                "loops": [{
                    "sequence": 1, "mode": "act", "model": "m", "prompt": "Fix it",
                    "status": 200, "config": {}, "result": {"status": 200},
                    "created": at, "updated": at,
                }],
                "turns": [{
                    "sequence": 1, "loopSequence": 1, "status": 200, "contextTokens": 90,
                    "usage": {"promptTokens": 100, "cachedTokens": 40, "completionTokens": 20,
                              "reasoningTokens": 5, "totalTokens": 120, "cost": 0.5},
                    "reasoningContent": "thinking", "created": at, "updated": at,
                }],
                "sidecar": [{
                    "turn": 1, "task": "summary", "model": "m", "outcome": "ok", "error": null,
                    "usage": {"promptTokens": 10, "cachedTokens": 0, "completionTokens": 2,
                              "reasoningTokens": 0, "totalTokens": 12, "cost": 0.25},
                    "elapsedMs": 7, "created": at,
                }],
                "telemetry": {"promptTokens": 110, "cachedTokens": 40, "completionTokens": 22,
                              "reasoningTokens": 5, "totalTokens": 132, "cost": 0.75},
                "entries": [{
                    "path": "known://a", "scheme": "known", "state": "resolved",
                    "outcome": null, "status": 200, "visibility": "visible", "turn": 1,
                    "tokens": exported.entries[0].tokens, "attributes": {}, "body": "fact",
                }],
            })
        );
    }

    /// A project or run that does not exist is `NotFound`, named.
    #[test]
    fn a_missing_project_or_run_is_named() {
        let mut c = memory();
        let p = project(&mut c, "web");
        new_run(&mut c, p.id, "first");
        let missing = |c: &mut Db, project: &str, alias: &str| match run(c, project, alias) {
            Err(StoreError::NotFound(what)) => what,
            other => panic!("{other:?}"),
        };
        assert_eq!(
            [
                missing(&mut c, "api", "first"),
                missing(&mut c, "web", "second")
            ],
            [
                "no project \"api\"".to_owned(),
                "no run \"second\" in project \"web\"".to_owned()
            ]
        );
    }
}
