//! Projects: created by the first `rummy/hello` naming them; a project never moves silently.

use super::StoreError;
use crate::db::Db;
use crate::ids::ProjectId;
use crate::period::CostPeriod;
use crate::schema::{projects, runs, turns};
use diesel::dsl::sum;
use diesel::prelude::*;
use rummy_provider::time::Millis;

/// A stored project.
#[derive(Debug, Clone, PartialEq, Queryable, Selectable)]
#[diesel(table_name = projects, check_for_backend(diesel::sqlite::Sqlite, diesel::pg::Pg))]
pub struct Project {
    /// Primary key.
    pub id: ProjectId,
    /// The name clients identify it by.
    pub name: String,
    /// Absolute path of the project on the server's disk.
    pub project_root: String,
    /// Optional client configuration path.
    pub config_path: Option<String>,
    /// Creation time.
    pub created_at: i64,
    /// The most its turns may cost (USD) per period before new loops queue; `None`: no ceiling.
    pub cost_ceiling: Option<f64>,
    /// `month` or `day` (UTC): the period the ceiling counts over.
    pub cost_period: String,
    /// Whether its accepted commands reach the network, as an admin set it; `None`: the
    /// server's `RUMMY_COMMAND_NETWORK` applies.
    pub command_network: Option<bool>,
    /// The domains its model fetches from without asking, as a JSON array, as an admin set
    /// them; `None`: its model's web fetch is off (see [`Project::web_domains`]).
    pub web_domains: Option<String>,
}

/// A project's cost ceiling: at or over `usd` spent in the current period, new loops queue.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Ceiling {
    /// The ceiling in US dollars.
    pub usd: f64,
    /// The period spending is summed over.
    pub period: CostPeriod,
}

impl Project {
    /// The domains its model fetches from without asking; `None`: its web fetch is off.
    pub fn web_domains(&self) -> Option<Vec<String>> {
        self.web_domains.as_deref().map(read_domains)
    }

    /// The period its spending is summed over (a month when the stored name is unreadable).
    pub fn period(&self) -> CostPeriod {
        CostPeriod::parse(&self.cost_period).unwrap_or_default()
    }

    /// Its cost ceiling, if an admin set one.
    pub fn ceiling(&self) -> Option<Ceiling> {
        self.cost_ceiling.map(|usd| Ceiling {
            usd,
            period: self.period(),
        })
    }
}

/// Finds the project by name or creates it; a different root for an existing name is a
/// conflict, whose message does not say the project's root (a caller may not be allowed to
/// know where another team's project lives).
pub fn hello(
    conn: &mut Db,
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
    Ok(
        crate::on_backend!(conn, c => diesel::insert_into(projects::table)
        .values((
            projects::name.eq(name),
            projects::project_root.eq(root),
            projects::config_path.eq(config_path),
            projects::created_at.eq(now.0),
        ))
        .returning(Project::as_returning())
        .get_result(c))?,
    )
}

/// The project with that id.
pub fn by_id(conn: &mut Db, project_id: ProjectId) -> Result<Project, StoreError> {
    projects::table
        .find(project_id)
        .select(Project::as_select())
        .first(conn)
        .optional()?
        .ok_or_else(|| StoreError::NotFound(format!("project {project_id} not found")))
}

/// The project with that name, if any.
pub fn by_name(conn: &mut Db, name: &str) -> Result<Option<Project>, StoreError> {
    Ok(projects::table
        .filter(projects::name.eq(name))
        .select(Project::as_select())
        .first(conn)
        .optional()?)
}

/// A page of the projects, by name.
pub fn list(conn: &mut Db, limit: i64, offset: i64) -> Result<Vec<Project>, StoreError> {
    Ok(projects::table
        .order(projects::name.asc())
        .limit(limit)
        .offset(offset)
        .select(Project::as_select())
        .load(conn)?)
}

/// Every project's name and root, for telling whether a path nests with a project's root.
pub fn roots(conn: &mut Db) -> Result<Vec<(String, String)>, StoreError> {
    Ok(projects::table
        .select((projects::name, projects::project_root))
        .load(conn)?)
}

/// The roots of every project but the one named `name`.
pub fn roots_but(conn: &mut Db, name: &str) -> Result<Vec<String>, StoreError> {
    Ok(roots(conn)?
        .into_iter()
        .filter(|(other, _)| other != name)
        .map(|(_, root)| root)
        .collect())
}

