//! The routing table: each protocol method paired with its handler; `discover` is generated from it.

use super::auth::{self, token_create, token_list, token_revoke};
use super::fair::{project_json, project_set};
use crate::clock::now;
use crate::errors::from_store;
use crate::registry::{
    validate_settings, CancelRun, ConfigureRun, ContinueRun, InjectRun, RunRegistry, StartRun,
};
use crate::services::Services;
use actix::Addr;
use futures_util::future::LocalBoxFuture;
use rummy_core::access::principal::Caller;
use rummy_core::access::roots::RootRefusal;
use rummy_core::config::ModelSeed;
use rummy_core::entry::Writer;
use rummy_core::entry::{http_status, State, Visibility};
use rummy_core::run::RunStatus;
use rummy_core::store::constraints::{self, ConstraintKind};
use rummy_core::store::entries::RunRef;
use rummy_core::store::entries::{self, EntryFilter};
use rummy_core::store::ops::{self, ContentWrite, Op, ViewChange};
use rummy_core::store::runs::Run;
use rummy_core::store::{models, notifications, projects, rpc_log, runs, skills, StoreError};
use rummy_core::time::Millis;
use rummy_core::turn::proposals::Decision as ProposalDecision;
use rummy_core::turn::state::snapshot;
use rummy_core::turn::streams::{self, StreamEnd, StreamWrite};
use rummy_core::wire::jsonrpc::{params, params_at, PROTOCOL_VERSION};
use rummy_core::wire::methods::{self, MethodSpec};
use rummy_core::wire::params::{
    AddModelParams, AliasParams, ConstraintParams, DropParams, GetEntriesParams, GetParams,
    GetRunParams, HelloParams, MoveParams, NoParams, Page, PersonaParams, ProjectsParams, RmParams,
    RunAttributes, RunParams, SetParams, SkillParams, StreamAbortedParams, StreamCancelParams,
    StreamCompletedParams, StreamParams, UpdateParams,
};
use rummy_core::wire::{ErrorKind, RpcError};
use serde_json::{json, Value};

/// What a session's handlers reach.
#[derive(Clone)]
pub struct SessionDeps {
    /// Shared services.
    pub svc: Services,
    /// Runs.
    pub registry: Addr<RunRegistry>,
    /// Places for sessions (`RUMMY_MAX_CONNECTIONS`).
    pub seats: super::Seats,
    /// Ends the sessions of tokens that lapse.
    pub tokens: Addr<crate::tokens::TokenWatch>,
}

/// The project a session is bound to, and who it acts for there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Binding {
    /// Project id.
    pub project_id: i32,
    /// Project name.
    pub name: String,
    /// Project root.
    pub root: String,
    /// Who the session acts for.
    pub caller: Caller,
}

/// One call as a handler sees it.
pub struct Call {
    /// Services.
    pub deps: SessionDeps,
    /// The session's project, if bound.
    pub project: Option<Binding>,
    /// Who the session acts for, when known before a hello (a Bearer token on the upgrade).
    pub caller: Option<Caller>,
    /// The params.
    pub params: Value,
}

impl Call {
    /// Who the session acts for, when known: its binding's caller, or its upgrade's.
    pub fn caller(&self) -> Option<&Caller> {
        self.project
            .as_ref()
            .map(|b| &b.caller)
            .or(self.caller.as_ref())
    }
}

/// A handler's success.
pub enum Outcome {
    /// Answer with this result.
    Reply(Value),
    /// Bind the session to a project, then answer.
    Bind(Binding, Value),
}

type Answer = LocalBoxFuture<'static, Result<Outcome, RpcError>>;

/// What the RPC log keeps of a call (recorded off the response path).
pub struct CallLog {
    /// The store.
    pub store: crate::store::Store,
    /// The session's project at call time.
    pub project_id: Option<i32>,
    /// The method.
    pub method: &'static str,
    /// The request id as JSON text.
    pub rpc_id: Option<String>,
    /// The params as sent.
    pub params: Value,
    /// The user the session acts for, if a token names one.
    pub user: Option<String>,
}

impl CallLog {
    /// Writes the call and its outcome to `rpc_log` (redacted, truncated) without delaying the
    /// response. Only calls in a project are logged — those of a bound session, and the hello
    /// that binds it: what a client sends before (or instead of) a hello never reaches the
    /// database, so an unauthenticated client cannot fill it.
    pub fn record(self, result: &Result<Outcome, RpcError>) {
        let mut user = self.user;
        let (value, error, project_id) = match result {
            Ok(Outcome::Bind(binding, v)) => {
                user = binding.caller.user().map(str::to_owned);
                (Some(v.clone()), None, Some(binding.project_id))
            }
            Ok(Outcome::Reply(v)) => (Some(v.clone()), None, self.project_id),
            Err(e) => (
                None,
                Some(format!("{}: {}", e.kind.code(), e.message)),
                self.project_id,
            ),
        };
        let Some(project_id) = project_id else {
            return;
        };
        actix_rt::spawn(async move {
            let written = self
                .store
                .write(move |c| {
                    let call = rpc_log::LoggedCall {
                        project_id: Some(project_id),
                        user: user.as_deref(),
                        method: self.method,
                        rpc_id: self.rpc_id,
                        params: &self.params,
                        result: value.as_ref(),
                        error: error.as_deref(),
                    };
                    rpc_log::record(c, &call, now())
                })
                .await;
            if let Err(e) = written {
                tracing::warn!(error = %e, "rpc_log write failed");
            }
        });
    }
}

/// A method, its handler, and the params type the handler reads.
pub struct Route {
    /// The documented method.
    pub spec: &'static MethodSpec,
    /// Its handler.
    pub handler: fn(Call) -> Answer,
    /// The wire names its params type accepts (aliases included): what `discover` must list,
    /// checked by a test.
    #[cfg(test)]
    pub fields: fn() -> &'static [&'static str],
}

