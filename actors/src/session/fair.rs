//! `project/set` (admin): a project's cost ceiling (TEAM.md §4), and how a project shows its
//! ceiling, period and spending in `getProjects`.

use super::auth::{caller, require_admin};
use super::routes::{Call, Outcome};
use crate::clock::now;
use crate::errors::from_store;
use diesel::SqliteConnection;
use rummy_core::fair::period::CostPeriod;
use rummy_core::store::projects::{self, Project};
use rummy_core::store::StoreError;
use rummy_core::time::Millis;
use rummy_core::wire::jsonrpc::params;
use rummy_core::wire::params::ProjectSetParams;
use rummy_core::wire::RpcError;
use serde_json::{json, Value};

/// A project as `getProjects` lists it: with its cost ceiling (`null`: none), the period, when
/// the current period began and what its turns begun since then cost (USD).
pub fn project_json(
    c: &mut SqliteConnection,
    project: &Project,
    at: Millis,
) -> Result<Value, StoreError> {
    let period = project.period();
    let start = period.start(at);
    let spent = projects::spent_since(c, project.id, start)?;
    Ok(json!({
        "name": project.name,
        "projectId": project.id,
        "projectRoot": project.project_root,
        "createdAt": Millis(project.created_at).to_rfc3339(),
        "costCeiling": project.cost_ceiling,
        "period": period.as_str(),
        "periodStart": start.to_rfc3339(),
        "spent": spent,
    }))
}

/// `project/set {name, costCeiling, period}`: sets (a number), removes (`null`) or keeps
/// (absent) the ceiling, and the period; admission looks at the project's waiting runs again
/// at once. Answers the project as `getProjects` lists it.
pub async fn project_set(call: Call) -> Result<Outcome, RpcError> {
    let p: ProjectSetParams = params(&call.params)?;
    require_admin(&caller(&call, None).await?, "project/set")?;
    let period = p
        .period
        .as_deref()
        .map(|name| {
            CostPeriod::parse(name)
                .ok_or_else(|| RpcError::invalid_param("period", "expected \"month\" or \"day\""))
        })
        .transpose()?;
    if let Some(Some(usd)) = p.cost_ceiling {
        if !usd.is_finite() || usd < 0.0 {
            return Err(RpcError::invalid_param(
                "costCeiling",
                "expected a number of US dollars, 0 or more (null removes the ceiling)",
            ));
        }
    }
    let store = &call.deps.svc.store;
    let (name, ceiling) = (p.name, p.cost_ceiling);
    let project = store
        .write(move |c| projects::set_ceiling(c, &name, ceiling, period))
        .await
        .map_err(from_store)?;
    tracing::info!(
        project = %project.name,
        ceiling = ?project.cost_ceiling,
        period = %project.cost_period,
        "cost ceiling set"
    );
    call.deps
        .svc
        .admission
        .set_ceiling(project.id, project.ceiling());
    // Summing the spending is a read: the single writer does not wait on it.
    let at = now();
    let shown = store
        .read(move |c| project_json(c, &project, at))
        .await
        .map_err(from_store)?;
    Ok(Outcome::Reply(shown))
}
