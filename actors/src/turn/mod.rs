//! `TurnExecutor`: one turn's pipeline (ENGINE.md §3) — materialise, assemble, call the model, record, dispatch, judge.
//!
//! Short-lived: the `RunActor` starts one per turn and stops it to cancel.
//! Every step is a call into `rummy_core::turn`; writes go through the store.

use crate::clock::now;
use crate::provider::{Complete, ProviderEvent, Route};
use crate::services::Services;
use actix::prelude::*;
use rummy_core::entry::Category;
use rummy_core::files::sync;
use rummy_core::hedberg;
use rummy_core::parse::parse_reply;
use rummy_core::provider::{ChatMessage, Completion};
use rummy_core::run::Mode;
use rummy_core::store::constraints;
use rummy_core::store::entries::{context_rows, ViewRow};
use rummy_core::store::{projects, turns};
use rummy_core::tokens;
use rummy_core::tools;
use rummy_core::turn::assemble::{assemble, AssemblyInput};
use rummy_core::turn::dispatch::{dispatch, DispatchLimits, Dispatched};
use rummy_core::turn::healer::{Healer, TurnFacts, Verdict};
use rummy_core::turn::{record, state, TurnRef};
use serde_json::{json, Value};
use std::sync::Arc;
use tracing::Instrument;

/// Everything one turn needs, fixed when the turn starts.
#[derive(Clone)]
pub struct TurnJob {
    /// The run and project.
    pub run: rummy_core::store::entries::RunRef,
    /// The run's alias (for notifications).
    pub alias: Arc<str>,
    /// The active loop.
    pub loop_id: i32,
    /// The loop's prompt, recorded on its first turn.
    pub prompt: String,
    /// The loop's mode.
    pub mode: Mode,
    /// Whether this is the loop's first turn.
    pub first_in_loop: bool,
    /// Model alias (telemetry).
    pub model_alias: String,
    /// The provider to call.
    pub route: Route,
    /// Sampling temperature.
    pub temperature: f64,
    /// Persona text.
    pub persona: Option<String>,
    /// Skip the project's files (`noRepo`).
    pub no_repo: bool,
    /// The loop's healer as it stood after the previous turn.
    pub healer: Healer,
}

/// How a turn ended when it ran to completion.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Run another turn.
    Continue,
    /// End the loop with this status.
    Conclude(i32),
    /// The healer gave up on the loop (508), for this reason.
    Abandon(String),
}

/// A finished turn.
#[derive(Debug, Clone)]
pub struct TurnEnd {
    /// The turn number.
    pub turn: i32,
    /// What comes next.
    pub decision: Decision,
    /// The healer after judging this turn, for the next one.
    pub healer: Healer,
}

/// A turn that could not finish; the run records the message and fails the loop.
#[derive(Debug, Clone)]
pub struct TurnFailure {
    /// What went wrong, as the model and clients will read it.
    pub message: String,
}

/// Runs the turn.
#[derive(Message)]
#[rtype(result = "Result<TurnEnd, TurnFailure>")]
pub struct ExecuteTurn;

/// Stops the turn wherever it is (cancel); nothing more is written.
#[derive(Message)]
#[rtype(result = "()")]
pub struct StopTurn;

/// One turn's pipeline.
pub struct TurnExecutor {
    svc: Services,
    job: TurnJob,
}

impl TurnExecutor {
    /// An executor for one turn.
    pub fn new(svc: Services, job: TurnJob) -> Self {
        TurnExecutor { svc, job }
    }
}

impl Actor for TurnExecutor {
    type Context = Context<Self>;
}

impl Handler<ExecuteTurn> for TurnExecutor {
    type Result = ResponseActFuture<Self, Result<TurnEnd, TurnFailure>>;

