//! The sidecar's calls: one row per side task, on the turn that caused it, with the provider's usage and cost.
//!
//! Apart from `turns`, whose own token columns calibrate the budget; the run's totals
//! ([`super::turns::totals`]) and its project's spending ([`super::projects::spent_since`]) add
//! these rows' figures to its turns'.

use super::StoreError;
use crate::db::Db;
use crate::ids::{ProjectId, RunId};
use crate::schema::{runs, sidecar_calls};
use diesel::dsl::sum;
use diesel::prelude::*;
use rummy_provider::time::Millis;
use rummy_provider::Usage;

/// One side task's call, to be stored.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SidecarCall<'a> {
    /// The run charged.
    pub run_id: RunId,
    /// The turn (its number in the run) that caused the call.
    pub turn: i32,
    /// The task's name.
    pub task: &'a str,
    /// The model alias asked.
    pub model: &'a str,
    /// `ok`, `failed`, `timeout` or `unparseable`.
    pub outcome: &'a str,
    /// Why it failed.
    pub error: Option<&'a str>,
    /// The provider's usage and cost.
    pub usage: Usage,
    /// How long it took, in ms.
    pub elapsed_ms: u64,
}

/// Stores a side task's call.
pub fn record(conn: &mut Db, call: &SidecarCall<'_>, now: Millis) -> Result<(), StoreError> {
    let u = &call.usage;
    diesel::insert_into(sidecar_calls::table)
        .values((
            sidecar_calls::run_id.eq(call.run_id),
            sidecar_calls::turn.eq(call.turn.max(0)),
            sidecar_calls::task.eq(call.task),
            sidecar_calls::model.eq(call.model),
            sidecar_calls::outcome.eq(call.outcome),
            sidecar_calls::error.eq(call.error),
            sidecar_calls::prompt_tokens.eq(u.prompt_tokens.max(0)),
            sidecar_calls::cached_tokens.eq(u.cached_tokens.max(0)),
            sidecar_calls::completion_tokens.eq(u.completion_tokens.max(0)),
            sidecar_calls::reasoning_tokens.eq(u.reasoning_tokens.max(0)),
            sidecar_calls::total_tokens.eq(u.total_tokens.max(0)),
            sidecar_calls::cost.eq(u.cost.max(0.0)),
            sidecar_calls::elapsed_ms.eq(i64::try_from(call.elapsed_ms).unwrap_or(i64::MAX)),
            sidecar_calls::created_at.eq(now.0),
        ))
        .execute(conn)?;
    Ok(())
}

/// A stored call, as a test or an audit reads it back.
#[derive(Debug, Clone, PartialEq, Queryable)]
pub struct StoredCall {
    /// The turn charged.
    pub turn: i32,
    /// The task's name.
    pub task: String,
    /// The model alias asked.
    pub model: String,
    /// How it ended.
    pub outcome: String,
    /// Why it failed.
    pub error: Option<String>,
    /// Total tokens.
    pub total_tokens: i32,
    /// Cost in USD.
    pub cost: f64,
}

/// The run's side-task calls, oldest first.
pub fn of_run(conn: &mut Db, run_id: RunId) -> Result<Vec<StoredCall>, StoreError> {
    Ok(sidecar_calls::table
        .filter(sidecar_calls::run_id.eq(run_id))
        .order(sidecar_calls::id)
        .select((
            sidecar_calls::turn,
            sidecar_calls::task,
            sidecar_calls::model,
            sidecar_calls::outcome,
            sidecar_calls::error,
            sidecar_calls::total_tokens,
            sidecar_calls::cost,
        ))
        .load(conn)?)
}

/// The run's side-task usage summed over all its calls.
pub fn totals(conn: &mut Db, run_id: RunId) -> Result<Usage, StoreError> {
    let sums: super::usage::UsageSums = sidecar_calls::table
        .filter(sidecar_calls::run_id.eq(run_id))
        .select((
            sum(sidecar_calls::prompt_tokens),
            sum(sidecar_calls::cached_tokens),
            sum(sidecar_calls::completion_tokens),
            sum(sidecar_calls::reasoning_tokens),
            sum(sidecar_calls::total_tokens),
            sum(sidecar_calls::cost),
        ))
        .first(conn)?;
    Ok(super::usage::usage_of(sums))
}

