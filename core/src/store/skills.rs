//! Skills (`skill://<name>`, global entries a run adds to its view) and personas, read from `$RUMMY_HOME`.

use super::StoreError;
use crate::entry::{Scope, State, Visibility, Writer};
use crate::ids::RunId;
use crate::schema::{entries, run_views};
use crate::store::entries::{self as store_entries, EntryWrite, RunRef, WriteCtx};
use crate::time::Millis;
use diesel::prelude::*;
use serde_json::json;
use std::path::{Path, PathBuf};

/// Whether a skill or persona name is safe to use as a file name: `[A-Za-z0-9_-]`, 1–64 characters.
pub fn valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// `<dir>/<name>.md`, for a valid name.
pub fn file_of(dir: &Path, name: &str) -> Result<PathBuf, StoreError> {
    if !valid_name(name) {
        return Err(StoreError::Invalid(format!(
            "name \"{name}\" must be 1-64 characters of [A-Za-z0-9_-]"
        )));
    }
    Ok(dir.join(format!("{name}.md")))
}

/// The `*.md` files of a directory as (name, path), sorted; a missing directory lists nothing.
pub fn list_dir(dir: &Path) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let path = e.path();
            let name = path.file_stem()?.to_str()?.to_owned();
            (path.extension()? == "md" && valid_name(&name))
                .then(|| (name, path.display().to_string()))
        })
        .collect();
    out.sort();
    out
}

/// Adds a skill's text to the run's view (the entry itself is global).
pub fn add(
    conn: &mut SqliteConnection,
    run: RunRef,
    name: &str,
    body: &str,
    at: WriteCtx,
) -> Result<String, StoreError> {
    let path = format!("skill://{name}");
    store_entries::write(
        conn,
        &EntryWrite {
            run,
            path: &path,
            body,
            attributes: &json!({ "name": name }),
            state: State::Resolved,
            outcome: None,
            visibility: Visibility::Visible,
            loop_id: None,
            turn: 0,
            writer: Writer::Plugin,
        },
        at,
    )?;
    Ok(path)
}

/// Removes a skill from the run's view; a skill the run does not have is `NotFound`.
pub fn remove(conn: &mut SqliteConnection, run_id: RunId, name: &str) -> Result<(), StoreError> {
    let path = format!("skill://{name}");
    let entry: Option<i32> = entries::table
        .filter(entries::scope.eq(Scope::Global.key()))
        .filter(entries::path.eq(&path))
        .select(entries::id)
        .first(conn)
        .optional()?;
    let removed = match entry {
        Some(id) => diesel::delete(
            run_views::table
                .filter(run_views::run_id.eq(run_id))
                .filter(run_views::entry_id.eq(id)),
        )
        .execute(conn)?,
        None => 0,
    };
    if removed == 0 {
        return Err(StoreError::NotFound(format!(
            "skill \"{name}\" is not in this run"
        )));
    }
    Ok(())
}

/// The skills in the run's view, with their view state.
pub fn of_run(
    conn: &mut SqliteConnection,
    run_id: RunId,
) -> Result<Vec<(String, State)>, StoreError> {
    let rows: Vec<(String, State)> = run_views::table
        .inner_join(entries::table)
        .filter(run_views::run_id.eq(run_id))
        .filter(entries::scheme.eq("skill"))
        .order(entries::path.asc())
        .select((entries::path, run_views::state))
        .load(conn)?;
    Ok(rows
        .into_iter()
        .map(|(path, state)| (path.trim_start_matches("skill://").to_owned(), state))
        .collect())
}

/// Sets or clears the run's persona text.
pub fn set_persona(
    conn: &mut SqliteConnection,
    run_id: RunId,
    persona: Option<&str>,
    now: Millis,
) -> Result<(), StoreError> {
    use crate::schema::runs;
    diesel::update(runs::table.find(run_id))
        .set((runs::persona.eq(persona), runs::updated_at.eq(now.0)))
        .execute(conn)?;
    Ok(())
}
