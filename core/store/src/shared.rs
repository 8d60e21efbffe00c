//! Shared questions: an `unknown://` written with `shared` is the project's open question — every run of the project sees it in `<unknowns>` — and a `known://` that `answers` it closes it for all, with provenance.
//!
//! A shared question is one entry in the project's scope (a run's own questions are in the
//! run's), with `shared: true` and who asked it (`askedBy`). Runs see it through views, like a
//! project's files: the asking run at once, every other run of the project with a loop under
//! way or queued in the same write, and any other run when its next loop starts ([`attach`]).
//! Its write moves the project's context clock (it is a shared entry), so those runs read their
//! context again and find it. Answering it ([`close`]) records `closedBy` — the answering
//! entry, run, turn and user — and archives every run's view: it leaves every `<unknowns>`.
//! A run's own question can be answered the same way; it closes for that run alone.

use super::entries::{self, EntryWrite, RunRef, ViewRow, Written, VIEW_COLUMNS};
use super::memory::Provenance;
use super::{runs, StoreError};
use crate::db::Db;
use crate::entries::WriteCtx;
use crate::entry::{Scope, State, Visibility};
use crate::ids::{LoopId, ProjectId, RunId};
use crate::run::RunStatus;
use crate::schema::{entries as e, run_views, runs as runs_table};
use diesel::prelude::*;
use rummy_provider::time::Millis;
use rummy_text::path::scheme_of;
use serde_json::{json, Map, Value};

/// The attribute that makes an `unknown://` the project's.
pub const SHARED: &str = "shared";

/// The attribute of a `known://` naming the question it answers.
pub const ANSWERS: &str = "answers";

/// Whether attributes mark a shared question (`shared: true`).
pub fn is_shared(attributes: &Value) -> bool {
    attributes.get(SHARED) == Some(&Value::Bool(true))
}

/// [`is_shared`] of attributes stored as JSON text.
pub fn is_shared_text(attributes: &str) -> bool {
    serde_json::from_str::<Value>(attributes).is_ok_and(|a| is_shared(&a))
}

/// One question asked for the whole project.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ask<'a> {
    /// The run asking.
    pub run: RunRef,
    /// A normalised `unknown://` path.
    pub path: &'a str,
    /// The question.
    pub body: &'a str,
    /// Its keywords, if given.
    pub summary: Option<&'a str>,
    /// How the asking run sees it.
    pub visibility: Visibility,
    /// The loop it is asked in (none for a client's).
    pub loop_id: Option<LoopId>,
    /// Who asks: run, turn, user, writer.
    pub provenance: Provenance<'a>,
}

/// The project's shared question at `path`, if one was ever asked: (id, attributes).
fn project_question(
    conn: &mut Db,
    project_id: ProjectId,
    path: &str,
) -> Result<Option<(i32, Value)>, StoreError> {
    let found: Option<(i32, String)> = e::table
        .filter(e::scope.eq(Scope::Project(project_id).key()))
        .filter(e::path.eq(path))
        .select((e::id, e::attributes))
        .first(conn)
        .optional()?;
    Ok(found.map(|(id, text)| (id, serde_json::from_str(&text).unwrap_or(Value::Null))))
}