    fn handle(&mut self, _: ExecuteTurn, _: &mut Context<Self>) -> Self::Result {
        let span = tracing::info_span!("turn", run = %self.job.alias, loop_id = self.job.loop_id);
        let fut = execute(self.svc.clone(), self.job.clone()).instrument(span);
        Box::pin(fut.into_actor(self).map(|result, _, ctx| {
            ctx.stop();
            result
        }))
    }
}

impl Handler<StopTurn> for TurnExecutor {
    type Result = ();

    fn handle(&mut self, _: StopTurn, ctx: &mut Context<Self>) {
        ctx.stop();
    }
}

fn failure(e: impl std::fmt::Display) -> TurnFailure {
    TurnFailure {
        message: e.to_string(),
    }
}

async fn execute(svc: Services, job: TurnJob) -> Result<TurnEnd, TurnFailure> {
    let limits = svc.config.limits.clone();
    let divisor = limits.token_divisor;
    let store = &svc.store;

    // 1. Allocate the turn; the loop's first turn records its prompt.
    let (run, loop_id, first, prompt, mode) = (
        job.run,
        job.loop_id,
        job.first_in_loop,
        job.prompt.clone(),
        job.mode,
    );
    let (t, turn_id): (TurnRef, i32) = store
        .write(move |c| {
            let turn = turns::begin(c, run.run_id, loop_id, now())?;
            let t = TurnRef {
                run,
                loop_id,
                turn: turn.sequence,
            };
            if first {
                record::prompt(c, t, &prompt, mode, divisor, now())?;
            }
            Ok((t, turn.id))
        })
        .await
        .map_err(failure)?;
    tracing::debug!(turn = t.turn, "turn started");
    if first && !job.no_repo {
        attach_files(&svc, run).await.map_err(failure)?;
    }

    // 2–3. Materialise the context and assemble the two messages.
    let rows: Vec<ViewRow> = store
        .read(move |c| context_rows(c, run.run_id))
        .await
        .map_err(failure)?;
    let active = tools::active_tools(job.mode);
    let instructions = tools::instructions(&active, limits.max_commands, job.persona.as_deref());
    let messages = assemble(AssemblyInput {
        rows: &rows,
        instructions: &instructions,
        mode: job.mode,
    });
    let context_tokens =
        tokens::estimate(&messages.system, divisor) + tokens::estimate(&messages.user, divisor);
    let distribution = distribution(&rows);
    let (system, user) = (messages.system.clone(), messages.user.clone());
    store
        .write(move |c| {
            record::audit(c, t, "system", &system, &json!({}), divisor, now())?;
            record::audit(c, t, "user", &user, &json!({}), divisor, now())
        })
        .await
        .map_err(failure)?;

    // 5. Call the model.
    progress(&svc, &job, t.turn, "thinking");
    let (events, mut event_rx) = tokio::sync::mpsc::unbounded_channel();
    let forward = {
        let (svc, job, turn) = (svc.clone(), job.clone(), t.turn);
        actix_rt::spawn(async move {
            let mut streamed = false;
            while let Some(event) = event_rx.recv().await {
                forward_event(&svc, &job, turn, event, &mut streamed);
            }
        })
    };
    let call = Complete {
        events: Some(events),
        model: job.route.wire_model.clone(),
        messages: vec![
            ChatMessage {
                role: "system",
                content: messages.system,
            },
            ChatMessage {
                role: "user",
                content: messages.user,
            },
        ],
        temperature: job.temperature,
    };
    let completion = job
        .route
        .provider
        .send(call)
        .await
        .map_err(|e| failure(format!("provider unavailable: {e}")))?
        .map_err(failure)?;
    let _ = forward.await;
    progress(&svc, &job, t.turn, "processing");

    // 6. Parse and record the reply and the audit trail.
    let parsed = parse_reply(&completion.content, limits.max_commands);
    let reasoning = merge_reasoning(&completion, &parsed.commands);
    let reply = completion.clone();
    let (mut warnings, unparsed) = (parsed.warnings.clone(), parsed.unparsed.clone());
    // Prose beside real commands that looks like a mangled command: tell the
    // model it did not run (a prose-only reply is the healer's to judge).
    let has_commands = parsed.commands.iter().any(|c| c.name != "think");
    if has_commands && rummy_core::parse::looks_like_tool_call(&unparsed) {
        warnings.push(rummy_core::turn::healer::warnings::UNREADABLE_COMMAND.to_owned());
    }
    store
        .write(move |c| {
            let now = now();
            record::audit(c, t, "assistant", &reply.content, &json!({}), divisor, now)?;
            if let Some(r) = &reasoning {
                record::audit(c, t, "reasoning", r, &json!({}), divisor, now)?;
            }
            if !unparsed.is_empty() {
                record::audit(c, t, "content", &unparsed, &json!({}), divisor, now)?;
            }
            let diagnostics = json!({ "model": reply.model, "usage": reply.usage, "contentChars": reply.content.len() });
            record::audit(c, t, "model", &diagnostics.to_string(), &json!({}), divisor, now)?;
            turns::record_usage(c, turn_id, context_tokens, &reply.usage, reasoning.as_deref(), now)?;
            for w in &warnings {
                record::warning(c, t, w, divisor, now)?;
            }
            Ok(())
        })
        .await
        .map_err(failure)?;

    // 7. Dispatch in emission order; push run/state after each command.
    let dispatch_limits = DispatchLimits {
        token_divisor: divisor,
        max_entry_tokens: limits.max_entry_tokens,
    };
    let mut results: Vec<Dispatched> = Vec::new();
    let mut failed_tool: Option<String> = None;
    let dispatched: Vec<rummy_core::parse::ToolCall> = parsed
        .commands
        .iter()
        .filter(|c| c.name != "think")
        .cloned()
        .collect();
    for call in dispatched.clone() {
        let aborted_by = failed_tool.clone();
        let (done, params) = store
            .write(move |c| {
                let done = dispatch(c, t, &call, aborted_by.as_deref(), dispatch_limits, now())?;
                let params = state::push(c, t.run.run_id, t.turn, 102, Value::Null, now())?;
                Ok((done, params))
            })
            .await
            .map_err(failure)?;
        svc.publish(run.project_id, &job.alias, "run/state", params);
        if done.failed() && done.update.is_none() && failed_tool.is_none() {
            failed_tool = Some(done.tool.clone());
        }
        results.push(done);
    }

    // 9. Judge the turn, record its warnings, and push the turn-end state with telemetry.
    let update = results.iter().rev().find_map(|d| d.update.clone());
    let mut healer = job.healer.clone();
    let verdict = healer.assess(TurnFacts {
        commands: &dispatched,
        any_failed: failed_tool.is_some(),
        update: update.as_ref(),
        prose: &parsed.unparsed,
    });
    let telemetry = json!({
        "model": job.model_alias,
        "contextTokens": context_tokens,
        "usage": completion.usage,
        "contextDistribution": distribution,
    });
    let verdict_for_store = verdict.clone();
    let params = store
        .write(move |c| {
            let now = now();
            let warnings = verdict_for_store.warnings().to_vec();
            let prose = match &verdict_for_store {
                Verdict::Conclude { prose_answer, .. } => prose_answer.clone(),
                Verdict::Continue { .. } | Verdict::Abandon { .. } => None,
            };
            for w in &warnings {
                record::warning(c, t, w, divisor, now)?;
            }
            if let Some(answer) = prose {
                let call = rummy_core::parse::ToolCall {
                    name: "update".into(),
                    attributes: vec![("status".into(), "200".into())],
                    body: answer,
                };
                dispatch(c, t, &call, None, dispatch_limits, now)?;
            }
            turns::finish(c, turn_id, turns::DONE, now)?;
            state::push(c, t.run.run_id, t.turn, 102, telemetry, now)
        })
        .await
        .map_err(failure)?;
    svc.publish(run.project_id, &job.alias, "run/state", params);
    let decision = match verdict {
        Verdict::Continue { .. } => Decision::Continue,
        Verdict::Conclude { status, .. } => Decision::Conclude(status),
        Verdict::Abandon { reason, .. } => Decision::Abandon(reason),
    };
    Ok(TurnEnd {
        turn: t.turn,
        decision,
        healer,
    })
}

