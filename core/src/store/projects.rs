//! Projects: created by the first `rummy/hello` naming them; a project never moves silently.

use super::StoreError;
use crate::schema::projects;
use crate::time::Millis;
use diesel::prelude::*;

/// A stored project.
#[derive(Debug, Clone, PartialEq, Eq, Queryable, Selectable)]
#[diesel(table_name = projects, check_for_backend(diesel::sqlite::Sqlite))]
pub struct Project {
    /// Primary key.
    pub id: i32,
    /// The name clients identify it by.
    pub name: String,
    /// Absolute path of the project on the server's disk.
    pub project_root: String,
    /// Optional client configuration path.
    pub config_path: Option<String>,
    /// Creation time.
    pub created_at: i64,
}

/// Finds the project by name or creates it; a different root for an existing name is a
/// conflict, whose message does not say the project's root (a caller may not be allowed to
/// know where another team's project lives).
pub fn hello(
    conn: &mut SqliteConnection,
    name: &str,
    root: &str,
    config_path: Option<&str>,
    now: Millis,
) -> Result<Project, StoreError> {
    if let Some(project) = by_name(conn, name)? {
        if project.project_root != root {
            return Err(StoreError::Conflict(format!(
                "project \"{name}\" already exists with another root; a project does not move (pick another name)"
            )));
        }
        return Ok(project);
    }
    Ok(diesel::insert_into(projects::table)
        .values((
            projects::name.eq(name),
            projects::project_root.eq(root),
            projects::config_path.eq(config_path),
            projects::created_at.eq(now.0),
        ))
        .returning(Project::as_returning())
        .get_result(conn)?)
}

/// The project with that id.
pub fn by_id(conn: &mut SqliteConnection, project_id: i32) -> Result<Project, StoreError> {
    projects::table
        .find(project_id)
        .select(Project::as_select())
        .first(conn)
        .optional()?
        .ok_or_else(|| StoreError::NotFound(format!("project {project_id} not found")))
}

/// The project with that name, if any.
pub fn by_name(conn: &mut SqliteConnection, name: &str) -> Result<Option<Project>, StoreError> {
    Ok(projects::table
        .filter(projects::name.eq(name))
        .select(Project::as_select())
        .first(conn)
        .optional()?)
}

/// A page of the projects, by name.
pub fn list(
    conn: &mut SqliteConnection,
    limit: i64,
    offset: i64,
) -> Result<Vec<Project>, StoreError> {
    Ok(projects::table
        .order(projects::name.asc())
        .limit(limit)
        .offset(offset)
        .select(Project::as_select())
        .load(conn)?)
}