/// Asks (or asks again, or rewords) the project's question at `a.path`: the entry in the
/// project's scope, the asking run's view, and views for the project's runs with a loop under
/// way or queued. The run's own question at that path, if it had one, gives way to it
/// (archived). A question asked again after it was answered is open again.
pub fn ask(conn: &mut Db, a: &Ask<'_>, at: WriteCtx) -> Result<Written, StoreError> {
    if scheme_of(a.path).as_deref() != Some("unknown") {
        return Err(StoreError::Invalid(format!(
            "{} is not an unknown:// path: only questions are shared",
            a.path
        )));
    }
    let project_id = a.run.project_id;
    let asked_by = Value::Object(with_time(a.provenance, at.now));
    let mut attributes = match project_question(conn, project_id, a.path)? {
        Some((_, Value::Object(open))) if !open.contains_key("closedBy") => open,
        _ => {
            let mut fresh = Map::new();
            fresh.insert("askedBy".into(), asked_by);
            fresh
        }
    };
    attributes.insert(SHARED.into(), Value::Bool(true));
    if let Some(summary) = a.summary {
        attributes.insert("summary".into(), Value::from(summary));
    }
    let write = EntryWrite {
        run: a.run,
        path: a.path,
        body: a.body,
        attributes: &Value::Object(attributes),
        state: State::Resolved,
        outcome: None,
        visibility: a.visibility,
        loop_id: a.loop_id,
        turn: a.provenance.turn,
        writer: a.provenance.writer,
    };
    let written = entries::write_in(conn, &write, Scope::Project(project_id), at, None)?;
    let own: Option<i32> = run_views::table
        .inner_join(e::table)
        .filter(run_views::run_id.eq(a.run.run_id))
        .filter(e::scope.eq(Scope::Run(a.run.run_id).key()))
        .filter(e::path.eq(a.path))
        .filter(run_views::visibility.ne(Visibility::Archived.as_str()))
        .select(run_views::id)
        .first(conn)
        .optional()?;
    if let Some(view) = own {
        super::views::set_visibility_each(
            conn,
            a.run.run_id,
            &[view],
            Visibility::Archived,
            at.now,
        )?;
    }
    let busy: Vec<RunId> = runs_table::table
        .filter(runs_table::project_id.eq(project_id))
        .filter(runs_table::id.ne(a.run.run_id))
        .filter(
            runs_table::status
                .eq(RunStatus::Queued.code())
                .or(runs_table::status.eq(RunStatus::Running.code()))
                .or(runs_table::status.eq(RunStatus::Proposed.code())),
        )
        .select(runs_table::id)
        .load(conn)?;
    for run_id in busy {
        show_to(conn, run_id, written.entry_id, at.now)?;
    }
    Ok(written)
}

/// Provenance with the time it is recorded at.
fn with_time(p: Provenance<'_>, now: Millis) -> Map<String, Value> {
    let mut map = Map::new();
    map.insert("run".into(), Value::from(p.run));
    map.insert("turn".into(), Value::from(p.turn));
    map.insert("user".into(), p.user.map_or(Value::Null, Value::from));
    map.insert("writer".into(), Value::from(p.writer.as_str()));
    map.insert("at".into(), Value::from(now.to_rfc3339()));
    map
}

/// Gives run `run_id` a visible view of the entry (or makes its view visible again), at the
/// run's next revision.
fn show_to(conn: &mut Db, run_id: RunId, entry_id: i32, now: Millis) -> Result<(), StoreError> {
    let rev = runs::take_rev(conn, run_id)?;
    crate::on_backend!(conn, c => diesel::insert_into(run_views::table)
        .values((
            run_views::run_id.eq(run_id),
            run_views::entry_id.eq(entry_id),
            run_views::visibility.eq(Visibility::Visible.as_str()),
            run_views::rev.eq(rev),
            run_views::created_at.eq(now.0),
            run_views::updated_at.eq(now.0),
        ))
        .on_conflict((run_views::run_id, run_views::entry_id))
        .do_update()
        .set((
            run_views::visibility.eq(Visibility::Visible.as_str()),
            run_views::rev.eq(rev),
            run_views::updated_at.eq(now.0),
        ))
        .execute(c))?;
    Ok(())
}

