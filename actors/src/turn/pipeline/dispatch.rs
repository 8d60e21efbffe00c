//! Dispatch: the reply's commands run in order, in batches — one transaction up to the first that waits (a proposal pauses the turn; a search waits for its backend; a body filter is judged off the writer) — each command with its `run/state`, published after the batch committed.
//!
//! The batches are core's ([`rummy_core::turn::batch`]); this phase moves where dispatch stands
//! into each batch's write and back, publishes, answers a search, announces a proposal, and
//! ends the turn in the last batch's write when nothing waited and the context surely still
//! fits ([`end::fits_after_dispatch`](super::end::fits_after_dispatch)).

use super::context::Assembled;
use super::end::{self, EndInput};
use super::{failure, loop_flags};
use crate::clock::now;
use crate::services::Services;
use crate::turn::{Decision, TurnEnd, TurnFailure, TurnJob};
use rummy_core::tools::context::SkillTools;
use rummy_core::turn::batch::Commands;
use rummy_core::turn::dispatch::{DispatchCtx, DispatchLimits, LoopFlags};
use rummy_core::turn::streams::{self, StreamWrite};
use rummy_core::turn::TurnRef;
use rummy_core::wire::notifications::{Proposed, RunProposal};
use rummy_core::wire::{bounded, notices};
use rummy_store::entry::State;
use rummy_store::ids::TurnId;
use rummy_store::selection::Judgements;
use rummy_store::{entries, skills, turns, StoreError};
use rummy_text::parse::{parse_reply, ToolName};
use serde_json::{json, Value};
use std::sync::Arc;
use tracing::Instrument;

/// Store work that must commit with the first dispatched commands.
pub(super) type Prelude =
    Box<dyn FnOnce(&mut rummy_store::db::Db) -> Result<(), StoreError> + Send>;

/// A reply on its way through dispatch: what the batches and the turn's end need.
pub(super) struct Dispatching {
    /// The turn.
    pub t: TurnRef,
    /// Its row.
    pub turn_id: TurnId,
    /// The reply's commands and where their dispatch stands.
    pub commands: Commands,
    /// The reply's text outside commands (the referee reads it).
    pub prose: String,
    /// What the turn-end `run/state` carries.
    pub telemetry: Value,
    /// The prompt as assembled for this turn's call (`None` for a resumed turn).
    pub assembled: Option<Assembled>,
    /// Writes that commit with the first batch (the reply's record, or a resumed turn's
    /// command no longer awaited).
    pub prelude: Option<Prelude>,
    /// The loop's flags with the tools the run's active skills allow: those the turn's
    /// instructions offered (a resumed turn reads its skills again).
    pub flags: LoopFlags,
}

/// Dispatches the pending commands, pausing at a proposal; then the turn's end.
pub(super) async fn dispatch(
    svc: &Services,
    job: &TurnJob,
    dispatching: Dispatching,
) -> Result<TurnEnd, TurnFailure> {
    let Dispatching {
        t,
        turn_id,
        mut commands,
        prose,
        telemetry,
        assembled,
        mut prelude,
        flags,
    } = dispatching;
    let limits = &svc.config.limits;
    // The model's web fetch, where the server allows it and the loop has the web: the
    // project's domains as they stand now (`None` where its admin has not turned it on).
    let web_domains = match (&svc.web, flags.no_web) {
        (Some(_), false) => {
            let project_id = t.run.project_id;
            svc.store
                .read(move |c| rummy_store::projects::web_domains(c, project_id))
                .await
                .map_err(failure)?
                .map(std::sync::Arc::from)
        }
        _ => None,
    };
    let ctx = DispatchCtx {
        t,
        limits: DispatchLimits {
            token_divisor: limits.token_divisor,
            max_entry_tokens: limits.max_entry_tokens,
            bounds: svc.store.bounds(),
        },
        mode: job.mode,
        flags,
        command_index: 0,
        search_enabled: svc.search.is_some(),
        runner: svc.config.shell.runner,
        client_tools: svc
            .client_tools
            .offered(job.run.project_id, &job.alias)
            .into(),
        web_domains,
    };
    let end = EndInput::new(job, turn_id, prose, telemetry, ctx.clone());
    let (context_size, ceiling) = (job.context_size, limits.budget_ceiling);
    // The body filters judged so far in this turn (the write holds the only other reference
    // while it runs, so adding to it copies nothing).
    let mut judged = Arc::new(Judgements::default());
    while commands.pending() || prelude.is_some() {
        let (first, end_input, domains) = (prelude.take(), end.clone(), ctx.web_domains.clone());
        let ctx = ctx.clone();
        let judgements = Arc::clone(&judged);
        let (back, batch, ended) = svc
            .store
            .write(move |c| {
                if let Some(first) = first {
                    first(c)?;
                }
                let now = now();
                let mut batch = commands.dispatch_batch(c, &ctx, now, &judgements)?;
                // Nothing left to wait for: end the turn here when the context surely fits.
                let ended = match (batch.waits(), assembled) {
                    (false, Some(a))
                        if end::fits_after_dispatch(c, t, a, context_size, ceiling)? =>
                    {
                        Some(end::end_turn(c, end_input, &commands)?)
                    }
                    _ => None,
                };
                if ended.is_none() {
                    batch.push_last(c, t, ctx.limits.bounds, now)?;
                }
                Ok((commands, batch, ended))
            })
            .instrument(tracing::info_span!("commit"))
            .await
            .map_err(failure)?;
        commands = back;
        let unjudged = batch.unjudged;
        for (done, params) in batch.dispatched {
            if let Some(params) = &params {
                svc.publish_state(t.run.project_id, &job.alias, params);
            }
            if done.state == State::Proposed {
                announce_proposal(svc, job, t, &done.path).await?;
                return Ok(TurnEnd {
                    decision: Decision::Paused { path: done.path },
                    referee: job.referee.clone(),
                    next: None,
                });
            }
            if done.waits() {
                // A search, or a web page of the project's domains: answered before the turn
                // goes on; a failed one aborts the rest.
                let answered = crate::turn::search::answer(svc, job, t, done).await?;
                let answered =
                    crate::turn::fetch::answer(svc, job, t, answered, domains.as_deref()).await?;
                commands.note(&answered);
            }
        }
        if let Some(call) = unjudged {
            // The next command's body filter, judged off the writer; the next batch dispatches
            // it with the judgement (judged anew if its entries changed meanwhile).
            if Arc::make_mut(&mut judged).exhausted(&call) {
                Arc::make_mut(&mut judged).give_up(call);
            } else {
                let verdict = crate::turn::filters::judge(svc, t.run.run_id, call.clone())
                    .instrument(tracing::info_span!("filter", pattern = %call.pattern))
                    .await
                    .map_err(failure)?;
                Arc::make_mut(&mut judged).insert(call, verdict);
            }
        }
        if let Some(ended) = ended {
            return Ok(end::published_end(svc, job, t, ended));
        }
    }
    end::after_dispatch(svc, job, t, end, commands, assembled).await
}

