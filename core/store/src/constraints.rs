//! File constraints: project configuration that makes files start visible (`active`), refuses edits (`readonly`) or keeps them out (`ignore`).

use super::{projects, StoreError};
use crate::db::Db;
use crate::ids::ProjectId;
use crate::schema::file_constraints;
use diesel::prelude::*;
use diesel::upsert::excluded;
use rummy_provider::time::Millis;
use rummy_text::path::normalize;
use std::path::Path;

/// What a constraint does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConstraintKind {
    /// The file starts visible.
    Active,
    /// Visible, and edits are refused when accepted.
    Readonly,
    /// Kept out of every run.
    Ignore,
}

impl ConstraintKind {
    /// The wire and database name.
    pub fn as_str(self) -> &'static str {
        match self {
            ConstraintKind::Active => "active",
            ConstraintKind::Readonly => "readonly",
            ConstraintKind::Ignore => "ignore",
        }
    }

    /// Parses `active`, `readonly` or `ignore`.
    pub fn parse(text: &str) -> Option<ConstraintKind> {
        match text {
            "active" => Some(ConstraintKind::Active),
            "readonly" => Some(ConstraintKind::Readonly),
            "ignore" => Some(ConstraintKind::Ignore),
            _ => None,
        }
    }
}

/// A stored constraint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Constraint {
    /// Path or glob, relative to the project root.
    pub pattern: String,
    /// What it does.
    pub kind: ConstraintKind,
}

/// Makes a constraint pattern relative to the project root: absolute paths
/// under the root lose the root; anything that escapes it is refused.
pub fn relative_pattern(root: &str, pattern: &str) -> Result<String, StoreError> {
    let pattern = pattern.trim();
    let rel = if Path::new(pattern).is_absolute() {
        let stripped = Path::new(pattern).strip_prefix(root).map_err(|_| {
            StoreError::Invalid(format!("{pattern} is outside the project root {root}"))
        })?;
        stripped.to_string_lossy().into_owned()
    } else {
        pattern.to_owned()
    };
    normalize(&rel).map_err(|e| StoreError::Invalid(e.to_string()))
}

/// Sets (or replaces) the constraint for a pattern; answers the stored pattern.
pub fn set(
    conn: &mut Db,
    project_id: ProjectId,
    pattern: &str,
    kind: ConstraintKind,
    now: Millis,
) -> Result<String, StoreError> {
    let root = projects::by_id(conn, project_id)?.project_root;
    let pattern = relative_pattern(&root, pattern)?;
    crate::on_backend!(conn, c => diesel::insert_into(file_constraints::table)
        .values((
            file_constraints::project_id.eq(project_id),
            file_constraints::pattern.eq(&pattern),
            file_constraints::visibility.eq(kind.as_str()),
            file_constraints::created_at.eq(now.0),
        ))
        .on_conflict((file_constraints::project_id, file_constraints::pattern))
        .do_update()
        .set(file_constraints::visibility.eq(excluded(file_constraints::visibility)))
        .execute(c))?;
    Ok(pattern)
}

/// Removes the constraint for a pattern; an unknown pattern is `NotFound`.
pub fn drop(conn: &mut Db, project_id: ProjectId, pattern: &str) -> Result<String, StoreError> {
    let root = projects::by_id(conn, project_id)?.project_root;
    let pattern = relative_pattern(&root, pattern)?;
    let n = diesel::delete(
        file_constraints::table
            .filter(file_constraints::project_id.eq(project_id))
            .filter(file_constraints::pattern.eq(&pattern)),
    )
    .execute(conn)?;
    if n == 0 {
        return Err(StoreError::NotFound(format!("no constraint for {pattern}")));
    }
    Ok(pattern)
}

/// The project's constraints in the order they were made (later ones win).
pub fn list(conn: &mut Db, project_id: ProjectId) -> Result<Vec<Constraint>, StoreError> {
    let rows: Vec<(String, String)> = file_constraints::table
        .filter(file_constraints::project_id.eq(project_id))
        .order(file_constraints::id.asc())
        .select((file_constraints::pattern, file_constraints::visibility))
        .load(conn)?;
    Ok(rows
        .into_iter()
        .filter_map(|(pattern, kind)| {
            ConstraintKind::parse(&kind).map(|kind| Constraint { pattern, kind })
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Absolute patterns under the root become relative; escapes are refused.
    #[test]
    fn patterns_stay_inside_the_root() {
        assert_eq!(
            relative_pattern("/srv/p", "/srv/p/src/*.rs")
                .ok()
                .as_deref(),
            Some("src/*.rs")
        );
        assert_eq!(
            relative_pattern("/srv/p", "docs/**").ok().as_deref(),
            Some("docs/**")
        );
        assert!(relative_pattern("/srv/p", "/etc/passwd").is_err());
        assert!(relative_pattern("/srv/p", "../x").is_err());
        assert!(relative_pattern("/srv/p", "/srv/p/../q/x").is_err());
    }
}