macro_rules! route {
    ($spec:expr, $handler:ident, $params:ty) => {
        Route {
            spec: &$spec,
            handler: |call| Box::pin($handler(call)),
            #[cfg(test)]
            fields: rummy_core::wire::params::fields_of::<$params>,
        }
    };
}

/// Every method this server serves.
pub(super) static ROUTES: &[Route] = &[
    route!(methods::PING, ping, NoParams),
    route!(methods::DISCOVER, discover, NoParams),
    route!(methods::GET_PROJECTS, get_projects, ProjectsParams),
    route!(methods::HELLO, hello, HelloParams),
    route!(methods::GET_MODELS, get_models, Page),
    route!(methods::ADD_MODEL, add_model, AddModelParams),
    route!(methods::REMOVE_MODEL, remove_model, AliasParams),
    route!(methods::GET_RUNS, get_runs, Page),
    route!(methods::GET_RUN, get_run, GetRunParams),
    route!(methods::GET_ENTRIES, get_entries, GetEntriesParams),
    route!(methods::SET, set, SetParams),
    route!(methods::GET, get, GetParams),
    route!(methods::RM, rm, RmParams),
    route!(methods::CP, cp, MoveParams),
    route!(methods::MV, mv, MoveParams),
    route!(methods::UPDATE, update, UpdateParams),
    route!(methods::FILE_CONSTRAINT, file_constraint, ConstraintParams),
    route!(methods::FILE_DROP, file_drop, DropParams),
    route!(methods::GET_CONSTRAINTS, get_constraints, NoParams),
    route!(methods::SKILL_ADD, skill_add, SkillParams),
    route!(methods::SKILL_REMOVE, skill_remove, SkillParams),
    route!(methods::GET_SKILLS, get_skills, RunParams),
    route!(methods::LIST_SKILLS, list_skills, NoParams),
    route!(methods::PERSONA_SET, persona_set, PersonaParams),
    route!(methods::LIST_PERSONAS, list_personas, NoParams),
    route!(methods::STREAM, stream, StreamParams),
    route!(
        methods::STREAM_COMPLETED,
        stream_completed,
        StreamCompletedParams
    ),
    route!(methods::STREAM_ABORTED, stream_aborted, StreamAbortedParams),
    route!(methods::STREAM_CANCEL, stream_cancel, StreamCancelParams),
    route!(
        methods::TOKEN_CREATE,
        token_create,
        rummy_core::wire::params::TokenCreateParams
    ),
    route!(methods::TOKEN_LIST, token_list, NoParams),
    route!(
        methods::TOKEN_REVOKE,
        token_revoke,
        rummy_core::wire::params::TokenRevokeParams
    ),
    route!(
        methods::PROJECT_SET,
        project_set,
        rummy_core::wire::params::ProjectSetParams
    ),
];

/// The route of a method.
pub fn find(method: &str) -> Option<&'static Route> {
    ROUTES.iter().find(|r| r.spec.name == method)
}

/// The `discover` answer.
pub fn catalogue() -> Value {
    let specs: Vec<&MethodSpec> = ROUTES.iter().map(|r| r.spec).collect();
    methods::catalogue(&specs)
}

fn reply(value: Value) -> Result<Outcome, RpcError> {
    Ok(Outcome::Reply(value))
}

fn project_of(call: &Call) -> Result<&Binding, RpcError> {
    call.project.as_ref().ok_or_else(|| {
        RpcError::new(
            ErrorKind::NotInitialized,
            "not initialized: call rummy/hello first",
        )
    })
}

async fn ping(call: Call) -> Result<Outcome, RpcError> {
    params::<NoParams>(&call.params)?;
    reply(json!({}))
}

async fn discover(call: Call) -> Result<Outcome, RpcError> {
    params::<NoParams>(&call.params)?;
    reply(catalogue())
}

/// The projects the caller may open (all of them for the owner and admins, the granted ones for
/// a member token).
async fn get_projects(call: Call) -> Result<Outcome, RpcError> {
    let p: ProjectsParams = params(&call.params)?;
    let caller = auth::caller(&call, p.token.as_deref()).await?;
    let (limit, offset) = Page {
        limit: p.limit,
        offset: p.offset,
    }
    .bounds();
    let at = now();
    let list = call
        .deps
        .svc
        .store
        .read(move |c| {
            let list = projects::list(c, limit, offset)?;
            list.into_iter()
                .filter(|p| caller.may_open(&p.name))
                .map(|p| project_json(c, &p, at))
                .collect::<Result<Vec<_>, StoreError>>()
        })
        .await
        .map_err(from_store)?;
    reply(Value::Array(list))
}

async fn hello(call: Call) -> Result<Outcome, RpcError> {
    let p: HelloParams = params(&call.params)?;
    if p.name.trim().is_empty() {
        return Err(RpcError::invalid_param("name", "must not be empty"));
    }
    if let Some(version) = &p.client_version {
        let major = |v: &str| v.trim().split('.').next().map(str::to_owned);
        if major(version) != major(PROTOCOL_VERSION) {
            return Err(RpcError::new(
                ErrorKind::ProtocolMismatch,
                format!("protocol mismatch: server {PROTOCOL_VERSION}, client {version}; clients must match MAJOR"),
            ));
        }
    }
    // A member asking for a project not granted hears the same whether it exists or not.
    let caller = auth::caller(&call, p.token.as_deref()).await?;
    if !caller.may_open(&p.name) {
        return Err(auth::unauthorized(format!(
            "unauthorized: this token does not open project \"{}\"",
            p.name
        )));
    }
    let project = match p.project_root.clone() {
        Some(requested) => create_or_open(&call, &caller, &p, requested).await?,
        None => open_named(&call, &p.name).await?,
    };
    // The project's files become entries now, so a run started right after hello sees them.
    if let Err(e) = crate::files::refresh(&call.deps.svc, project.id, &project.project_root).await {
        tracing::warn!(project = %project.name, error = %e, "project scan failed");
    }
    let result = json!({
        "rummyVersion": env!("CARGO_PKG_VERSION"),
        "protocolVersion": PROTOCOL_VERSION,
        "projectId": project.id,
        "projectRoot": project.project_root,
        "maxTurns": call.deps.svc.config.limits.max_turns,
    });
    let binding = Binding {
        project_id: project.id,
        name: project.name,
        root: project.project_root,
        caller,
    };
    Ok(Outcome::Bind(binding, result))
}