/// Sets the cost ceiling of the project `name`: `ceiling` `Some(None)` removes it, `None` keeps
/// it; `period` `None` keeps the current one. Answers the project as it now stands.
pub fn set_ceiling(
    conn: &mut Db,
    name: &str,
    ceiling: Option<Option<f64>>,
    period: Option<CostPeriod>,
) -> Result<Project, StoreError> {
    if let Some(Some(usd)) = ceiling {
        if !usd.is_finite() || usd < 0.0 {
            return Err(StoreError::Invalid(
                "costCeiling: expected a number of US dollars, 0 or more".into(),
            ));
        }
    }
    let project = by_name(conn, name)?
        .ok_or_else(|| StoreError::NotFound(format!("project \"{name}\" not found")))?;
    let ceiling = ceiling.unwrap_or(project.cost_ceiling);
    let period = period.unwrap_or(project.period());
    Ok(
        crate::on_backend!(conn, c => diesel::update(projects::table.find(project.id))
        .set((
            projects::cost_ceiling.eq(ceiling),
            projects::cost_period.eq(period.as_str()),
        ))
        .returning(Project::as_returning())
        .get_result(c))?,
    )
}

/// Sets or removes (`None`) the command network override of the project `name`. Answers the
/// project as it now stands.
pub fn set_command_network(
    conn: &mut Db,
    name: &str,
    network: Option<bool>,
) -> Result<Project, StoreError> {
    let project = by_name(conn, name)?
        .ok_or_else(|| StoreError::NotFound(format!("project \"{name}\" not found")))?;
    Ok(
        crate::on_backend!(conn, c => diesel::update(projects::table.find(project.id))
        .set(projects::command_network.eq(network))
        .returning(Project::as_returning())
        .get_result(c))?,
    )
}

/// The project's command network override (`None`: the server's setting applies): one column
/// of one row, read before each accepted command and as each loop starts.
pub fn command_network(conn: &mut Db, project_id: ProjectId) -> Result<Option<bool>, StoreError> {
    projects::table
        .find(project_id)
        .select(projects::command_network)
        .first(conn)
        .optional()?
        .ok_or_else(|| StoreError::NotFound(format!("project {project_id} not found")))
}

/// Sets or removes (`None`: the model's web fetch is off) the domains the project `name`'s
/// model fetches from without asking. Answers the project as it now stands.
pub fn set_web_domains(
    conn: &mut Db,
    name: &str,
    domains: Option<&[String]>,
) -> Result<Project, StoreError> {
    let project = by_name(conn, name)?
        .ok_or_else(|| StoreError::NotFound(format!("project \"{name}\" not found")))?;
    let stored = domains.map(|d| serde_json::Value::from(d.to_vec()).to_string());
    Ok(
        crate::on_backend!(conn, c => diesel::update(projects::table.find(project.id))
        .set(projects::web_domains.eq(stored))
        .returning(Project::as_returning())
        .get_result(c))?,
    )
}

/// The domains the project's model fetches from without asking, `None` when its web fetch is
/// off: one column of one row, read as each turn starts.
pub fn web_domains(
    conn: &mut Db,
    project_id: ProjectId,
) -> Result<Option<Vec<String>>, StoreError> {
    let stored: Option<String> = projects::table
        .find(project_id)
        .select(projects::web_domains)
        .first(conn)
        .optional()?
        .ok_or_else(|| StoreError::NotFound(format!("project {project_id} not found")))?;
    Ok(stored.as_deref().map(read_domains))
}

/// A stored domain list; one that cannot be read allows no domain (every fetch asks).
fn read_domains(stored: &str) -> Vec<String> {
    serde_json::from_str(stored).unwrap_or_default()
}

/// Every project with a cost ceiling, with it.
pub fn ceilings(conn: &mut Db) -> Result<Vec<(ProjectId, Ceiling)>, StoreError> {
    let list: Vec<Project> = projects::table
        .filter(projects::cost_ceiling.is_not_null())
        .select(Project::as_select())
        .load(conn)?;
    Ok(list
        .into_iter()
        .filter_map(|p| p.ceiling().map(|c| (p.id, c)))
        .collect())
}

/// What the project's turns begun at or after `since` cost, in US dollars (the provider's
/// figures; a turn counts in the period it began in), with the side tasks made since (the
/// sidecar's calls count toward the ceiling like turns).
pub fn spent_since(conn: &mut Db, project_id: ProjectId, since: Millis) -> Result<f64, StoreError> {
    let spent: Option<f64> = turns::table
        .inner_join(runs::table)
        .filter(runs::project_id.eq(project_id))
        .filter(turns::created_at.ge(since.0))
        .select(sum(turns::cost))
        .first(conn)?;
    let side = super::sidecar_calls::spent_since(conn, project_id, since)?;
    Ok(spent.unwrap_or(0.0) + side)
}
