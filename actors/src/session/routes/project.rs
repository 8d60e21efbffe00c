//! The project a session works in: `rummy/hello` (which binds it), `getProjects`, the admin's
//! `project/set` (an admin's cost ceiling) and the project's file constraints.

use crate::clock::now;
use crate::errors::Error;
use crate::session::auth;
use crate::session::call::{Binding, Call, CallAnswer};
use rummy_core::access::roots::{overlap, RootRefusal};
use rummy_core::wire::jsonrpc::PROTOCOL_VERSION;
use rummy_core::wire::params::{
    self, ConstraintParams, DropParams, HelloParams, NoParams, Page, ProjectSetParams,
    ProjectsParams,
};
use rummy_core::wire::results::{Constraint, Hello, PatternAck, Project};
use rummy_core::wire::{ErrorKind, RpcError};
use rummy_provider::time::Millis;
use rummy_store::constraints::{self, ConstraintKind};
use rummy_store::db::Db;
use rummy_store::period::CostPeriod;
use rummy_store::principal::Caller;
use rummy_store::projects::{self, Project as Stored};
use rummy_store::StoreError;
use std::path::Path;

/// `getProjects`: the projects the caller may open (all of them for the owner and admins, the
/// granted ones for a member token).
pub async fn get_projects(call: Call, p: ProjectsParams) -> Result<Vec<Project>, Error> {
    let caller = auth::caller(&call, p.token.as_deref()).await?;
    let (limit, offset) = params::bounds(Page {
        limit: p.limit,
        offset: p.offset,
    });
    let at = now();
    let list = call
        .read(move |c| {
            let list = projects::list(c, limit, offset)?;
            list.into_iter()
                .filter(|p| caller.may_open(&p.name))
                .map(|p| shown(c, p, at))
                .collect::<Result<Vec<_>, StoreError>>()
        })
        .await?;
    Ok(list)
}

/// `rummy/hello`: binds the session to a project — opened by name, or created at
/// `projectRoot` — and scans its files, so a run started right after sees them.
pub async fn hello(call: Call, p: HelloParams) -> Result<CallAnswer, Error> {
    if p.name.trim().is_empty() {
        return Err(RpcError::invalid_param("name", "must not be empty").into());
    }
    if let Some(version) = &p.client_version {
        let major = |v: &str| v.trim().split('.').next().map(str::to_owned);
        if major(version) != major(PROTOCOL_VERSION) {
            return Err(RpcError::new(
                ErrorKind::ProtocolMismatch,
                format!("protocol mismatch: server {PROTOCOL_VERSION}, client {version}; clients must match MAJOR"),
            ).into());
        }
    }
    // A member asking for a project not granted hears the same whether it exists or not.
    let caller = auth::caller(&call, p.token.as_deref()).await?;
    if !caller.may_open(&p.name) {
        return Err(auth::unauthorized(format!(
            "unauthorized: this token does not open project \"{}\"",
            p.name
        ))
        .into());
    }
    let project = match p.project_root.clone() {
        Some(requested) => create_or_open(&call, &caller, &p, requested).await?,
        None => open_named(&call, &p.name).await?,
    };
    // The project's files become entries now, so a run started right after hello sees them.
    if let Err(e) = crate::files::refresh(call.svc(), project.id, &project.project_root).await {
        tracing::warn!(project = %project.name, error = %e, "project scan failed");
    }
    let result = serde_json::to_value(Hello {
        rummy_version: env!("CARGO_PKG_VERSION").to_owned(),
        protocol_version: PROTOCOL_VERSION.to_owned(),
        project_id: i64::from(project.id.0),
        project_root: project.project_root.clone(),
        max_turns: i64::from(call.svc().config.limits.max_turns),
    })?;
    let binding = Binding {
        project_id: project.id,
        name: project.name,
        root: project.project_root,
        caller,
    };
    Ok(CallAnswer::Bind(binding, result))
}