/// `rummy/hello {name, projectRoot}`: the project of that name, created at that root (its real
/// path, inside the bound) when it does not exist yet.
async fn create_or_open(
    call: &Call,
    caller: &Caller,
    p: &HelloParams,
    requested: String,
) -> Result<projects::Project, RpcError> {
    if !caller.is_admin() {
        let name = p.name.clone();
        let exists = call
            .deps
            .svc
            .store
            .read(move |c| projects::by_name(c, &name))
            .await
            .map_err(from_store)?
            .is_some();
        if !exists {
            return Err(RpcError::new(
                ErrorKind::Permission,
                format!(
                    "permission denied: creating project \"{}\" needs an admin token",
                    p.name
                ),
            ));
        }
    }
    let bound = call.deps.svc.config.access.project_roots.clone();
    let root = actix_rt::task::spawn_blocking(move || bound.resolve(&requested))
        .await
        .map_err(|e| crate::errors::internal(&e))?
        .map_err(root_refused)?;
    let (name, root, config) = (
        p.name.clone(),
        root.display().to_string(),
        p.config_path.clone(),
    );
    let project = call
        .deps
        .svc
        .store
        .write(move |c| projects::hello(c, &name, &root, config.as_deref(), now()))
        .await
        .map_err(from_store)?;
    Ok(project)
}

/// `rummy/hello {name}`: an existing project the connection may open (-32004 otherwise), whose
/// root is still an existing directory inside the bound (the bound may have narrowed since).
async fn open_named(call: &Call, name: &str) -> Result<projects::Project, RpcError> {
    let lookup = name.to_owned();
    let project = call
        .deps
        .svc
        .store
        .read(move |c| projects::by_name(c, &lookup))
        .await
        .map_err(from_store)?
        .ok_or_else(|| not_a_project(name))?;
    let bound = call.deps.svc.config.access.project_roots.clone();
    let stored = project.project_root.clone();
    let checked = actix_rt::task::spawn_blocking(move || bound.resolve(&stored))
        .await
        .map_err(|e| crate::errors::internal(&e))?;
    match checked {
        Ok(_) => Ok(project),
        Err(refusal @ RootRefusal::Outside(..)) => Err(root_refused(refusal)),
        Err(refusal) => Err(RpcError::new(
            ErrorKind::NotFound,
            format!("project \"{name}\" cannot be opened: its root {refusal}"),
        )),
    }
}

/// No project of that name (that this connection may open).
fn not_a_project(name: &str) -> RpcError {
    RpcError::new(
        ErrorKind::NotFound,
        format!("project \"{name}\" not found: give projectRoot to create it (getProjects lists the projects)"),
    )
}

/// A refused project root as the client hears it: outside the bound is -32003 (whatever is on
/// disk there), anything else about the path -32602.
fn root_refused(refusal: RootRefusal) -> RpcError {
    match refusal {
        RootRefusal::Outside(..) => RpcError::new(ErrorKind::Permission, refusal.to_string()),
        other => RpcError::invalid_param("projectRoot", other),
    }
}

fn model_json(m: &models::Model) -> Value {
    json!({ "alias": m.alias, "actual": m.actual, "contextLength": m.context_length, "fallback": m.fallback })
}

async fn get_models(call: Call) -> Result<Outcome, RpcError> {
    let (limit, offset) = params::<Page>(&call.params)?.bounds();
    let list = call
        .deps
        .svc
        .store
        .read(move |c| models::list(c, limit, offset))
        .await
        .map_err(from_store)?;
    reply(Value::Array(list.iter().map(model_json).collect()))
}

fn valid_model_alias(alias: &str) -> bool {
    (1..=128).contains(&alias.len())
        && alias
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
}

async fn add_model(call: Call) -> Result<Outcome, RpcError> {
    let p: AddModelParams = params(&call.params)?;
    // Models are the server's, shared by every project: once tokens exist, only an admin may
    // re-point one (a member could otherwise redirect every project's runs).
    auth::require_admin(&auth::caller(&call, None).await?, "addModel")?;
    if !valid_model_alias(&p.alias) {
        return Err(RpcError::invalid_param(
            "alias",
            "1-128 characters of [A-Za-z0-9_.-]",
        ));
    }
    let (provider, model) = p.actual.split_once('/').unwrap_or(("", ""));
    if provider.is_empty() || model.is_empty() {
        return Err(RpcError::invalid_param(
            "actual",
            "expected <provider>/<model>",
        ));
    }
    if p.context_length.is_some_and(|n| n <= 0) {
        return Err(RpcError::invalid_param(
            "contextLength",
            "expected a positive number",
        ));
    }
    let seed = ModelSeed {
        alias: p.alias,
        actual: p.actual,
        context_length: p.context_length,
        fallback: p.fallback,
    };
    let model = call
        .deps
        .svc
        .store
        .write(move |c| models::upsert(c, &seed, now()))
        .await
        .map_err(from_store)?;
    reply(json!({ "id": model.id, "alias": model.alias }))
}

async fn remove_model(call: Call) -> Result<Outcome, RpcError> {
    let p: AliasParams = params(&call.params)?;
    auth::require_admin(&auth::caller(&call, None).await?, "removeModel")?;
    call.deps
        .svc
        .store
        .write(move |c| models::remove(c, &p.alias))
        .await
        .map_err(from_store)?;
    reply(json!({ "ok": true }))
}