/// Refreshes the project's files from disk and gives the run views of new ones (loop start, unless `noRepo`).
async fn attach_files(
    svc: &Services,
    run: rummy_core::store::entries::RunRef,
) -> Result<(), rummy_core::store::StoreError> {
    let project = svc
        .store
        .read(move |c| projects::by_id(c, run.project_id))
        .await?;
    if let Err(e) = crate::files::refresh(svc, project.id, &project.project_root).await {
        tracing::warn!(project = %project.name, error = %e, "project scan failed; using the files already stored");
    }
    svc.store
        .write(move |c| {
            let constraints = constraints::list(c, run.project_id)?;
            sync::attach(c, run, &constraints, hedberg::hedmatch, now())
        })
        .await?;
    Ok(())
}

/// Sends one provider event to the run's clients: deltas as `ui/render`, the rest as `run/progress`.
fn forward_event(svc: &Services, job: &TurnJob, turn: i32, event: ProviderEvent, streamed: &mut bool) {
    let (method, params) = match event {
        ProviderEvent::Delta(text) => {
            let append = std::mem::replace(streamed, true);
            ("ui/render", json!({ "run": &*job.alias, "turn": turn, "text": text, "append": append }))
        }
        ProviderEvent::Queued(reason) => ("run/progress", json!({ "run": &*job.alias, "turn": turn, "status": "queued", "detail": reason })),
        ProviderEvent::Retrying { reason, delay_ms } => (
            "run/progress",
            json!({ "run": &*job.alias, "turn": turn, "status": "retrying", "detail": reason, "delayMs": delay_ms }),
        ),
        ProviderEvent::Rerouted { reason, to } => (
            "run/progress",
            json!({ "run": &*job.alias, "turn": turn, "status": "rerouted", "detail": reason, "to": to }),
        ),
    };
    svc.publish(job.run.project_id, &job.alias, method, params);
}

