//! Claiming: the run wakes, asks admission for a place when a fair-use limit applies, claims its
//! next queued loop from the [`LoopQueue`](crate::loop_queue::LoopQueue), and prepares it (its
//! route, its model's context length) to run.

use super::{AwaitPlace, Current, RunActor, Wake};
use crate::admission::{Acquire, Admit, Admitted};
use crate::clock::now;
use crate::loop_queue::{ClaimNext, Claimed};
use crate::provider::undefined_model;
use crate::turn::TurnJob;
use actix::prelude::*;
use rummy_core::fair::admission::Ask;
use rummy_core::orchestration::{self as orch, Input, Look, Paused};
use rummy_core::turn::verdict::{Referee, RefereeLimits};
use rummy_store::entries::RunRef;
use rummy_store::{loops, runs};
use std::sync::Arc;

/// A restored loop's pause, as the machine carries it.
type Pause = Paused<super::OutputWait>;

impl RunActor {
    /// Claims the next queued loop. `admitted`: admission gave the run a place for it.
    pub(super) fn claim(&mut self, admitted: bool, ctx: &mut Context<Self>) {
        let claim = self
            .queue
            .send(ClaimNext)
            .into_actor(self)
            .map(move |res, act, ctx| {
                let claimed = match res {
                    Ok(Ok(claimed)) => claimed,
                    Ok(Err(e)) => {
                        tracing::error!(run = %act.alias, error = %e, "cannot claim the next loop");
                        None
                    }
                    Err(e) => {
                        tracing::error!(run = %act.alias, error = %e, "loop queue unavailable");
                        None
                    }
                };
                act.step(Input::Claimed { admitted, claimed }, ctx);
            });
        ctx.spawn(claim);
    }

    /// Looks for a queued loop and asks admission for a place for it.
    pub(super) fn look_for_place(&mut self, ctx: &mut Context<Self>) {
        let RunRef { run_id, project_id } = self.run;
        let store = self.svc.store.clone();
        let admission = self.svc.admission.clone();
        let wake = ctx.address().recipient();
        let asked = async move {
            let next = store
                .read(move |c| {
                    let Some((loop_id, since)) = loops::next_queued(c, run_id)? else {
                        return Ok(None);
                    };
                    Ok(Some((loop_id, since, runs::by_id(c, run_id)?.user)))
                })
                .await
                .map_err(|e| e.to_string())?;
            let Some((loop_id, since, user)) = next else {
                return Ok(None);
            };
            let ask = Ask {
                run_id,
                project_id,
                user,
                since: since.unwrap_or_else(now),
                going_on: false,
            };
            admission
                .acquire(Acquire { ask, loop_id, wake })
                .await
                .map(Some)
                .map_err(|e| format!("admission unavailable: {e}"))
        };
        let answered = asked.into_actor(self).map(|res, act, ctx| {
            let look = match res {
                Ok(None) => Look::Nothing,
                Ok(Some(Admit::Granted)) => Look::Asked(orch::Admit::Granted),
                Ok(Some(Admit::Queued(queued))) => {
                    tracing::debug!(run = %act.alias, reason = queued.reason.as_str(), position = queued.position, "waiting for a place");
                    Look::Asked(orch::Admit::Queued(queued))
                }
                Err(e) => {
                    tracing::error!(run = %act.alias, error = %e, "cannot ask for a place");
                    Look::Failed
                }
            };
            act.step(Input::Looked(look), ctx);
        });
        ctx.spawn(answered);
    }