/// `rummy/hello {name, projectRoot}`: the project of that name, created at that root (its real
/// path, inside the bound) when it does not exist yet — which only an admin may do. The root
/// holds none of the server's own state and nests with no other project's root (checked in the
/// write that creates the project, so two hellos cannot nest their roots).
async fn create_or_open(
    call: &Call,
    caller: &Caller,
    p: &HelloParams,
    requested: String,
) -> Result<Stored, Error> {
    if !caller.is_admin() {
        let name = p.name.clone();
        let exists = call
            .read(move |c| projects::by_name(c, &name))
            .await?
            .is_some();
        if !exists {
            return Err(RpcError::new(
                ErrorKind::Permission,
                format!(
                    "permission denied: creating project \"{}\" needs an admin token",
                    p.name
                ),
            )
            .into());
        }
    }
    let bound = call.svc().config.access.project_roots.clone();
    let server = call.svc().config.server_state();
    let asked = requested.clone();
    let root = actix_rt::task::spawn_blocking(move || bound.resolve_clear_of(&asked, &server))
        .await?
        .map_err(root_refused)?;
    let (name, root, config) = (
        p.name.clone(),
        root.display().to_string(),
        p.config_path.clone(),
    );
    let opened = call
        .write(move |c| {
            // A project asked for at another root is refused for moving (-32005) first.
            let moved = projects::by_name(c, &name)?.is_some_and(|p| p.project_root != root);
            if !moved {
                let others = projects::roots_but(c, &name)?;
                if let Some(why) = overlap(Path::new(&root), others.iter().map(Path::new)) {
                    return Ok(Err(RootRefusal::Overlaps(requested, why)));
                }
            }
            projects::hello(c, &name, &root, config.as_deref(), now()).map(Ok)
        })
        .await?;
    opened.map_err(|refusal| root_refused(refusal).into())
}

/// `rummy/hello {name}`: an existing project the connection may open (-32004 otherwise), whose
/// root is still an existing directory inside the bound (the bound may have narrowed since),
/// holding none of the server's state and nesting with no other project's root (it may have
/// been created before these were refused, or the server's home moved since).
async fn open_named(call: &Call, name: &str) -> Result<Stored, Error> {
    let lookup = name.to_owned();
    let (project, others) = call
        .read(move |c| {
            let project = projects::by_name(c, &lookup)?;
            let others = projects::roots_but(c, &lookup)?;
            Ok(project.map(|p| (p, others)))
        })
        .await?
        .ok_or_else(|| not_a_project(name))?;
    let bound = call.svc().config.access.project_roots.clone();
    let server = call.svc().config.server_state();
    let stored = project.project_root.clone();
    let checked =
        actix_rt::task::spawn_blocking(move || bound.resolve_clear_of(&stored, &server)).await?;
    let checked = checked.and_then(|_| {
        let root = &project.project_root;
        match overlap(Path::new(root), others.iter().map(Path::new)) {
            Some(why) => Err(RootRefusal::Overlaps(root.clone(), why)),
            None => Ok(()),
        }
    });
    match checked {
        Ok(()) => Ok(project),
        Err(refusal @ (RootRefusal::Outside(..) | RootRefusal::Overlaps(..))) => {
            Err(root_refused(refusal).into())
        }
        Err(refusal) => Err(RpcError::new(
            ErrorKind::NotFound,
            format!("project \"{name}\" cannot be opened: its root {refusal}"),
        )
        .into()),
    }
}

/// No project of that name (that this connection may open).
fn not_a_project(name: &str) -> RpcError {
    RpcError::new(
        ErrorKind::NotFound,
        format!("project \"{name}\" not found: give projectRoot to create it (getProjects lists the projects)"),
    )
}

/// A refused project root as the client hears it: outside the bound (whatever is on disk
/// there), holding the server's state or nesting with another project's root is -32003,
/// anything else about the path -32602.
fn root_refused(refusal: RootRefusal) -> RpcError {
    match refusal {
        RootRefusal::Outside(..) | RootRefusal::Overlaps(..) => {
            RpcError::new(ErrorKind::Permission, refusal.to_string())
        }
        other => RpcError::invalid_param("projectRoot", other),
    }
}

/// A project as `getProjects` lists it: with its cost ceiling (`null`: none), the period, when
/// the current period began, what its turns begun since then cost (USD), and its command
/// network override (`null`: none).
fn shown(c: &mut Db, project: Stored, at: Millis) -> Result<Project, StoreError> {
    let period = project.period();
    let start = period.start(at);
    let spent = projects::spent_since(c, project.id, start)?;
    let web_domains = project.web_domains();
    Ok(Project {
        created_at: Some(Millis(project.created_at).to_rfc3339()),
        name: project.name,
        project_id: i64::from(project.id.0),
        project_root: project.project_root,
        cost_ceiling: project.cost_ceiling,
        period: period.as_str().to_owned(),
        period_start: start.to_rfc3339(),
        spent,
        web_domains,
        command_network: project.command_network,
    })
}