fn progress(svc: &Services, job: &TurnJob, turn: i32, status: &str) {
    let params = json!({ "run": &*job.alias, "turn": turn, "status": status });
    svc.publish(job.run.project_id, &job.alias, "run/progress", params);
}

/// Provider reasoning followed by the bodies of `<think>` commands.
fn merge_reasoning(
    completion: &Completion,
    commands: &[rummy_core::parse::ToolCall],
) -> Option<String> {
    let mut parts: Vec<String> = completion.reasoning.iter().cloned().collect();
    parts.extend(
        commands
            .iter()
            .filter(|c| c.name == "think")
            .map(|c| c.body.trim().to_owned())
            .filter(|b| !b.is_empty()),
    );
    (!parts.is_empty()).then(|| parts.join("\n"))
}

/// Tokens and entries of the context by category.
fn distribution(rows: &[ViewRow]) -> Value {
    let mut buckets: Vec<(&str, i64, i64)> = Vec::new();
    for row in rows {
        let bucket = row.category().map_or("system", Category::as_str);
        match buckets.iter_mut().find(|(b, _, _)| *b == bucket) {
            Some(entry) => {
                entry.1 += i64::from(row.tokens);
                entry.2 += 1;
            }
            None => buckets.push((bucket, i64::from(row.tokens), 1)),
        }
    }
    Value::Array(
        buckets
            .into_iter()
            .map(|(bucket, tokens, entries)| json!({"bucket": bucket, "tokens": tokens, "entries": entries}))
            .collect(),
    )
}
