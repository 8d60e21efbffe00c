//! Skills (`skill://<name>`, global entries a run adds to its view) and personas, read from `$RUMMY_HOME`.
//!
//! A skill entry's attributes hold its name and its frontmatter ([`crate::skill`]); a skill is
//! active for a run while the run's view of it is not archived. [`memory_scope`] is what the
//! memory features ask before they run.

use super::StoreError;
use crate::constraints::{self, ConstraintKind};
use crate::db::Db;
use crate::entries::{self as store_entries, EntryWrite, RunRef, WriteCtx};
use crate::entry::{Scope, State, Visibility, Writer};
use crate::files;
use crate::ids::RunId;
use crate::schema::{entries, run_views};
use crate::skill::{self, MemoryScope, Skill};
use diesel::prelude::*;
use rummy_provider::time::Millis;
use serde_json::Value;
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

/// Adds a skill to the run's view (the entry itself is global): its body, its frontmatter as
/// the entry's attributes, and its `paths` — the project files they match, made visible (a
/// file an `ignore` constraint keeps out stays out). Answers the skill's path and the files.
pub fn add(
    conn: &mut Db,
    run: RunRef,
    name: &str,
    skill: &Skill,
    at: WriteCtx,
) -> Result<(String, Vec<String>), StoreError> {
    let path = format!("skill://{name}");
    let attributes = skill.meta.to_attributes(name);
    store_entries::write(
        conn,
        &EntryWrite {
            run,
            path: &path,
            body: &skill.body,
            attributes: &attributes,
            state: State::Resolved,
            outcome: None,
            visibility: Visibility::Visible,
            loop_id: None,
            turn: 0,
            writer: Writer::Plugin,
        },
        at,
    )?;
    let files = activate_paths(conn, run, &skill.meta.paths, at.now)?;
    Ok((path, files))
}

/// Makes the project files matching any of `patterns` visible in the run's view, in path
/// order; files an `ignore` constraint keeps out are left out.
fn activate_paths(
    conn: &mut Db,
    run: RunRef,
    patterns: &[String],
    now: Millis,
) -> Result<Vec<String>, StoreError> {
    if patterns.is_empty() {
        return Ok(Vec::new());
    }
    let kept_out = constraints::list(conn, run.project_id)?;
    let ignored = |path: &str| {
        kept_out
            .iter()
            .rev()
            .find(|c| rummy_text::hedberg::hedmatch(&c.pattern, path))
            .is_some_and(|c| c.kind == ConstraintKind::Ignore)
    };
    let project_files: Vec<(i32, String)> = entries::table
        .filter(entries::scope.eq(Scope::Project(run.project_id).key()))
        .filter(entries::scheme.is_null())
        .order(entries::path.asc())
        .select((entries::id, entries::path))
        .load(conn)?;
    let mut activated = Vec::new();
    for (id, path) in project_files {
        let wanted = patterns
            .iter()
            .any(|p| p == &path || rummy_text::hedberg::hedmatch(p, &path));
        if wanted && !ignored(&path) {
            files::ensure_view(conn, run, id, Visibility::Visible, now)?;
            activated.push(path);
        }
    }
    Ok(activated)
}

