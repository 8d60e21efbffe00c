//! Questions of the whole project: a `set` on an `unknown://` with `shared` asks it for every run of the project, and a `set` with `answers="unknown://…"` closes the question it answers — for all when it is shared.
//!
//! The store does the work (`store::shared`); this is the model's side: its run, turn and user
//! as provenance, and what the result says.

use crate::tools::handler::Handler;
use rummy_store::entry::{Visibility, Writer};
use rummy_store::memory::Provenance;
use rummy_store::shared::{self, Ask, Closed};
use rummy_store::{runs, StoreError};

/// Asks the project's question at `path` as the model of this run.
pub fn ask(
    h: &mut Handler<'_>,
    path: &str,
    body: &str,
    summary: Option<&str>,
    visibility: Visibility,
) -> Result<(), StoreError> {
    let t = h.ctx.t;
    let run = runs::by_id(h.conn, t.run.run_id)?;
    let a = Ask {
        run: t.run,
        path,
        body,
        summary,
        visibility,
        loop_id: Some(t.loop_id),
        provenance: Provenance {
            run: &run.alias,
            turn: t.turn,
            user: run.user.as_deref(),
            writer: Writer::Model,
        },
    };
    shared::ask(h.conn, &a, h.at()).map(|_| ())
}

/// Closes the question `question` as answered by `answer` (this run's entry, just written):
/// `Some("all")` when it was the project's, `Some("run")` when it was the run's own, `None`
/// when no open question is at that path.
pub fn answer(
    h: &mut Handler<'_>,
    question: &str,
    answer: &str,
) -> Result<Option<&'static str>, StoreError> {
    let t = h.ctx.t;
    let run = runs::by_id(h.conn, t.run.run_id)?;
    let by = Provenance {
        run: &run.alias,
        turn: t.turn,
        user: run.user.as_deref(),
        writer: Writer::Model,
    };
    Ok(
        match shared::close(h.conn, t.run, question, answer, by, h.now)? {
            Closed::ForAll { .. } => Some("all"),
            Closed::Own => Some("run"),
            Closed::NotOpen => None,
        },
    )
}

/// The warning of an `answers=` that names no open question (the entry is written all the same).
pub fn not_open(question: &str) -> String {
    format!("{question} is no open question: nothing was closed")
}