/// A paused turn going on: its reply read back from `assistant://<turn>`, to dispatch from
/// `next_index`. The command it `awaited`, if any, stops being awaited in the first write.
pub(super) async fn resumed(
    svc: &Services,
    job: &TurnJob,
    turn: i32,
    next_index: usize,
    aborted_by: Option<ToolName>,
    awaited: Option<String>,
) -> Result<Dispatching, TurnFailure> {
    let run = job.run;
    let (turn_id, reply, usage, skills) = svc
        .store
        .read(move |c| {
            let tokens = turns::tokens_of(c, run.run_id, turn)?;
            let reply = entries::by_path(c, run.run_id, &format!("assistant://{turn}"))?.map(|r| r.body).unwrap_or_default();
            let usage = json!({ "promptTokens": tokens.prompt, "completionTokens": tokens.completion, "totalTokens": tokens.total });
            Ok((tokens.id, reply, usage, skills::active(c, run.run_id)?))
        })
        .await
        .map_err(failure)?;
    let parsed = parse_reply(&reply, svc.config.limits.max_commands);
    let divisor = svc.config.limits.token_divisor;
    let prelude = awaited.map(|path| -> Prelude {
        Box::new(move |c| {
            let at = StreamWrite {
                run,
                ctx: crate::clock::write_ctx(divisor),
            };
            streams::stop_awaiting(c, at, &path)
        })
    });
    Ok(Dispatching {
        t: TurnRef {
            run,
            loop_id: job.loop_id,
            turn,
        },
        turn_id,
        commands: Commands::resume_at(&parsed.commands, next_index, aborted_by),
        prose: parsed.unparsed,
        telemetry: json!({ "model": job.model_alias, "usage": usage, "resumed": true }),
        assembled: None,
        prelude,
        flags: LoopFlags {
            skill_tools: SkillTools::of_attributes(&skills),
            ..loop_flags(job)
        },
    })
}

/// Sends `run/proposal` with what a client needs to decide, and the `ui/notify` that the run
/// waits for a decision.
async fn announce_proposal(
    svc: &Services,
    job: &TurnJob,
    t: TurnRef,
    path: &str,
) -> Result<(), TurnFailure> {
    let (run_id, lookup) = (t.run.run_id, path.to_owned());
    let row = svc
        .store
        .read(move |c| entries::by_path(c, run_id, &lookup))
        .await
        .map_err(failure)?;
    if let Some(row) = row {
        let attributes = row.attribute_map();
        let kind = row.proposal();
        tracing::info!(
            path = %row.path,
            kind = kind.map(|k| k.as_str()),
            "proposal raised"
        );
        let hash = row.proposal_hash();
        let cut = bounded::inline(&row.body, svc.store.bounds().inline_body_bytes);
        let proposed = Proposed {
            attributes,
            hash,
            turn: i64::from(row.turn),
            body: cut.text.to_owned(),
            body_bytes: cut
                .truncated_from
                .map(|n| i64::try_from(n).unwrap_or(i64::MAX)),
            body_truncated: cut.truncated_from.is_some(),
            path: row.path,
            proposal: kind,
        };
        // The people of the project hear of the wait, wherever they look: one notice per
        // proposal the turn pauses on.
        let notice = notices::waiting(&job.alias, kind.unwrap_or_default(), &proposed.attributes);
        let proposal = RunProposal {
            proposed: vec![proposed],
            run: job.alias.to_string(),
        };
        svc.push(t.run.project_id, &job.alias, &proposal);
        svc.push(t.run.project_id, &job.alias, &notice);
    }
    Ok(())
}
