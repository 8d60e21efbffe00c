//! The routing table: each protocol method paired with its handler; `discover` is generated from it.

use crate::clock::now;
use crate::errors::from_store;
use crate::registry::{validate_settings, CancelRun, ConfigureRun, ContinueRun, InjectRun, RunRegistry, StartRun};
use crate::services::Services;
use actix::Addr;
use futures_util::future::LocalBoxFuture;
use rummy_core::config::ModelSeed;
use rummy_core::entry::{http_status, State, Visibility};
use rummy_core::run::Mode;
use rummy_core::store::entries::{self, EntryFilter};
use rummy_core::store::runs::Run;
use rummy_core::store::{models, notifications, projects, runs};
use rummy_core::time::Millis;
use rummy_core::turn::state::snapshot;
use rummy_core::wire::jsonrpc::{params, PROTOCOL_VERSION};
use rummy_core::wire::methods::{self, MethodSpec};
use rummy_core::wire::params::{
    AddModelParams, AliasParams, GetEntriesParams, GetRunParams, HelloParams, Page, RunAttributes,
    SetParams,
};
use rummy_core::wire::{ErrorKind, RpcError};
use serde_json::{json, Value};
use std::path::Path;

/// What a session's handlers reach.
#[derive(Clone)]
pub struct SessionDeps {
    /// Shared services.
    pub svc: Services,
    /// Runs.
    pub registry: Addr<RunRegistry>,
}

/// The project a session is bound to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Binding {
    /// Project id.
    pub project_id: i32,
    /// Project name.
    pub name: String,
    /// Project root.
    pub root: String,
}

/// One call as a handler sees it.
pub struct Call {
    /// Services.
    pub deps: SessionDeps,
    /// The session's project, if bound.
    pub project: Option<Binding>,
    /// The params.
    pub params: Value,
}

/// A handler's success.
pub enum Outcome {
    /// Answer with this result.
    Reply(Value),
    /// Bind the session to a project, then answer.
    Bind(Binding, Value),
}

type Answer = LocalBoxFuture<'static, Result<Outcome, RpcError>>;

/// A method and its handler.
pub struct Route {
    /// The documented method.
    pub spec: &'static MethodSpec,
    /// Its handler.
    pub handler: fn(Call) -> Answer,
}

macro_rules! route {
    ($spec:expr, $handler:ident) => {
        Route {
            spec: &$spec,
            handler: |call| Box::pin($handler(call)),
        }
    };
}