async fn get_runs(call: Call) -> Result<Outcome, RpcError> {
    let project_id = project_of(&call)?.project_id;
    let (limit, offset) = params::<Page>(&call.params)?.bounds();
    let list = call
        .deps
        .svc
        .store
        .read(move |c| {
            let runs = runs::list(c, project_id, limit, offset)?;
            runs.into_iter()
                .map(|r| {
                    let summary = entries::latest_summary(c, r.id)?;
                    let totals = rummy_core::store::turns::totals(c, r.id)?;
                    Ok((summary, totals, r))
                })
                .collect::<Result<Vec<_>, _>>()
        })
        .await
        .map_err(from_store)?;
    let items = list
        .into_iter()
        .map(|(summary, totals, r)| {
            json!({ "run": r.alias, "status": r.status, "turn": r.last_turn(), "model": r.model,
                    "summary": summary, "created": Millis(r.created_at).to_rfc3339(),
                    "tokens": totals.total_tokens, "cost": totals.cost })
        })
        .collect();
    reply(Value::Array(items))
}

/// The run with that alias in the caller's project, or -32004.
async fn find_run(call: &Call, alias: &str) -> Result<Run, RpcError> {
    let project_id = project_of(call)?.project_id;
    let alias_owned = alias.to_owned();
    call.deps
        .svc
        .store
        .read(move |c| runs::by_alias(c, project_id, &alias_owned))
        .await
        .map_err(from_store)?
        .ok_or_else(|| {
            RpcError::new(
                ErrorKind::NotFound,
                format!("run \"{alias}\" not found in this project"),
            )
        })
}

async fn get_run(call: Call) -> Result<Outcome, RpcError> {
    let p: GetRunParams = params(&call.params)?;
    let run = find_run(&call, &p.run).await?;
    // A run at 100 may wait for a place: admission knows why and where (TEAM.md §4).
    let admission = &call.deps.svc.admission;
    let held = if run.status == RunStatus::Queued.code() && admission.applies(run.project_id) {
        admission.queued(run.id).await
    } else {
        None
    };
    let since = p.since_seq;
    let mut state = call
        .deps
        .svc
        .store
        .read(move |c| {
            let mut state = snapshot(c, &run)?;
            if let Some(seq) = since {
                let missed = notifications::since(c, run.id, seq, 1000)?;
                let missed: Vec<Value> = missed
                    .into_iter()
                    .map(|n| json!({ "method": n.method, "params": serde_json::from_str::<Value>(&n.params).unwrap_or(Value::Null) }))
                    .collect();
                state["missed"] = Value::Array(missed);
            }
            Ok(state)
        })
        .await
        .map_err(from_store)?;
    if since.is_none() {
        if let Some(map) = state.as_object_mut() {
            map.remove("missed");
        }
    }
    if let Some(queued) = held {
        state["queued"] = serde_json::to_value(queued).unwrap_or(Value::Null);
    }
    reply(state)
}

async fn get_entries(call: Call) -> Result<Outcome, RpcError> {
    let p: GetEntriesParams = params(&call.params)?;
    let state = match p.state.as_deref() {
        None => None,
        Some(s) => Some(State::parse(s).ok_or_else(|| {
            RpcError::invalid_param(
                "state",
                "expected proposed, streaming, resolved, failed or cancelled",
            )
        })?),
    };
    let visibility = match p.visibility.as_deref() {
        None => None,
        Some(v) => Some(Visibility::parse(v).ok_or_else(|| {
            RpcError::invalid_param("visibility", "expected visible, summarized or archived")
        })?),
    };
    let run = find_run(&call, &p.run).await?;
    let pattern = p
        .pattern
        .as_deref()
        .filter(|x| *x != "*")
        .map(|x| rummy_core::path::normalize(x).map_err(|e| RpcError::invalid_param("pattern", e)))
        .transpose()?;
    let filter = EntryFilter {
        scheme: p.scheme.clone(),
        state,
        visibility,
        pattern,
        body_filter: p.body_filter.clone(),
    };
    let (limit, offset) = Page {
        limit: p.limit,
        offset: p.offset,
    }
    .bounds();
    let rows = call
        .deps
        .svc
        .store
        .read(move |c| entries::list(c, run.id, &filter, limit, offset))
        .await
        .map_err(from_store)?;
    let items = rows
        .iter()
        .map(|r| {
            let mut item = json!({
                "path": r.path, "scheme": r.scheme, "state": r.state, "outcome": r.outcome,
                "status": http_status(r.state(), r.outcome.as_deref()), "visibility": r.visibility,
                "turn": r.turn, "tokens": r.tokens, "attributes": r.attributes(),
            });
            if p.with_body {
                item["body"] = Value::from(r.body.clone());
            }
            item
        })
        .collect();
    reply(Value::Array(items))
}

