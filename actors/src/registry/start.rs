//! Starting runs: a start's settings and model checked, a fork brought from its parent, and the run created with its first loop in one write.

use super::{run_ref, RunRegistry, StartRun};
use crate::clock::{now, write_ctx};
use crate::errors::from_store;
use crate::loop_queue;
use crate::provider::undefined_model;
use crate::run::{Begin, Wake};
use crate::services::Services;
use crate::session_state;
use actix::prelude::*;
use rummy_core::session_state::Occasion;
use rummy_core::wire::params::RunAttributes;
use rummy_core::wire::{ErrorKind, RpcError};
use rummy_provider::routing;
use rummy_store::entries::RunRef;
use rummy_store::flags::RunFlags;
use rummy_store::run::Mode;
use rummy_store::runs::{self, NewRun, Run};
use rummy_store::{entries, loops, models};

/// Checks the settings a start or configure carries (the model is checked against the store separately).
pub fn validate_settings(attributes: &RunAttributes) -> Result<Option<Mode>, RpcError> {
    let mode = match attributes.mode.as_deref() {
        None => None,
        Some(m) => Some(Mode::parse(m).ok_or_else(|| {
            RpcError::invalid_param("attributes.mode", "expected \"ask\" or \"act\"")
        })?),
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
    Ok(mode)
}

/// The loop flags a start or configure sets explicitly.
pub fn flags_of(a: &RunAttributes) -> RunFlags {
    RunFlags::of(a)
}

/// The model alias, checked to exist and to have a configured provider.
pub(super) async fn checked_model(svc: &Services, alias: &str) -> Result<models::Model, RpcError> {
    let lookup = alias.to_owned();
    let model = svc
        .store
        .read(move |c| models::by_alias(c, &lookup))
        .await
        .map_err(from_store)?
        .ok_or_else(|| RpcError::new(ErrorKind::NotFound, undefined_model(alias)))?;
    svc.providers
        .route(&model)
        .map_err(|m| RpcError::new(ErrorKind::NotFound, m))?;
    Ok(model)
}

/// With routing on in `flags`, checks the model the prompt will be routed to
/// like the run's own model, so a mapping to an undefined alias is refused at
/// once rather than failing the loop. (The loop still checks when it starts:
/// the model may be removed in between.)
pub(super) async fn checked_route(
    svc: &Services,
    flags: &RunFlags,
    prompt: &str,
    own_model: &str,
) -> Result<(), RpcError> {
    if !flags.routes() {
        return Ok(());
    }
    let routed = routing::decide(prompt, own_model, &svc.config.providers.routing);
    if !routed.changes(own_model) {
        return Ok(());
    }
    checked_model(svc, &routed.model)
        .await
        .map(drop)
        .map_err(|mut e| {
            e.message = format!("{} ({})", e.message, routed.why());
            e
        })
}

impl Handler<StartRun> for RunRegistry {
    type Result = ResponseActFuture<Self, Result<String, RpcError>>;

    fn handle(&mut self, msg: StartRun, _: &mut Context<Self>) -> Self::Result {
        let svc = self.svc.clone();
        let started = async move {
            let a = msg.attributes;
            let mode = validate_settings(&a)?;
            let parent = match &a.fork {
                None => None,
                Some(parent) => {
                    let (project_id, alias) = (msg.project_id, parent.clone());
                    let found = svc
                        .store
                        .read(move |c| runs::by_alias(c, project_id, &alias))
                        .await
                        .map_err(from_store)?;
                    Some(found.ok_or_else(|| {
                        RpcError::new(
                            ErrorKind::NotFound,
                            format!("run \"{parent}\" to fork from not found in this project"),
                        )
                    })?)
                }
            };
            let model_alias = a
                .model
                .clone()
                .filter(|m| !m.trim().is_empty())
                .or_else(|| parent.as_ref().map(|p| p.model.clone()))
                .ok_or_else(|| {
                    RpcError::invalid_param("attributes.model", "required to start a run")
                })?;
            let model = checked_model(&svc, &model_alias).await?;
            let flags = parent
                .as_ref()
                .map(Run::flags)
                .unwrap_or_default()
                .overlaid(&flags_of(&a));
            checked_route(&svc, &flags, &msg.prompt, &model.alias).await?;
            // The fork starts from its parent's session state, brought up to date once the start
            // is known to be valid (a run that keeps none, or did nothing since, is left as it
            // is).
            if let Some(p) = &parent {
                let from = RunRef {
                    run_id: p.id,
                    project_id: p.project_id,
                };
                let refreshed = session_state::refresh(&svc, from, Occasion::Fork, &p.model).await;
                tracing::debug!(run = %p.alias, ?refreshed, "session state before a fork");
            }
            // A fork runs in its parent's mode unless the start names one.
            let mode = mode.or(parent.as_ref().map(Run::mode)).unwrap_or_default();
            let new = NewRun {
                mode,
                project_id: msg.project_id,
                alias: msg.alias,
                model: model.alias.clone(),
                temperature: a
                    .temperature
                    .or(parent.as_ref().and_then(|p| p.temperature)),
                persona: a
                    .persona
                    .clone()
                    .or(parent.as_ref().and_then(|p| p.persona.clone())),
                context_limit: a
                    .context_limit
                    .or(parent.as_ref().and_then(|p| p.context_limit)),
                flags: flags.clone(),
                parent_run_id: parent.as_ref().map(|p| p.id),
                user: msg.user,
            };
            let (prompt, skills) = (msg.prompt, msg.skills);
            let divisor = svc.config.limits.token_divisor;
            let routing = svc.config.providers.routing.clone();
            // Under a fair-use limit the first loop waits in the queue until admission gives
            // it a place; otherwise it is claimed at once.
            let claim_now = !svc.admission.applies(msg.project_id);
            let me = svc.cluster.as_ref().map(|c| c.me().to_owned());
            svc.store
                .write(move |c| {
                    let run = runs::create(c, &new, now())?;
                    // With several processes, the process that starts a run holds it.
                    if let Some(me) = &me {
                        rummy_store::cluster::take(c, run.id, me, now())?;
                    }
                    if let Some(parent) = &parent {
                        runs::continue_numbering(c, run.id, parent)?;
                        entries::fork(c, run_ref(parent), run_ref(&run), now())?;
                    }
                    let to = run_ref(&run);
                    for (name, skill) in &skills {
                        rummy_store::skills::add(c, to, name, skill, write_ctx(divisor))?;
                    }
                    loops::enqueue(c, run.id, mode, &new.model, &prompt, &flags, now())?;
                    // The first loop is claimed here: one write fewer before the first turn.
                    let claimed = if claim_now {
                        loop_queue::claim(c, run.id, &routing)?
                    } else {
                        None
                    };
                    Ok((run, claimed))
                })
                .await
                .map_err(from_store)
        };
        Box::pin(started.into_actor(self).map(|res, act, ctx| {
            let (run, claimed) = res?;
            tracing::info!(run = %run.alias, project = run.project_id.0, "run started");
            if act.svc.cluster.is_some() {
                act.held.insert(run.id, now());
            }
            match claimed {
                Some(claimed) => act.do_send(run_ref(&run), &run.alias, Begin { claimed }, ctx),
                None => act.do_send(run_ref(&run), &run.alias, Wake, ctx),
            }
            Ok(run.alias)
        }))
    }
}