    /// Learns the claimed loop's context length — asking the model's provider (and caching
    /// the answer in `models`) when the store does not know it — then starts the loop. A
    /// restored loop asks nothing: it ran before the restart, so any context length its
    /// provider gave was cached then, and its pending proposal must be resolvable at once.
    pub(super) fn prepare_loop(
        &mut self,
        claimed: Claimed,
        paused: Option<Pause>,
        ctx: &mut Context<Self>,
    ) {
        let model = match &claimed.model {
            Some(m) if m.context_length.is_none() && paused.is_none() => m.clone(),
            known_or_missing => {
                let model_context = known_or_missing.as_ref().and_then(|m| m.context_length);
                return self.start_loop(claimed, model_context, paused, ctx);
            }
        };
        let providers = self.svc.providers.clone();
        let discover = async move { providers.context_length(&model).await };
        let start = discover
            .into_actor(self)
            .map(|model_context, act, ctx| act.start_loop(claimed, model_context, None, ctx));
        ctx.spawn(start);
    }

    /// Builds the claimed loop's turn job; the machine then starts its first turn (or, with
    /// `paused`, waits as the restored loop did). `model_context` is the loop's model's context
    /// length, if known.
    fn start_loop(
        &mut self,
        claimed: Claimed,
        model_context: Option<i32>,
        paused: Option<Pause>,
        ctx: &mut Context<Self>,
    ) {
        let Claimed {
            loop_row,
            run,
            model,
            command_network,
        } = claimed;
        self.user.clone_from(&run.user);
        // As the claim read it: an actor started just before a rename committed takes it here.
        self.rename(&run.alias);
        let routed = loop_row.routed();
        tracing::info!(
            run = %self.alias,
            loop_seq = loop_row.sequence,
            restored = paused.is_some(),
            model = %loop_row.model,
            route = routed.as_ref().map(|r| r.class.name()),
            "loop started"
        );
        let route = match &model {
            None => Err(match &routed {
                Some(r) if r.changes(&run.model) => {
                    format!("{} ({})", undefined_model(&r.model), r.why())
                }
                _ => format!("model \"{}\" is no longer defined", loop_row.model),
            }),
            Some(m) => self.svc.providers.route(m),
        };
        let mut route = match route {
            Ok(route) => route,
            Err(message) => {
                self.current = Some(Current {
                    loop_row,
                    job: None,
                });
                return self.step(Input::Prepared(Err(message)), ctx);
            }
        };
        let flags = loop_row.flags();
        // `fallback: false` on the run: its calls fail where they would have gone to the fallback.
        if !flags.fallback_allowed() {
            route.fallback = None;
        }
        let context_size = match (run.context_limit, model_context) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let recall = flags.recall.unwrap_or(self.svc.config.recall.enabled);
        let job = TurnJob {
            run: self.run,
            alias: Arc::clone(&self.alias),
            loop_id: loop_row.id,
            loop_number: loop_row.sequence,
            recall,
            prompt: loop_row.prompt.clone(),
            mode: loop_row.mode(),
            no_repo: flags.no_repo.unwrap_or(false),
            flags,
            first_in_loop: true,
            next_allowed: false,
            model_alias: loop_row.model.clone(),
            route,
            temperature: run
                .temperature
                .unwrap_or(self.svc.config.limits.temperature),
            persona: run.persona.clone(),
            context_size,
            command_network: command_network.unwrap_or(self.svc.config.shell.sandbox.network),
            referee: Referee::new(RefereeLimits::from(&self.svc.config.limits)),
            context: Arc::default(),
        };
        self.current = Some(Current {
            loop_row,
            job: Some(job),
        });
        self.step(Input::Prepared(Ok(paused)), ctx);
    }
}

impl Handler<Wake> for RunActor {
    type Result = ();

    fn handle(&mut self, _: Wake, ctx: &mut Context<Self>) {
        self.step(Input::Wake, ctx);
    }
}

impl Handler<Admitted> for RunActor {
    type Result = ();

    fn handle(&mut self, _: Admitted, ctx: &mut Context<Self>) {
        self.step(Input::Admitted, ctx);
    }
}

impl Handler<AwaitPlace> for RunActor {
    type Result = ();

    fn handle(&mut self, _: AwaitPlace, ctx: &mut Context<Self>) {
        self.step(Input::AwaitPlace, ctx);
    }
}