async fn set(call: Call) -> Result<Outcome, RpcError> {
    let p: SetParams = params(&call.params)?;
    let Some(alias) = p.path.strip_prefix("run://") else {
        return set_entry(call, p).await;
    };
    let project_id = project_of(&call)?.project_id;
    refuse_entry_fields(&p, alias)?;
    let attributes: RunAttributes = match &p.attributes {
        Some(map) => params_at(&Value::Object(map.clone()), "attributes.")?,
        None => RunAttributes::default(),
    };
    let existing = if alias.is_empty() {
        None
    } else {
        Some(find_run(&call, alias).await)
    };
    let registry = &call.deps.registry;
    let sent = |e: actix::MailboxError| crate::errors::internal(&e);
    match (p.state.as_deref(), p.body) {
        (Some("cancelled"), _) => {
            let run = existing
                .ok_or_else(|| RpcError::invalid_param("path", "name the run to cancel"))??;
            registry.send(CancelRun { run }).await.map_err(sent)??;
            reply(json!({ "ok": true, "alias": alias }))
        }
        (Some(other), _) => Err(RpcError::invalid_param(
            "state",
            format!("a run accepts only state \"cancelled\", not \"{other}\""),
        )),
        (None, Some(body)) => match existing {
            Some(Ok(run)) => {
                let alias = run.alias.clone();
                if attributes.fork.is_some() {
                    return Err(RpcError::new(
                        ErrorKind::Conflict,
                        format!("run \"{alias}\" already exists; fork into a new alias"),
                    ));
                }
                let settings = settings_in(p.attributes.as_ref());
                if attributes.inject {
                    if let Some(field) = settings.first() {
                        return Err(RpcError::invalid_param(
                            &format!("attributes.{field}"),
                            "an inject joins the active loop as it runs; configure the run (or continue it without inject) to change its settings",
                        ));
                    }
                    let injected = registry
                        .send(InjectRun { run, prompt: body })
                        .await
                        .map_err(sent)??;
                    return reply(json!({ "ok": true, "alias": alias, "injected": injected }));
                }
                // A continuation runs in the run's mode and settings; one that names some
                // configures the run first, so they stay for the loops after it (PROTOCOL.md).
                let run = if settings.is_empty() {
                    run
                } else {
                    validate_settings(&attributes)?;
                    registry
                        .send(ConfigureRun { run, attributes })
                        .await
                        .map_err(sent)??
                };
                registry
                    .send(ContinueRun { run, prompt: body })
                    .await
                    .map_err(sent)??;
                reply(json!({ "ok": true, "alias": alias }))
            }
            Some(Err(e)) if e.kind != ErrorKind::NotFound => Err(e),
            _ => {
                let start = StartRun {
                    project_id,
                    alias: (!alias.is_empty()).then(|| alias.to_owned()),
                    prompt: body,
                    attributes,
                    user: call.caller().and_then(Caller::user).map(str::to_owned),
                };
                let alias = registry.send(start).await.map_err(sent)??;
                reply(json!({ "ok": true, "alias": alias }))
            }
        },
        (None, None) if p.attributes.is_some() => {
            let run = existing
                .ok_or_else(|| RpcError::invalid_param("path", "name the run to configure"))??;
            let alias = run.alias.clone();
            registry
                .send(ConfigureRun { run, attributes })
                .await
                .map_err(sent)??;
            reply(json!({ "ok": true, "alias": alias }))
        }
        (None, None) => Err(RpcError::invalid_param(
            "body",
            "a run:// set needs a body (prompt), attributes (configure) or state \"cancelled\"",
        )),
    }
}

/// The run settings a `set` on `run://` names: its attributes other than `inject`.
fn settings_in(attributes: Option<&serde_json::Map<String, Value>>) -> Vec<&str> {
    attributes
        .into_iter()
        .flat_map(|map| map.keys())
        .map(String::as_str)
        .filter(|key| *key != "inject")
        .collect()
}

/// Fields of `set` that concern entries, refused on `run://` paths rather than ignored; `run`
/// is accepted there only when it names the same run.
fn refuse_entry_fields(p: &SetParams, alias: &str) -> Result<(), RpcError> {
    let given = [
        ("visibility", p.visibility.is_some()),
        ("outcome", p.outcome.is_some()),
        ("append", p.append),
        ("pattern", p.pattern),
        ("bodyFilter", p.body_filter.is_some()),
    ];
    if let Some((field, _)) = given.iter().find(|(_, given)| *given) {
        return Err(RpcError::invalid_param(
            field,
            "not used on run:// paths (a run is started, continued, configured or cancelled)",
        ));
    }
    match &p.run {
        Some(run) if run != alias => Err(RpcError::invalid_param(
            "run",
            format!("names run \"{run}\" but the path is run://{alias}"),
        )),
        _ => Ok(()),
    }
}

async fn file_constraint(call: Call) -> Result<Outcome, RpcError> {
    let p: ConstraintParams = params(&call.params)?;
    let project_id = project_of(&call)?.project_id;
    let kind = p
        .visibility
        .as_deref()
        .and_then(ConstraintKind::parse)
        .ok_or_else(|| {
            RpcError::invalid_param("visibility", "expected active, readonly or ignore")
        })?;
    let pattern = call
        .deps
        .svc
        .store
        .write(move |c| constraints::set(c, project_id, &p.pattern, kind, now()))
        .await
        .map_err(from_store)?;
    reply(json!({ "ok": true, "pattern": pattern }))
}

async fn file_drop(call: Call) -> Result<Outcome, RpcError> {
    let p: DropParams = params(&call.params)?;
    let project_id = project_of(&call)?.project_id;
    let pattern = call
        .deps
        .svc
        .store
        .write(move |c| constraints::drop(c, project_id, &p.pattern))
        .await
        .map_err(from_store)?;
    reply(json!({ "ok": true, "pattern": pattern }))
}

async fn get_constraints(call: Call) -> Result<Outcome, RpcError> {
    params::<NoParams>(&call.params)?;
    let project_id = project_of(&call)?.project_id;
    let list = call
        .deps
        .svc
        .store
        .read(move |c| constraints::list(c, project_id))
        .await
        .map_err(from_store)?;
    reply(Value::Array(
        list.iter()
            .map(|c| json!({ "pattern": c.pattern, "visibility": c.kind.as_str() }))
            .collect(),
    ))
}

fn home_dir(call: &Call, sub: &str) -> std::path::PathBuf {
    call.deps.svc.config.home.join(sub)
}