/// A `webDomains` list, each entry a host name kept lower case, once; the entry that is none
/// is refused (-32602).
fn web_domains(list: Vec<String>) -> Result<Vec<String>, RpcError> {
    let mut domains: Vec<String> = Vec::with_capacity(list.len());
    for entry in list {
        let domain = rummy_core::web::domains::normalize(&entry).ok_or_else(|| {
            RpcError::invalid_param(
                "webDomains",
                format!("\"{entry}\" is not a host name (write example.com, not a URL)"),
            )
        })?;
        if !domains.contains(&domain) {
            domains.push(domain);
        }
    }
    Ok(domains)
}

/// `project/set {name, costCeiling, period, commandNetwork, webDomains}` (admin): sets (a number), removes
/// (`null`) or keeps (absent) the ceiling, and the period; admission looks at the project's
/// waiting runs again at once. `commandNetwork` likewise sets (`true`/`false`), removes
/// (`null`: the server's `RUMMY_COMMAND_NETWORK` applies) or keeps (absent) whether the
/// project's accepted commands reach the network, from their next command and loop on;
/// `webDomains` sets (a list: the model's web fetch on), removes (`null`: off) or keeps
/// (absent) the domains the project's model fetches from without asking. One write. Answers the project as `getProjects` lists it.
pub async fn project_set(call: Call, p: ProjectSetParams) -> Result<Project, Error> {
    auth::require_admin(&auth::caller(&call, None).await?, "project/set")?;
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
            )
            .into());
        }
    }
    let domains = match p.web_domains {
        Some(Some(list)) => Some(Some(web_domains(list)?)),
        other => other,
    };
    let (name, ceiling, network) = (p.name, p.cost_ceiling, p.command_network);
    let project = call
        .write(move |c| {
            let mut project = projects::set_ceiling(c, &name, ceiling, period)?;
            if let Some(network) = network {
                project = projects::set_command_network(c, &name, network)?;
            }
            if let Some(domains) = domains {
                project = projects::set_web_domains(c, &name, domains.as_deref())?;
            }
            Ok(project)
        })
        .await?;
    tracing::info!(
        project = %project.name,
        ceiling = ?project.cost_ceiling,
        period = %project.cost_period,
        command_network = ?project.command_network,
        web_domains = ?project.web_domains,
        "project set"
    );
    call.svc()
        .admission
        .set_ceiling(project.id, project.ceiling());
    // Summing the spending is a read: the single writer does not wait on it.
    let at = now();
    call.read(move |c| shown(c, project, at)).await
}

/// `file/constraint`: sets how the project's files matching a pattern are treated.
pub async fn file_constraint(call: Call, p: ConstraintParams) -> Result<PatternAck, Error> {
    let project_id = call.project()?.project_id;
    let kind = ConstraintKind::parse(&p.visibility).ok_or_else(|| {
        RpcError::invalid_param("visibility", "expected active, readonly or ignore")
    })?;
    let pattern = call
        .write(move |c| constraints::set(c, project_id, &p.pattern, kind, now()))
        .await?;
    Ok(PatternAck { ok: true, pattern })
}

/// `file/drop`: removes a constraint.
pub async fn file_drop(call: Call, p: DropParams) -> Result<PatternAck, Error> {
    let project_id = call.project()?.project_id;
    let pattern = call
        .write(move |c| constraints::drop(c, project_id, &p.pattern))
        .await?;
    Ok(PatternAck { ok: true, pattern })
}

/// `getConstraints`: the project's constraints.
pub async fn get_constraints(call: Call, _: NoParams) -> Result<Vec<Constraint>, Error> {
    let project_id = call.project()?.project_id;
    let list = call.read(move |c| constraints::list(c, project_id)).await?;
    Ok(list
        .into_iter()
        .map(|c| Constraint {
            visibility: c.kind.as_str().to_owned(),
            pattern: c.pattern,
        })
        .collect())
}