/// Every method this server serves.
static ROUTES: &[Route] = &[
    route!(methods::PING, ping),
    route!(methods::DISCOVER, discover),
    route!(methods::HELLO, hello),
    route!(methods::GET_MODELS, get_models),
    route!(methods::ADD_MODEL, add_model),
    route!(methods::REMOVE_MODEL, remove_model),
    route!(methods::GET_RUNS, get_runs),
    route!(methods::GET_RUN, get_run),
    route!(methods::GET_ENTRIES, get_entries),
    route!(methods::SET, set),
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

async fn ping(_: Call) -> Result<Outcome, RpcError> {
    reply(json!({}))
}

async fn discover(_: Call) -> Result<Outcome, RpcError> {
    reply(catalogue())
}

async fn hello(call: Call) -> Result<Outcome, RpcError> {
    let p: HelloParams = params(&call.params)?;
    if p.name.trim().is_empty() {
        return Err(RpcError::invalid_param("name", "must not be empty"));
    }
    if !Path::new(&p.project_root).is_absolute() {
        return Err(RpcError::invalid_param(
            "projectRoot",
            "must be an absolute path",
        ));
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
    let (name, root) = (p.name.clone(), p.project_root.clone());
    let project = call
        .deps
        .svc
        .store
        .write(move |c| projects::hello(c, &name, &root, p.config_path.as_deref(), now()))
        .await
        .map_err(from_store)?;
    let result = json!({
        "rummyVersion": env!("CARGO_PKG_VERSION"),
        "protocolVersion": PROTOCOL_VERSION,
        "projectId": project.id,
        "projectRoot": project.project_root,
    });
    let binding = Binding {
        project_id: project.id,
        name: project.name,
        root: project.project_root,
    };
    Ok(Outcome::Bind(binding, result))
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
                .map(|r| Ok((entries::latest_summary(c, r.id)?, r)))
                .collect::<Result<Vec<_>, _>>()
        })
        .await
        .map_err(from_store)?;
    let items = list
        .into_iter()
        .map(|(summary, r)| {
            json!({ "run": r.alias, "status": r.status, "turn": r.last_turn(), "model": r.model,
                    "summary": summary, "created": Millis(r.created_at).to_rfc3339() })
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
    reply(state)
}

async fn get_entries(call: Call) -> Result<Outcome, RpcError> {
    let p: GetEntriesParams = params(&call.params)?;
    if p.pattern.as_deref().is_some_and(|x| x != "*") || p.body_filter.is_some() {
        let param = if p.body_filter.is_some() {
            "bodyFilter"
        } else {
            "pattern"
        };
        return Err(RpcError::invalid_param(param, "pattern matching is not available on this server yet; filter by scheme, state or visibility"));
    }
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
    let filter = EntryFilter {
        scheme: p.scheme.clone(),
        state,
        visibility,
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
        return Err(RpcError::invalid_param(
            "path",
            "only run://<alias> can be set on this server yet (start, continue, inject, configure or cancel a run)",
        ));
    };
    let project_id = project_of(&call)?.project_id;
    let attributes: RunAttributes = match &p.attributes {
        Some(map) => params(&Value::Object(map.clone())).map_err(|e| {
            RpcError::new(ErrorKind::InvalidParams, e.message.replace("invalid params: ", "invalid params: attributes."))
        })?,
        None => RunAttributes::default(),
    };
    let existing = if alias.is_empty() { None } else { Some(find_run(&call, alias).await) };
    let registry = &call.deps.registry;
    let sent = |e: actix::MailboxError| crate::errors::internal(&e);
    match (p.state.as_deref(), p.body) {
        (Some("cancelled"), _) => {
            let run = existing.ok_or_else(|| RpcError::invalid_param("path", "name the run to cancel"))??;
            registry.send(CancelRun { run }).await.map_err(sent)??;
            reply(json!({ "ok": true, "alias": alias }))
        }
        (Some(other), _) => Err(RpcError::invalid_param("state", format!("a run accepts only state \"cancelled\", not \"{other}\""))),
        (None, Some(body)) => match existing {
            Some(Ok(run)) => {
                let alias = run.alias.clone();
                if attributes.fork.is_some() {
                    return Err(RpcError::new(ErrorKind::Conflict, format!("run \"{alias}\" already exists; fork into a new alias")));
                }
                if attributes.inject {
                    let injected = registry.send(InjectRun { run, prompt: body }).await.map_err(sent)??;
                    return reply(json!({ "ok": true, "alias": alias, "injected": injected }));
                }
                let mode = validate_settings(&attributes)?.unwrap_or(Mode::Ask);
                registry.send(ContinueRun { run, prompt: body, mode }).await.map_err(sent)??;
                reply(json!({ "ok": true, "alias": alias }))
            }
            Some(Err(e)) if e.kind != ErrorKind::NotFound => Err(e),
            _ => {
                let start = StartRun { project_id, alias: (!alias.is_empty()).then(|| alias.to_owned()), prompt: body, attributes };
                let alias = registry.send(start).await.map_err(sent)??;
                reply(json!({ "ok": true, "alias": alias }))
            }
        },
        (None, None) if p.attributes.is_some() => {
            let run = existing.ok_or_else(|| RpcError::invalid_param("path", "name the run to configure"))??;
            let alias = run.alias.clone();
            registry.send(ConfigureRun { run, attributes }).await.map_err(sent)??;
            reply(json!({ "ok": true, "alias": alias }))
        }
        (None, None) => Err(RpcError::invalid_param("body", "a run:// set needs a body (prompt), attributes (configure) or state \"cancelled\"")),
    }
}