/// Reads `<dir>/<name>.md`; a missing file is -32004.
async fn read_named(
    dir: std::path::PathBuf,
    kind: &'static str,
    name: String,
) -> Result<String, RpcError> {
    let path = skills::file_of(&dir, &name).map_err(from_store)?;
    actix_rt::task::spawn_blocking(move || std::fs::read_to_string(&path))
        .await
        .map_err(|e| crate::errors::internal(&e))?
        .map_err(|_| {
            RpcError::new(
                ErrorKind::NotFound,
                format!("{kind} \"{name}\" not found in {}", dir.display()),
            )
        })
}

async fn skill_add(call: Call) -> Result<Outcome, RpcError> {
    let p: SkillParams = params(&call.params)?;
    let run = find_run(&call, &p.run).await?;
    let body = read_named(home_dir(&call, "skills"), "skill", p.name.clone()).await?;
    let rr = RunRef {
        run_id: run.id,
        project_id: run.project_id,
    };
    let divisor = call.deps.svc.config.limits.token_divisor;
    let name = p.name.clone();
    let path = call
        .deps
        .svc
        .store
        .write(move |c| skills::add(c, rr, &name, &body, divisor, now()))
        .await
        .map_err(from_store)?;
    reply(json!({ "ok": true, "skill": p.name, "path": path }))
}

async fn skill_remove(call: Call) -> Result<Outcome, RpcError> {
    let p: SkillParams = params(&call.params)?;
    let run = find_run(&call, &p.run).await?;
    call.deps
        .svc
        .store
        .write(move |c| skills::remove(c, run.id, &p.name))
        .await
        .map_err(from_store)?;
    reply(json!({ "ok": true }))
}

async fn get_skills(call: Call) -> Result<Outcome, RpcError> {
    let p: RunParams = params(&call.params)?;
    let run = find_run(&call, &p.run).await?;
    let list = call
        .deps
        .svc
        .store
        .read(move |c| skills::of_run(c, run.id))
        .await
        .map_err(from_store)?;
    reply(Value::Array(
        list.into_iter()
            .map(|(name, state)| json!({ "name": name, "state": state }))
            .collect(),
    ))
}

async fn list_named(dir: std::path::PathBuf) -> Result<Outcome, RpcError> {
    let list = actix_rt::task::spawn_blocking(move || skills::list_dir(&dir))
        .await
        .map_err(|e| crate::errors::internal(&e))?;
    reply(Value::Array(
        list.into_iter()
            .map(|(name, path)| json!({ "name": name, "path": path }))
            .collect(),
    ))
}

async fn list_skills(call: Call) -> Result<Outcome, RpcError> {
    params::<NoParams>(&call.params)?;
    list_named(home_dir(&call, "skills")).await
}

async fn list_personas(call: Call) -> Result<Outcome, RpcError> {
    params::<NoParams>(&call.params)?;
    list_named(home_dir(&call, "personas")).await
}

async fn persona_set(call: Call) -> Result<Outcome, RpcError> {
    let p: PersonaParams = params(&call.params)?;
    let run = find_run(&call, &p.run).await?;
    let persona = match (p.name, p.text) {
        (Some(_), Some(_)) => {
            return Err(RpcError::invalid_param(
                "name",
                "give a persona name or text, not both",
            ))
        }
        (Some(name), None) => Some(read_named(home_dir(&call, "personas"), "persona", name).await?),
        (None, Some(text)) => Some(text).filter(|t| !t.trim().is_empty()),
        (None, None) => None,
    };
    call.deps
        .svc
        .store
        .write(move |c| skills::set_persona(c, run.id, persona.as_deref(), now()))
        .await
        .map_err(from_store)?;
    reply(json!({ "ok": true }))
}

fn state_param(state: Option<&str>) -> Result<Option<State>, RpcError> {
    state
        .map(|s| {
            State::parse(s).ok_or_else(|| {
                RpcError::invalid_param(
                    "state",
                    "expected proposed, streaming, resolved, failed or cancelled",
                )
            })
        })
        .transpose()
}

fn visibility_param(visibility: Option<&str>) -> Result<Option<Visibility>, RpcError> {
    visibility
        .map(|v| {
            Visibility::parse(v).ok_or_else(|| {
                RpcError::invalid_param("visibility", "expected visible, summarized or archived")
            })
        })
        .transpose()
}

async fn run_ref(call: &Call, alias: &str) -> Result<(RunRef, i32), RpcError> {
    let run = find_run(call, alias).await?;
    Ok((
        RunRef {
            run_id: run.id,
            project_id: run.project_id,
        },
        run.last_turn().max(0),
    ))
}

/// `set` on an entry: write, append, body-less state/visibility/attribute change, or the same on every pattern match.
async fn set_entry(call: Call, p: SetParams) -> Result<Outcome, RpcError> {
    let alias = p
        .run
        .clone()
        .ok_or_else(|| RpcError::invalid_param("run", "required for entries other than run://"))?;
    let (rr, turn) = run_ref(&call, &alias).await?;
    let state = state_param(p.state.as_deref())?;
    if let (Some(state), false) = (state, p.pattern || p.body_filter.is_some()) {
        if let Some(answer) =
            resolve_if_proposed(&call, &alias, rr, &p.path, state, p.body.clone()).await?
        {
            return Ok(answer);
        }
    }
    let visibility = visibility_param(p.visibility.as_deref())?;
    let op = client_op(&call, rr);
    let change = ViewChange {
        state,
        outcome: p.outcome.clone(),
        visibility,
        merge: p.attributes.clone(),
    };
    if p.pattern || p.body_filter.is_some() {
        let count = call
            .deps
            .svc
            .store
            .write(move |c| {
                let pattern = rummy_core::path::normalize(&p.path)
                    .map_err(|e| StoreError::Invalid(e.to_string()))?;
                let rows = ops::matching(c, rr.run_id, &pattern, p.body_filter.as_deref())?;
                for row in &rows {
                    match &p.body {
                        Some(body) => {
                            let w = ContentWrite {
                                path: row.path.clone(),
                                body: body.clone(),
                                append: p.append,
                                state,
                                outcome: p.outcome.clone(),
                                visibility,
                                attributes: None,
                            };
                            ops::write_content(c, &op, &w, turn)?;
                        }
                        None => ops::change_view(c, &op, row, &change)?,
                    }
                }
                Ok(rows.len())
            })
            .await
            .map_err(from_store)?;
        return reply(json!({ "ok": true, "count": count }));
    }
    let path = match p.body {
        Some(body) => {
            let w = ContentWrite {
                path: p.path,
                body,
                append: p.append,
                state,
                outcome: p.outcome,
                visibility,
                attributes: p.attributes,
            };
            call.deps
                .svc
                .store
                .write(move |c| ops::write_content(c, &op, &w, turn))
                .await
        }
        None => {
            if change == ViewChange::default() {
                return Err(RpcError::invalid_param(
                    "body",
                    "nothing to change: give a body, state, visibility or attributes",
                ));
            }
            call.deps
                .svc
                .store
                .write(move |c| {
                    let path = rummy_core::path::normalize(&p.path)
                        .map_err(|e| StoreError::Invalid(e.to_string()))?;
                    let row = ops::exact(c, rr.run_id, &path)?;
                    ops::change_view(c, &op, &row, &change)?;
                    Ok(path)
                })
                .await
        }
    }
    .map_err(from_store)?;
    reply(json!({ "ok": true, "path": path }))
}