/// Gives the run a view of every open shared question of its project it has none of (a loop's
/// start); answers how many. Nothing is written when there is none.
pub fn attach(conn: &mut Db, run: RunRef, now: Millis) -> Result<usize, StoreError> {
    let questions: Vec<(i32, String)> = e::table
        .filter(e::scope.eq(Scope::Project(run.project_id).key()))
        .filter(e::scheme.eq("unknown"))
        .select((e::id, e::attributes))
        .load(conn)?;
    let open: Vec<i32> = questions
        .into_iter()
        .filter_map(|(id, text)| {
            let attributes: Value = serde_json::from_str(&text).ok()?;
            (is_shared(&attributes) && attributes.get("closedBy").is_none()).then_some(id)
        })
        .collect();
    if open.is_empty() {
        return Ok(0);
    }
    let seen: Vec<i32> = run_views::table
        .filter(run_views::run_id.eq(run.run_id))
        .filter(run_views::entry_id.eq_any(&open))
        .select(run_views::entry_id)
        .load(conn)?;
    let new: Vec<i32> = open.into_iter().filter(|id| !seen.contains(id)).collect();
    if new.is_empty() {
        return Ok(0);
    }
    let rev = runs::take_rev(conn, run.run_id)?;
    for entry_id in &new {
        diesel::insert_into(run_views::table)
            .values((
                run_views::run_id.eq(run.run_id),
                run_views::entry_id.eq(entry_id),
                run_views::visibility.eq(Visibility::Visible.as_str()),
                run_views::rev.eq(rev),
                run_views::created_at.eq(now.0),
                run_views::updated_at.eq(now.0),
            ))
            .execute(conn)?;
    }
    Ok(new.len())
}

/// What answering a question closed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Closed {
    /// The project's shared question: closed for every run (`runs`: the views archived).
    ForAll {
        /// How many runs' views left `<unknowns>`.
        runs: usize,
    },
    /// The run's own question.
    Own,
    /// No open question at that path: nothing was closed.
    NotOpen,
}

/// Closes the question at `question` (a normalised `unknown://` path) as answered by the entry
/// `answer` of `run`, by `by`: the project's shared question for every run, else the run's own;
/// `closedBy` records the answer and its provenance.
pub fn close(
    conn: &mut Db,
    run: RunRef,
    question: &str,
    answer: &str,
    by: Provenance<'_>,
    now: Millis,
) -> Result<Closed, StoreError> {
    if scheme_of(question).as_deref() != Some("unknown") {
        return Ok(Closed::NotOpen);
    }
    let mut closed_by = with_time(by, now);
    closed_by.insert("path".into(), Value::from(answer));
    if let Some((id, Value::Object(mut attributes))) =
        project_question(conn, run.project_id, question)?
    {
        if attributes.contains_key("closedBy") {
            return Ok(Closed::NotOpen);
        }
        attributes.insert("closedBy".into(), Value::Object(closed_by));
        diesel::update(e::table.find(id))
            .set((
                e::attributes.eq(Value::Object(attributes).to_string()),
                e::updated_at.eq(now.0),
            ))
            .execute(conn)?;
        let views: Vec<(i32, RunId)> = run_views::table
            .filter(run_views::entry_id.eq(id))
            .filter(run_views::visibility.ne(Visibility::Archived))
            .select((run_views::id, run_views::run_id))
            .load(conn)?;
        for (view, run_id) in &views {
            super::views::set_visibility_each(conn, *run_id, &[*view], Visibility::Archived, now)?;
        }
        return Ok(Closed::ForAll { runs: views.len() });
    }
    let own: Option<ViewRow> = run_views::table
        .inner_join(e::table)
        .filter(run_views::run_id.eq(run.run_id))
        .filter(e::scope.eq(Scope::Run(run.run_id).key()))
        .filter(e::path.eq(question))
        .filter(run_views::visibility.ne(Visibility::Archived.as_str()))
        .select(VIEW_COLUMNS)
        .first(conn)
        .optional()?;
    let Some(own) = own else {
        return Ok(Closed::NotOpen);
    };
    let mut attributes = own.attribute_map();
    attributes.insert("closedBy".into(), Value::Object(closed_by));
    let entry_id: i32 = run_views::table
        .find(own.view_id)
        .select(run_views::entry_id)
        .first(conn)?;
    diesel::update(e::table.find(entry_id))
        .set((
            e::attributes.eq(json!(attributes).to_string()),
            e::updated_at.eq(now.0),
        ))
        .execute(conn)?;
    super::views::set_visibility_each(conn, run.run_id, &[own.view_id], Visibility::Archived, now)?;
    Ok(Closed::Own)
}

#[cfg(test)]
mod tests;