/// What the project's side tasks made at or after `since` cost, in US dollars.
pub fn spent_since(conn: &mut Db, project_id: ProjectId, since: Millis) -> Result<f64, StoreError> {
    let spent: Option<f64> = sidecar_calls::table
        .inner_join(runs::table)
        .filter(runs::project_id.eq(project_id))
        .filter(sidecar_calls::created_at.ge(since.0))
        .select(sum(sidecar_calls::cost))
        .first(conn)?;
    Ok(spent.unwrap_or(0.0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flags::RunFlags;
    use crate::run::Mode;
    use crate::testing::{memory, project, run, NOW};
    use crate::{loops, projects, turns};
    use pretty_assertions::assert_eq;

    fn usage(total: i32, cost: f64) -> Usage {
        Usage {
            prompt_tokens: total - 10,
            completion_tokens: 10,
            total_tokens: total,
            cost,
            ..Usage::default()
        }
    }

    fn call<'a>(run_id: RunId, turn: i32, outcome: &'a str, usage: Usage) -> SidecarCall<'a> {
        SidecarCall {
            run_id,
            turn,
            task: "summary",
            model: "side",
            outcome,
            error: (outcome != "ok").then_some("sidecar call timed out after 500 ms"),
            usage,
            elapsed_ms: 12,
        }
    }

    /// A side task's tokens and cost count in the run's totals beside its turns', and in its
    /// project's spending from the time they were made; a failed call that cost nothing is
    /// kept with its reason.
    #[test]
    fn side_tasks_count_in_the_runs_totals_and_the_projects_spending() {
        let mut conn = memory();
        let p = project(&mut conn, "p");
        let r = run(&mut conn, p.id, "r");
        let other = run(&mut conn, p.id, "other");
        let l = loops::enqueue(
            &mut conn,
            r.run_id,
            Mode::Ask,
            "m",
            "q",
            &RunFlags::default(),
            NOW,
        )
        .unwrap();
        let t = turns::begin(&mut conn, r.run_id, l.id, NOW).unwrap();
        turns::record_usage(&mut conn, t.id, 100, &usage(120, 0.01), None, NOW).unwrap();
        record(&mut conn, &call(r.run_id, 1, "ok", usage(50, 0.002)), NOW).unwrap();
        let later = Millis(NOW.0 + 1_000);
        record(
            &mut conn,
            &call(r.run_id, 1, "timeout", Usage::default()),
            later,
        )
        .unwrap();
        record(
            &mut conn,
            &call(other.run_id, 0, "ok", usage(30, 0.004)),
            later,
        )
        .unwrap();

        let totals = turns::totals(&mut conn, r.run_id).unwrap();
        assert_eq!(
            (
                totals.prompt_tokens,
                totals.completion_tokens,
                totals.total_tokens
            ),
            (150, 20, 170)
        );
        assert!((totals.cost - 0.012).abs() < 1e-12, "{}", totals.cost);
        let mut spent = |since: Millis| projects::spent_since(&mut conn, p.id, since).unwrap();
        assert!((spent(NOW) - 0.016).abs() < 1e-12);
        // The turn began at NOW, the first side task too: from `later` on only the other run's.
        assert!((spent(later) - 0.004).abs() < 1e-12);
        assert_eq!(
            of_run(&mut conn, r.run_id).unwrap(),
            vec![
                StoredCall {
                    turn: 1,
                    task: "summary".into(),
                    model: "side".into(),
                    outcome: "ok".into(),
                    error: None,
                    total_tokens: 50,
                    cost: 0.002
                },
                StoredCall {
                    turn: 1,
                    task: "summary".into(),
                    model: "side".into(),
                    outcome: "timeout".into(),
                    error: Some("sidecar call timed out after 500 ms".into()),
                    total_tokens: 0,
                    cost: 0.0
                },
            ]
        );
    }

    /// An outcome other than the four is refused by the table.
    #[test]
    fn outcomes_are_checked() {
        let mut conn = memory();
        let p = project(&mut conn, "p");
        let r = run(&mut conn, p.id, "r");
        assert!(record(
            &mut conn,
            &call(r.run_id, 1, "maybe", Usage::default()),
            NOW
        )
        .is_err());
    }
}