async fn get(call: Call) -> Result<Outcome, RpcError> {
    let p: GetParams = params(&call.params)?;
    let visibility = visibility_param(p.visibility.as_deref())?;
    let (rr, _) = run_ref(&call, &p.run).await?;
    let op = client_op(&call, rr);
    let count = call
        .deps
        .svc
        .store
        .write(move |c| ops::get(c, &op, &p.path, p.body_filter.as_deref(), visibility))
        .await
        .map_err(from_store)?;
    reply(json!({ "ok": true, "count": count }))
}

async fn rm(call: Call) -> Result<Outcome, RpcError> {
    let p: RmParams = params(&call.params)?;
    let (rr, _) = run_ref(&call, &p.run).await?;
    let op = client_op(&call, rr);
    let paths = call
        .deps
        .svc
        .store
        .write(move |c| ops::rm(c, &op, &p.path, p.body_filter.as_deref()))
        .await
        .map_err(from_store)?;
    reply(json!({ "ok": true, "paths": paths }))
}

async fn cp(call: Call) -> Result<Outcome, RpcError> {
    copy_or_move(call, false).await
}

async fn mv(call: Call) -> Result<Outcome, RpcError> {
    copy_or_move(call, true).await
}

async fn copy_or_move(call: Call, moving: bool) -> Result<Outcome, RpcError> {
    let p: MoveParams = params(&call.params)?;
    if let (Some(old), Some(new)) = (p.from.strip_prefix("run://"), p.to.strip_prefix("run://")) {
        if !moving {
            return Err(RpcError::invalid_param(
                "from",
                "runs are copied with a fork: set run://<new> with attributes.fork",
            ));
        }
        let run = find_run(&call, old).await?;
        let alias = new.to_owned();
        call.deps
            .registry
            .send(crate::registry::RenameRun {
                run,
                alias: alias.clone(),
            })
            .await
            .map_err(|e| crate::errors::internal(&e))??;
        return reply(json!({ "ok": true, "path": format!("run://{alias}") }));
    }
    let visibility = visibility_param(p.visibility.as_deref())?;
    let (rr, _) = run_ref(&call, &p.run).await?;
    let op = client_op(&call, rr);
    let path = call
        .deps
        .svc
        .store
        .write(move |c| {
            if moving {
                ops::mv(c, &op, &p.from, &p.to, visibility)
            } else {
                ops::cp(c, &op, &p.from, &p.to, visibility)
            }
        })
        .await
        .map_err(from_store)?;
    reply(json!({ "ok": true, "path": path }))
}

async fn update(call: Call) -> Result<Outcome, RpcError> {
    let p: UpdateParams = params(&call.params)?;
    let status = p.status.unwrap_or(102);
    if ![102, 200, 204, 422].contains(&status) {
        return Err(RpcError::invalid_param(
            "status",
            "expected 102, 200, 204 or 422",
        ));
    }
    let (rr, _) = run_ref(&call, &p.run).await?;
    let op = client_op(&call, rr);
    let path = call
        .deps
        .svc
        .store
        .write(move |c| ops::update(c, &op, &p.body, status, p.attributes.as_ref()))
        .await
        .map_err(from_store)?;
    reply(json!({ "ok": true, "path": path }))
}

/// A client's operation on a run, now.
fn client_op(call: &Call, run: RunRef) -> Op {
    let limits = &call.deps.svc.config.limits;
    Op {
        run,
        writer: Writer::Client,
        divisor: limits.token_divisor,
        max_entry_tokens: limits.max_entry_tokens,
        now: now(),
    }
}

