//! `RunRegistry`: finds or starts the `RunActor` of a (project, alias), starts runs, and recovers runs a crash left mid-loop.

use crate::clock::now;
use crate::errors::{from_store, internal};
use crate::run::{Cancel, QueueLoop, RunActor, Wake};
use crate::services::Services;
use actix::prelude::*;
use rummy_core::run::Mode;
use rummy_core::store::entries::RunRef;
use rummy_core::store::runs::{self, NewRun, Run};
use rummy_core::store::{loops, models};
use rummy_core::turn::recovery;
use rummy_core::wire::params::RunAttributes;
use rummy_core::wire::{ErrorKind, RpcError};
use serde_json::json;
use std::collections::HashMap;

/// Starts a new run with its first loop; answers the run's alias.
#[derive(Message)]
#[rtype(result = "Result<String, RpcError>")]
pub struct StartRun {
    /// The project.
    pub project_id: i32,
    /// The requested alias, or `None` for a server-made one.
    pub alias: Option<String>,
    /// The first prompt.
    pub prompt: String,
    /// Model, mode and settings.
    pub attributes: RunAttributes,
}

/// Queues a new loop on an existing run.
#[derive(Message)]
#[rtype(result = "Result<(), RpcError>")]
pub struct ContinueRun {
    /// The stored run.
    pub run: Run,
    /// The prompt.
    pub prompt: String,
    /// The loop's mode.
    pub mode: Mode,
}

/// Cancels the run's active loop, if any.
#[derive(Message)]
#[rtype(result = "Result<(), RpcError>")]
pub struct CancelRun {
    /// The stored run.
    pub run: Run,
}

/// Recovers runs a crash left mid-loop, then runs their queued loops.
#[derive(Message)]
#[rtype(result = "Result<usize, String>")]
pub struct Recover;

/// Keeps one `RunActor` per run.
pub struct RunRegistry {
    svc: Services,
    runs: HashMap<i32, Addr<RunActor>>,
}

impl RunRegistry {
    /// A registry over the shared services.
    pub fn new(svc: Services) -> Self {
        RunRegistry {
            svc,
            runs: HashMap::new(),
        }
    }

    fn actor(&mut self, run_id: i32, project_id: i32, alias: &str) -> Addr<RunActor> {
        let svc = self.svc.clone();
        self.runs
            .entry(run_id)
            .or_insert_with(|| RunActor::new(svc, RunRef { run_id, project_id }, alias).start())
            .clone()
    }
}

impl Actor for RunRegistry {
    type Context = Context<Self>;
}

fn validate(attributes: &RunAttributes) -> Result<(String, Mode), RpcError> {
    let model = attributes
        .model
        .clone()
        .filter(|m| !m.trim().is_empty())
        .ok_or_else(|| RpcError::invalid_param("attributes.model", "required to start a run"))?;
    let mode = match attributes.mode.as_deref() {
        None => Mode::Ask,
        Some(m) => Mode::parse(m).ok_or_else(|| {
            RpcError::invalid_param("attributes.mode", "expected \"ask\" or \"act\"")
        })?,
    };
    if attributes
        .temperature
        .is_some_and(|t| !(0.0..=2.0).contains(&t))
    {
        return Err(RpcError::invalid_param(
            "attributes.temperature",
            "expected a number from 0 to 2",
        ));
    }
    if attributes.context_limit.is_some_and(|l| l < 1024) {
        return Err(RpcError::invalid_param(
            "attributes.contextLimit",
            "expected at least 1024",
        ));
    }
    if attributes.fork.is_some() {
        return Err(RpcError::invalid_param(
            "attributes.fork",
            "forking runs is not available on this server yet",
        ));
    }
    Ok((model, mode))
}

/// The loop flags stored with each loop.
fn loop_config(a: &RunAttributes) -> serde_json::Value {
    json!({ "noRepo": a.no_repo, "noInteraction": a.no_interaction, "noWeb": a.no_web, "noProposals": a.no_proposals })
}

impl Handler<StartRun> for RunRegistry {
    type Result = ResponseActFuture<Self, Result<String, RpcError>>;

    fn handle(&mut self, msg: StartRun, _: &mut Context<Self>) -> Self::Result {
        let svc = self.svc.clone();
        let started = async move {
            let (model_alias, mode) = validate(&msg.attributes)?;
            let lookup = model_alias.clone();
            let model = svc
                .store
                .read(move |c| models::by_alias(c, &lookup))
                .await
                .map_err(from_store)?
                .ok_or_else(|| {
                    RpcError::new(
                        ErrorKind::NotFound,
                        format!("model \"{model_alias}\" is not defined: addModel it or set RUMMY_MODEL_{model_alias}=<provider>/<model>"),
                    )
                })?;
            svc.providers
                .route(&model)
                .map_err(|m| RpcError::new(ErrorKind::NotFound, m))?;
            let a = msg.attributes;
            let new = NewRun {
                project_id: msg.project_id,
                alias: msg.alias,
                model: model.alias.clone(),
                temperature: a.temperature,
                persona: a.persona.clone(),
                context_limit: a.context_limit,
            };
            let config = loop_config(&a);
            let prompt = msg.prompt;
            svc.store
                .write(move |c| {
                    let run = runs::create(c, &new, now())?;
                    loops::enqueue(c, run.id, mode, &new.model, &prompt, &config, now())?;
                    Ok(run)
                })
                .await
                .map_err(from_store)
        };
        Box::pin(started.into_actor(self).map(|res, act, _| {
            let run = res?;
            tracing::info!(run = %run.alias, project = run.project_id, "run started");
            act.actor(run.id, run.project_id, &run.alias).do_send(Wake);
            Ok(run.alias)
        }))
    }
}

impl Handler<ContinueRun> for RunRegistry {
    type Result = ResponseFuture<Result<(), RpcError>>;

    fn handle(&mut self, msg: ContinueRun, _: &mut Context<Self>) -> Self::Result {
        let actor = self.actor(msg.run.id, msg.run.project_id, &msg.run.alias);
        let queue = QueueLoop {
            mode: msg.mode,
            model: msg.run.model.clone(),
            prompt: msg.prompt,
            config: json!({}),
        };
        Box::pin(async move {
            actor
                .send(queue)
                .await
                .map_err(|e| internal(&e))?
                .map_err(from_store)
        })
    }
}

impl Handler<CancelRun> for RunRegistry {
    type Result = ResponseFuture<Result<(), RpcError>>;

    fn handle(&mut self, msg: CancelRun, _: &mut Context<Self>) -> Self::Result {
        let actor = self.runs.get(&msg.run.id).cloned();
        Box::pin(async move {
            if let Some(actor) = actor {
                actor.send(Cancel).await.map_err(|e| internal(&e))?;
            }
            Ok(())
        })
    }
}

impl Handler<Recover> for RunRegistry {
    type Result = ResponseActFuture<Self, Result<usize, String>>;

    fn handle(&mut self, _: Recover, _: &mut Context<Self>) -> Self::Result {
        let svc = self.svc.clone();
        let divisor = svc.config.limits.token_divisor;
        let recovered = async move {
            svc.store
                .write(move |c| recovery::recover(c, divisor, now()))
                .await
                .map_err(|e| e.to_string())
        };
        Box::pin(recovered.into_actor(self).map(|res, act, _| {
            let report = res?;
            for (project_id, alias, params) in &report.pushed {
                act.svc
                    .publish(*project_id, alias, "run/state", params.clone());
            }
            for run in &report.to_wake {
                act.actor(run.id, run.project_id, &run.alias).do_send(Wake);
            }
            Ok(report.interrupted)
        }))
    }
}