/// Removes a skill from the run's view; a skill the run does not have is `NotFound`.
pub fn remove(conn: &mut Db, run_id: RunId, name: &str) -> Result<(), StoreError> {
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

/// A skill in a run's view.
#[derive(Debug, Clone, PartialEq)]
pub struct RunSkill {
    /// Its name.
    pub name: String,
    /// The view's state.
    pub state: State,
    /// Whether it is active (its view not archived).
    pub active: bool,
    /// Its entry's attributes: its name and frontmatter.
    pub attributes: Value,
}

/// The skills in the run's view, by name, with their view state and frontmatter.
pub fn of_run(conn: &mut Db, run_id: RunId) -> Result<Vec<RunSkill>, StoreError> {
    let rows: Vec<(String, State, Visibility, String)> = run_views::table
        .inner_join(entries::table)
        .filter(run_views::run_id.eq(run_id))
        .filter(entries::scheme.eq("skill"))
        .order(entries::path.asc())
        .select((
            entries::path,
            run_views::state,
            run_views::visibility,
            entries::attributes,
        ))
        .load(conn)?;
    Ok(rows
        .into_iter()
        .map(|(path, state, visibility, attributes)| RunSkill {
            name: path.trim_start_matches("skill://").to_owned(),
            state,
            active: visibility != Visibility::Archived,
            attributes: serde_json::from_str(&attributes).unwrap_or(Value::Null),
        })
        .collect())
}

/// The attributes (name and frontmatter) of the run's active skills, by name.
pub fn active(conn: &mut Db, run_id: RunId) -> Result<Vec<Value>, StoreError> {
    Ok(of_run(conn, run_id)?
        .into_iter()
        .filter(|s| s.active)
        .map(|s| s.attributes)
        .collect())
}

/// How much memory the run's active skills leave its model: the narrowest `memoryScope` any
/// of them sets, [`MemoryScope::Session`] (everything) when none does. Recall runs only when
/// [`MemoryScope::allows_recall`], session state only when
/// [`MemoryScope::allows_session_state`].
pub fn memory_scope(conn: &mut Db, run_id: RunId) -> Result<MemoryScope, StoreError> {
    Ok(skill::memory_scope(&active(conn, run_id)?))
}

/// Sets or clears the run's persona text.
pub fn set_persona(
    conn: &mut Db,
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::files::{sync, FileContent, ScanContent};
    use crate::testing::{memory, project, run, NOW};
    use pretty_assertions::assert_eq;

    /// A project `p` holding `src/a.rs`, `src/b.rs`, `notes.md` and `secret.env`, and run `r`.
    fn setup(conn: &mut Db) -> RunRef {
        let p = project(conn, "p");
        let paths = ["src/a.rs", "src/b.rs", "notes.md", "secret.env"];
        let files: Vec<FileContent> = paths
            .iter()
            .map(|path| FileContent {
                path,
                body: path,
                hash: path,
            })
            .collect();
        let scan = ScanContent {
            files: &files,
            unchanged: &[],
            complete: true,
        };
        sync(
            conn,
            p.id,
            scan,
            Writer::System,
            WriteCtx {
                divisor: 2,
                now: NOW,
            },
        )
        .unwrap();
        run(conn, p.id, "r")
    }

    fn skill(text: &str) -> Skill {
        crate::skill::parse("review", text, &rummy_text::parse::ToolName::ALL).unwrap()
    }

    /// The visible files of the run, by path.
    fn visible(conn: &mut Db, run_id: RunId) -> Vec<String> {
        run_views::table
            .inner_join(entries::table)
            .filter(run_views::run_id.eq(run_id))
            .filter(entries::scheme.is_null())
            .filter(run_views::visibility.eq("visible"))
            .order(entries::path.asc())
            .select(entries::path)
            .load(conn)
            .unwrap()
    }

    /// Adding a skill stores its body and frontmatter, and makes the project files its `paths`
    /// match visible — all but those an `ignore` constraint keeps out.
    #[test]
    fn adding_a_skill_stores_its_frontmatter_and_activates_its_paths() {
        let mut conn = memory();
        let r = setup(&mut conn);
        constraints::set(
            &mut conn,
            r.project_id,
            "*.env",
            ConstraintKind::Ignore,
            NOW,
        )
        .unwrap();
        let text = "---\ndescription: Reviews\npaths: [src/*.rs, secret.env]\nmemoryScope: relevant\n---\nRead it.\n";

        let (path, files) = add(
            &mut conn,
            r,
            "review",
            &skill(text),
            WriteCtx {
                divisor: 2,
                now: NOW,
            },
        )
        .unwrap();

        assert_eq!(
            (path.as_str(), files),
            (
                "skill://review",
                vec!["src/a.rs".to_owned(), "src/b.rs".to_owned()]
            )
        );
        assert_eq!(visible(&mut conn, r.run_id), vec!["src/a.rs", "src/b.rs"]);
        assert_eq!(
            of_run(&mut conn, r.run_id).unwrap(),
            vec![RunSkill {
                name: "review".into(),
                state: State::Resolved,
                active: true,
                attributes: serde_json::json!({"name": "review", "description": "Reviews", "paths": ["src/*.rs", "secret.env"], "memoryScope": "relevant"}),
            }]
        );
        let body: String = entries::table
            .filter(entries::path.eq("skill://review"))
            .select(entries::body)
            .first(&mut conn)
            .unwrap();
        assert_eq!(body, "Read it.\n");
    }

    /// The run's memory scope is the narrowest its active skills set: everything without
    /// skills, none while a `memoryScope: none` skill is active, everything again once it is
    /// archived or removed.
    #[test]
    fn the_memory_scope_follows_the_active_skills() {
        let mut conn = memory();
        let r = setup(&mut conn);
        let scope = |conn: &mut Db| memory_scope(conn, r.run_id).unwrap();
        let before = scope(&mut conn);
        add(
            &mut conn,
            r,
            "quiet",
            &skill("---\nmemoryScope: none\n---\n"),
            WriteCtx {
                divisor: 2,
                now: NOW,
            },
        )
        .unwrap();
        let with_quiet = scope(&mut conn);
        diesel::update(run_views::table.filter(run_views::run_id.eq(r.run_id)))
            .set(run_views::visibility.eq("archived"))
            .execute(&mut conn)
            .unwrap();
        let archived = scope(&mut conn);
        let inactive = active(&mut conn, r.run_id).unwrap();
        remove(&mut conn, r.run_id, "quiet").unwrap();
        assert_eq!(
            (before, with_quiet, archived, inactive, scope(&mut conn)),
            (
                MemoryScope::Session,
                MemoryScope::None,
                MemoryScope::Session,
                Vec::<Value>::new(),
                MemoryScope::Session
            )
        );
    }
}