/// `set {state}` on a pending proposal resolves it: resolved = accept, cancelled = reject, failed = error.
async fn resolve_if_proposed(
    call: &Call,
    alias: &str,
    rr: RunRef,
    path: &str,
    state: State,
    body: Option<String>,
) -> Result<Option<Outcome>, RpcError> {
    let path = rummy_core::path::normalize(path).map_err(|e| RpcError::invalid_param("path", e))?;
    let lookup = path.clone();
    let row = call
        .deps
        .svc
        .store
        .read(move |c| entries::by_path(c, rr.run_id, &lookup))
        .await
        .map_err(from_store)?;
    let Some(row) = row else { return Ok(None) };
    let was_proposal = row.attributes().get("commandIndex").is_some();
    if row.state() != State::Proposed {
        if was_proposal {
            return Err(RpcError::new(
                ErrorKind::Conflict,
                format!("{path} was already resolved (it is {})", row.state),
            ));
        }
        return Ok(None);
    }
    let decision = match state {
        State::Resolved => ProposalDecision::Accept(body),
        State::Cancelled => ProposalDecision::Reject(body),
        State::Failed => ProposalDecision::Error(body),
        _ => return Err(RpcError::invalid_param(
            "state",
            "a proposal is resolved with resolved (accept), cancelled (reject) or failed (error)",
        )),
    };
    let root = std::path::PathBuf::from(&project_of(call)?.root);
    let run = find_run(call, alias).await?;
    let resolve = crate::run::Resolve {
        path: path.clone(),
        decision,
        root,
        by: call.caller().and_then(Caller::user).map(str::to_owned),
    };
    let resolved = call
        .deps
        .registry
        .send(crate::registry::ResolveProposal { run, resolve })
        .await
        .map_err(|e| crate::errors::internal(&e))??;
    let mut answer = json!({
        "ok": true,
        "path": path,
        "state": resolved.state.as_str(),
        "outcome": resolved.outcome,
    });
    // An accepted sh/env: who runs it (a client told `client` runs it and streams it back).
    if crate::proposals::awaits_output(&resolved) {
        answer["runner"] = json!(call.deps.svc.config.commands.runner.as_str());
        answer["channels"] = json!([format!("{path}_1"), format!("{path}_2")]);
    }
    Ok(Some(Outcome::Reply(answer)))
}

async fn stream(call: Call) -> Result<Outcome, RpcError> {
    let p: StreamParams = params(&call.params)?;
    let (rr, _) = run_ref(&call, &p.run).await?;
    let divisor = call.deps.svc.config.limits.token_divisor;
    call.deps
        .svc
        .store
        .write(move |c| {
            let at = StreamWrite {
                run: rr,
                divisor,
                now: now(),
            };
            streams::append(c, at, &p.path, p.channel, &p.chunk)
        })
        .await
        .map_err(from_store)?;
    reply(json!({ "ok": true }))
}

/// Settles the channels of the stream at `path` of `run` with `end`, and pushes the run's state.
async fn settle(
    call: &Call,
    alias: &str,
    path: &str,
    end: StreamEnd,
) -> Result<Vec<String>, RpcError> {
    let run = find_run(call, alias).await?;
    let rr = RunRef {
        run_id: run.id,
        project_id: run.project_id,
    };
    let divisor = call.deps.svc.config.limits.token_divisor;
    let settled = path.to_owned();
    let path = path.to_owned();
    let (channels, pushed) = call
        .deps
        .svc
        .store
        .write(move |c| {
            let at = StreamWrite {
                run: rr,
                divisor,
                now: now(),
            };
            let channels = streams::settle(c, at, &path, &end)?;
            // The run's status as of this write: read before it, a loop that ended meanwhile
            // would be pushed as still working after its final state.
            let stored = runs::by_id(c, rr.run_id)?;
            let pushed = rummy_core::turn::state::push(
                c,
                rr.run_id,
                stored.last_turn(),
                stored.status,
                Value::Null,
                now(),
            )?;
            Ok((channels, pushed))
        })
        .await
        .map_err(from_store)?;
    // The turn waiting for this output goes on; a command the server runs is killed.
    call.deps.svc.commands.settled(rr.run_id, &settled);
    call.deps
        .svc
        .publish_state(rr.project_id, &run.alias, &pushed);
    Ok(channels)
}

async fn stream_completed(call: Call) -> Result<Outcome, RpcError> {
    let p: StreamCompletedParams = params(&call.params)?;
    let end = StreamEnd::Completed {
        exit_code: p.exit_code.unwrap_or(0),
        duration: p.duration,
    };
    let channels = settle(&call, &p.run, &p.path, end).await?;
    reply(json!({ "ok": true, "channels": channels }))
}

async fn stream_aborted(call: Call) -> Result<Outcome, RpcError> {
    let p: StreamAbortedParams = params(&call.params)?;
    let end = StreamEnd::Aborted {
        reason: p.reason,
        duration: p.duration,
    };
    let channels = settle(&call, &p.run, &p.path, end).await?;
    reply(json!({ "ok": true, "channels": channels }))
}

async fn stream_cancel(call: Call) -> Result<Outcome, RpcError> {
    let p: StreamCancelParams = params(&call.params)?;
    let project_id = project_of(&call)?.project_id;
    let end = StreamEnd::Cancelled {
        reason: p.reason.clone(),
    };
    let channels = settle(&call, &p.run, &p.path, end).await?;
    let reason = p.reason.unwrap_or_else(|| "cancelled".to_owned());
    call.deps.svc.publish(
        project_id,
        &p.run,
        "stream/cancelled",
        json!({ "run": p.run, "path": p.path, "reason": reason }),
    );
    reply(json!({ "ok": true, "channels": channels }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    /// `discover` lists exactly the params each method's params type accepts, aliases included:
    /// a field added to a params struct and not to the catalogue (or the reverse) fails here.
    #[test]
    fn the_catalogue_lists_what_each_params_type_accepts() {
        for route in ROUTES {
            let mut listed: Vec<&str> = route
                .spec
                .params
                .iter()
                .flat_map(|p| p.spellings())
                .collect();
            let mut accepted = (route.fields)().to_vec();
            listed.sort_unstable();
            accepted.sort_unstable();
            assert_eq!(listed, accepted, "{}", route.spec.name);
        }
    }

    /// The run attributes `set` lists are those a run start or configure accepts.
    #[test]
    fn the_run_attributes_listed_are_those_accepted() {
        let set = methods::SET.params.iter().find(|p| p.name == "attributes");
        let listed = set.map(|p| p.description).unwrap_or_default();
        for field in rummy_core::wire::params::fields_of::<RunAttributes>() {
            assert!(listed.contains(field), "attributes.{field} is not listed");
        }
    }
}
