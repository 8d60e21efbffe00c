//! The turn's steps in order; each write step is one store transaction.

use super::events::{distribution, forward_events, progress};
use super::{Allocated, ContextRead, Decision, Start, TurnEnd, TurnFailure, TurnJob};
use crate::clock::now;
use crate::provider::{Complete, ProviderError};
use crate::services::Services;
use rummy_core::entry::State;
use rummy_core::files::sync;
use rummy_core::hedberg;
use rummy_core::parse::{looks_like_tool_call, parse_reply, ParsedReply, ToolCall};
use rummy_core::provider::{ChatMessage, Completion};
use rummy_core::run::RunStatus;
use rummy_core::store::context::{context_since, KeptContext};
use rummy_core::store::entries;
use rummy_core::store::notifications::Recorded;
use rummy_core::store::{constraints, projects, turns, StoreError};
use rummy_core::tools;
use rummy_core::turn::assemble::{assemble, AssemblyInput, Messages};
use rummy_core::turn::batch::Commands;
use rummy_core::turn::budget::{self, Budget};
use rummy_core::turn::dispatch::{dispatch, DispatchCtx, DispatchLimits, LoopFlags};
use rummy_core::turn::healer::{warnings as healer_warnings, TurnFacts, Verdict};
use rummy_core::turn::streams::{self, StreamWrite};
use rummy_core::turn::{record, state, TurnRef};
use rummy_core::wire::methods;
use rummy_core::wire::notifications::{Proposed, RunProposal};
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};

/// The loop's flags as dispatch reads them.
fn loop_flags(job: &TurnJob) -> LoopFlags {
    serde_json::from_value(job.flags.clone()).unwrap_or_default()
}

fn failure(e: impl Into<TurnFailure>) -> TurnFailure {
    e.into()
}

/// Runs a turn from its start.
pub async fn execute(svc: Services, job: TurnJob, start: Start) -> Result<TurnEnd, TurnFailure> {
    match start {
        Start::Fresh => fresh(svc, job, None).await,
        Start::Allocated(next) => fresh(svc, job, Some(next)).await,
        Start::Resume {
            turn,
            next_index,
            aborted_by,
            awaited,
        } => resume(svc, job, turn, next_index, aborted_by, awaited).await,
    }
}

/// The context's distribution by category (for telemetry), the two messages for this moment of
/// the run, the revision views written after this moment get (see [`budget::growth_since`]),
/// and the run's budget.
type Materialised = (Value, Messages, i32, Option<Budget>);

/// Materialises the turn's context from one read. With `read`, the write that allocated the
/// turn (the loop's first, or the previous turn's last: see [`end_turn`]) already read it, and
/// the rows are in the loop's slot: nothing is read again and the messages are assembled here.
/// Otherwise the read and the assembly run on the blocking pool, so many runs' prompts are
/// built in parallel rather than on the arbiter thread every actor shares.
async fn materialise(
    svc: &Services,
    job: &TurnJob,
    read: Option<ContextRead>,
) -> Result<Materialised, TurnFailure> {
    let run_id = job.run.run_id;
    let limits = &svc.config.limits;
    let (mode, divisor) = (job.mode, limits.token_divisor);
    let (context_size, ceiling) = (job.context_size, limits.budget_ceiling);
    let instructions = instructions_of(svc, job);
    let slot = Arc::clone(&job.context);
    if let Some(read) = read {
        if let Some(context) = take_kept(&slot) {
            let budget = Budget::new(context_size, None, ceiling, read.ratio);
            let materialised = assembled(&context, &instructions, mode, budget, divisor);
            put_kept(&slot, context);
            return Ok(materialised);
        }
    }
    svc.store
        .read(move |c| {
            let budget = Budget::new(context_size, None, ceiling, budget::last_ratio(c, run_id)?);
            let context = context_since(c, run_id, take_kept(&slot))?;
            let materialised = assembled(&context, &instructions, mode, budget, divisor);
            put_kept(&slot, context);
            Ok(materialised)
        })
        .await
        .map_err(failure)
}

/// The instructions that open the loop's system message: the preamble with the tools its mode
/// and flags offer, and the persona.
fn instructions_of(svc: &Services, job: &TurnJob) -> String {
    let active = tools::active_tools(job.mode, loop_flags(job), svc.search.is_some());
    tools::instructions(
        &active,
        svc.config.limits.max_commands,
        job.persona.as_deref(),
    )
}

/// The messages and figures of a turn from its context rows.
fn assembled(
    context: &KeptContext,
    instructions: &str,
    mode: rummy_core::run::Mode,
    budget: Option<Budget>,
    divisor: u32,
) -> Materialised {
    let messages = assemble(AssemblyInput {
        rows: context.rows(),
        instructions,
        mode,
        budget,
        divisor,
    });
    (
        distribution(context.rows()),
        messages,
        context.next_rev(),
        budget,
    )
}

/// Takes the run's kept context rows out of the loop's slot (`None` if the slot's lock was
/// poisoned: the rows are then read whole).
fn take_kept(slot: &Mutex<Option<KeptContext>>) -> Option<KeptContext> {
    slot.lock().ok().and_then(|mut kept| kept.take())
}

/// Keeps a read's context rows in the loop's slot for its next read.
fn put_kept(slot: &Mutex<Option<KeptContext>>, context: KeptContext) {
    if let Ok(mut kept) = slot.lock() {
        *kept = Some(context);
    }
}

async fn budget_for(svc: &Services, job: &TurnJob) -> Result<Option<Budget>, TurnFailure> {
    let run_id = job.run.run_id;
    let ratio = svc
        .store
        .read(move |c| budget::last_ratio(c, run_id))
        .await
        .map_err(failure)?;
    Ok(Budget::new(
        job.context_size,
        None,
        svc.config.limits.budget_ceiling,
        ratio,
    ))
}

async fn fresh(
    svc: Services,
    job: TurnJob,
    allocated: Option<Allocated>,
) -> Result<TurnEnd, TurnFailure> {
    let divisor = svc.config.limits.token_divisor;
    let store = &svc.store;

    // 1. Allocate the turn; the loop's first turn records its prompt, refreshes the project's
    // files and gives the run views of new ones — all in one write after the scan.
    let (run, loop_id, first, prompt, mode) = (
        job.run,
        job.loop_id,
        job.first_in_loop,
        job.prompt.clone(),
        job.mode,
    );
    // Read by the previous turn's last write, when it allocated this one.
    let mut read = allocated.and_then(|next| next.read).filter(|_| !first);
    let attach = first && !job.no_repo;
    let slot = Arc::clone(&job.context);
    let scan = if attach {
        scan_project(&svc, run.project_id).await
    } else {
        None
    };
    let begun = match allocated {
        // Allocated by the previous turn's last write: nothing to write before the read.
        Some(next) if !first => Some((
            TurnRef {
                run,
                loop_id,
                turn: next.turn,
            },
            next.turn_id,
            None,
        )),
        _ => None,
    };
    let (t, turn_id, synced) = match begun {
        Some(begun) => begun,
        None => store
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
                let synced = match scan {
                    Some(scan) => Some((scan.sync(c, divisor)?, scan)),
                    None => None,
                };
                if attach {
                    attach_views(c, run)?;
                }
                // As at a turn's end (see `end_turn`), the context is read by the write before
                // it, on the writer's warm cache.
                let ahead = read_ahead(c, run.run_id, take_kept(&slot));
                Ok((t, turn.id, synced, ahead))
            })
            .await
            .map_err(failure)
            .map(|(t, turn_id, synced, ahead)| {
                read = ahead.map(|(context, ahead)| {
                    put_kept(&job.context, context);
                    ahead
                });
                (t, turn_id, synced)
            })?,
    };
    tracing::debug!(turn = t.turn, "turn started");
    if let Some((report, scan)) = synced {
        let missing = report.missing > 0;
        match scan.settle(&svc, report).await {
            // Files the first sync missed were synced after the views were attached; the
            // turn reads its context again.
            Ok(_) if missing => {
                read = None;
                store
                    .write(move |c| attach_views(c, run))
                    .await
                    .map_err(failure)?
            }
            Ok(_) => {}
            Err(e) => {
                tracing::warn!(error = %e, "project rescan failed; using the files already stored")
            }
        }
    }

    // 2–4. Materialise, assemble, and check the budget: over it, History Demotion (earlier
    // loops' entries) and, last, Prompt Demotion make room; 413 only when nothing can.
    let (mut spread, mut messages, mut rev, budget) = materialise(&svc, &job, read).await?;
    if let Some(b) = budget {
        let mut over = b.overflow(b.calibrate(messages.tokens));
        if over > 0 {
            if let Some(demotion) = plan_demotion(&svc, &job, b).await? {
                tracing::info!(
                    summarized = demotion.summarize.len(),
                    archived = demotion.archive.len(),
                    prompt = demotion.prompt,
                    "demoted to fit the context"
                );
                store
                    .write(move |c| {
                        budget::demote(c, run.run_id, &demotion, now())?;
                        budget::record_demotion(c, t, &demotion, divisor, now())
                    })
                    .await
                    .map_err(failure)?;
                (spread, messages, rev, _) = materialise(&svc, &job, None).await?;
                over = b.overflow(b.calibrate(messages.tokens));
            }
        }
        if over > 0 {
            let message = format!("Context full: {over} tokens over the budget ceiling of {} before the model could be called.", b.ceiling);
            return overflowed(&svc, job, t, turn_id, message, Some((over, b))).await;
        }
    }
    let context_tokens = messages.tokens;
    // The prompt's audit entries commit with the reply (one commit fewer per turn); when the
    // call fails they are written on their own, so a failed turn still shows what was sent.
    let prompt_audit = (messages.system.clone(), messages.user.clone());

    // 5. Call the model; what the provider reports on the way goes to the run's clients.
    progress(&svc, &job, t.turn, methods::progress::THINKING);
    let completion = match call_model(&svc, &job, t.turn, messages).await {
        Ok(completion) => completion,
        Err(e) => {
            let (system, user) = prompt_audit;
            store
                .write(move |c| {
                    let sent = [("system", system.as_str()), ("user", user.as_str())];
                    record::audit_all(c, t, &sent, divisor, now())
                })
                .await
                .map_err(failure)?;
            if let ProviderError::ContextLength { .. } = e {
                let message =
                    "Context full: the provider refused the prompt as too long.".to_owned();
                return overflowed(&svc, job, t, turn_id, message, None).await;
            }
            return Err(failure(e));
        }
    };
    progress(&svc, &job, t.turn, methods::progress::PROCESSING);

    // 6. Parse and record the reply and the audit trail.
    let parsed = parse_reply(&completion.content, svc.config.limits.max_commands);
    let recorded = record_reply(
        &svc,
        t,
        turn_id,
        context_tokens,
        &completion,
        &parsed,
        prompt_audit,
    );
    let telemetry = json!({
        "model": job.model_alias,
        "contextTokens": context_tokens,
        "usage": completion.usage,
        "contextDistribution": spread,
    });
    let assembled = Assembled {
        tokens: context_tokens,
        rev,
    };
    dispatch_from(
        &svc,
        &job,
        t,
        turn_id,
        &parsed,
        Commands::new(&parsed.commands),
        telemetry,
        Some(assembled),
        Some(recorded),
    )
    .await
}

/// The least demotion that makes the turn's context fit beside the note that tells
/// the model of it (`budget::plan_demotion`), planned on the blocking pool over the loop's
/// kept rows; `None` when nothing would make it fit.
async fn plan_demotion(
    svc: &Services,
    job: &TurnJob,
    b: Budget,
) -> Result<Option<budget::Demotion>, TurnFailure> {
    let Some(kept) = take_kept(&job.context) else {
        return Ok(None);
    };
    let (mode, divisor) = (job.mode, svc.config.limits.token_divisor);
    let instructions = instructions_of(svc, job);
    let reserve = budget::demotion_note_reserve(divisor);
    let (kept, plan) = actix_rt::task::spawn_blocking(move || {
        let plan = budget::plan_demotion(kept.rows(), |rows| {
            let messages = assemble(AssemblyInput {
                rows,
                instructions: &instructions,
                mode,
                budget: Some(b),
                divisor,
            });
            b.overflow(b.calibrate(messages.tokens + reserve)) == 0
        });
        (kept, plan)
    })
    .await
    .map_err(failure)?;
    put_kept(&job.context, kept);
    Ok(plan)
}

/// Ends the turn 413 without dispatching anything: `message` is the warning the model reads,
/// after the budget figures when the budget's ceiling (`over` tokens past it) was the cause.
async fn overflowed(
    svc: &Services,
    job: TurnJob,
    t: TurnRef,
    turn_id: i32,
    message: String,
    ceiling: Option<(i32, Budget)>,
) -> Result<TurnEnd, TurnFailure> {
    let divisor = svc.config.limits.token_divisor;
    let text = message.clone();
    svc.store
        .write(move |c| {
            if let Some((over, b)) = ceiling {
                budget::record_overflow(c, t, over, &b, (0, 0), divisor, now())?;
            }
            record::warning(c, t, &text, divisor, now())?;
            turns::finish(c, turn_id, 413, now())
        })
        .await
        .map_err(failure)?;
    Ok(TurnEnd {
        turn: t.turn,
        decision: Decision::Overflow(message),
        healer: job.healer,
        next: None,
    })
}

/// What the context cost when this turn's prompt was assembled, and from which view revision
/// later writes count: with it, the post-dispatch budget check can often skip reassembly.
#[derive(Debug, Clone, Copy)]
struct Assembled {
    /// The estimated tokens of the two messages.
    tokens: i32,
    /// The first revision written after assembly.
    rev: i32,
}

async fn call_model(
    svc: &Services,
    job: &TurnJob,
    turn: i32,
    messages: Messages,
) -> Result<Completion, ProviderError> {
    let (events, event_rx) = tokio::sync::mpsc::unbounded_channel();
    let forward = actix_rt::spawn(forward_events(svc.clone(), job.clone(), turn, event_rx));
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
    let result = svc.providers.complete(&job.route, call).await;
    let _ = forward.await;
    result
}

/// Store work that must commit with the first dispatched commands.
type Prelude = Box<dyn FnOnce(&mut diesel::SqliteConnection) -> Result<(), StoreError> + Send>;

/// The writes that record the turn's audit trail (`prompt_audit`: the system and user messages
/// sent; then the reply), its usage and the parser's warnings, to be committed with the turn's
/// first commands: fewer commits per turn, and a crash leaves either all or none (a turn whose
/// reply was not recorded is marked failed on restart).
fn record_reply(
    svc: &Services,
    t: TurnRef,
    turn_id: i32,
    context_tokens: i32,
    completion: &Completion,
    parsed: &ParsedReply,
    prompt_audit: (String, String),
) -> Prelude {
    let divisor = svc.config.limits.token_divisor;
    let reasoning = merge_reasoning(completion, &parsed.commands);
    let reply = completion.clone();
    let (mut warnings, unparsed) = (parsed.warnings.clone(), parsed.unparsed.clone());
    // Prose beside real commands that looks like a mangled command: tell the
    // model it did not run (a prose-only reply is the healer's to judge).
    if parsed.commands.iter().any(|c| c.name != "think") && looks_like_tool_call(&unparsed) {
        warnings.push(healer_warnings::UNREADABLE_COMMAND.to_owned());
    }
    Box::new(move |c| {
        let now = now();
        let (system, user) = &prompt_audit;
        let diagnostics = json!({ "model": reply.model, "usage": reply.usage, "contentChars": reply.content.len() }).to_string();
        let mut trail = vec![
            ("system", system.as_str()),
            ("user", user.as_str()),
            ("assistant", reply.content.as_str()),
        ];
        if let Some(r) = &reasoning {
            trail.push(("reasoning", r));
        }
        if !unparsed.is_empty() {
            trail.push(("content", &unparsed));
        }
        trail.push(("model", &diagnostics));
        // One change: the turn's whole audit trail at one view revision.
        record::audit_all(c, t, &trail, divisor, now)?;
        turns::record_usage(
            c,
            turn_id,
            context_tokens,
            &reply.usage,
            reasoning.as_deref(),
            now,
        )?;
        for w in &warnings {
            record::warning(c, t, w, divisor, now)?;
        }
        Ok(())
    })
}

/// Continues a paused turn: its reply is read back from `assistant://<turn>` and dispatched
/// from `next_index`. The command it `awaited`, if any, stops being awaited in the first write.
async fn resume(
    svc: Services,
    job: TurnJob,
    turn: i32,
    next_index: usize,
    aborted_by: Option<String>,
    awaited: Option<String>,
) -> Result<TurnEnd, TurnFailure> {
    let run = job.run;
    let (turn_id, reply, usage) = svc
        .store
        .read(move |c| {
            let tokens = turns::tokens_of(c, run.run_id, turn)?;
            let reply = entries::by_path(c, run.run_id, &format!("assistant://{turn}"))?.map(|r| r.body).unwrap_or_default();
            let usage = json!({ "promptTokens": tokens.prompt, "completionTokens": tokens.completion, "totalTokens": tokens.total });
            Ok((tokens.id, reply, usage))
        })
        .await
        .map_err(failure)?;
    let parsed = parse_reply(&reply, svc.config.limits.max_commands);
    let t = TurnRef {
        run,
        loop_id: job.loop_id,
        turn,
    };
    let telemetry = json!({ "model": job.model_alias, "usage": usage, "resumed": true });
    let divisor = svc.config.limits.token_divisor;
    let prelude = awaited.map(|path| -> Prelude {
        Box::new(move |c| {
            let at = StreamWrite {
                run,
                divisor,
                now: now(),
            };
            streams::stop_awaiting(c, at, &path)
        })
    });
    let commands = Commands::resume_at(&parsed.commands, next_index, aborted_by);
    dispatch_from(
        &svc, &job, t, turn_id, &parsed, commands, telemetry, None, prelude,
    )
    .await
}

/// What ending a turn needs inside a store write: the facts the healer judges and what the
/// turn-end push carries (the turn is `ctx.t`).
#[derive(Clone)]
struct EndInput {
    turn_id: i32,
    healer: rummy_core::turn::healer::Healer,
    prose: String,
    telemetry: Value,
    ctx: DispatchCtx,
    /// Whether the loop may run another turn after this one.
    next_allowed: bool,
    /// The loop's kept context rows, which the write that allocates the next turn brings up to
    /// date for it.
    context: Arc<Mutex<Option<KeptContext>>>,
}

/// A turn that ended: the healer's verdict, the healer as it is after judging, and the
/// turn-end `run/state` to publish once committed.
struct Ended {
    verdict: Verdict,
    healer: rummy_core::turn::healer::Healer,
    params: Recorded,
    next: Option<Allocated>,
    /// The next turn's context rows as this write left them, for the loop's slot once it
    /// committed.
    context: Option<KeptContext>,
}

/// Judges the turn and writes its end: the healer's warnings, an answer given as prose
/// recorded as the concluding update, the turn's status, and the turn-end `run/state`.
fn end_turn(
    c: &mut diesel::SqliteConnection,
    input: EndInput,
    dispatched: &Commands,
) -> Result<Ended, StoreError> {
    let EndInput {
        turn_id,
        mut healer,
        prose,
        telemetry,
        ctx,
        next_allowed,
        context: slot,
    } = input;
    let t = ctx.t;
    let commands = dispatched.calls();
    let verdict = healer.assess(TurnFacts {
        commands,
        any_failed: dispatched.any_failed(),
        update: dispatched.update(),
        prose: &prose,
    });
    let now = now();
    for w in verdict.warnings() {
        record::warning(c, t, w, ctx.limits.token_divisor, now)?;
    }
    if let Verdict::Conclude {
        prose_answer: Some(answer),
        ..
    } = &verdict
    {
        let call = ToolCall {
            name: "update".into(),
            attributes: vec![("status".into(), "200".into())],
            body: answer.clone(),
        };
        let ctx = DispatchCtx {
            command_index: commands.len(),
            ..ctx
        };
        dispatch(c, &ctx, &call, None, now)?;
    }
    turns::finish(c, turn_id, turns::DONE, now)?;
    // A turn that continues allocates the next in this write: one writer round trip fewer per
    // turn. If the loop ends before it runs (cancel, crash), the loop's end or recovery marks
    // it like any interrupted turn.
    let next = match &verdict {
        Verdict::Continue { .. } if next_allowed => {
            let next = turns::begin(c, t.run.run_id, t.loop_id, now)?;
            Some(Allocated {
                turn: next.sequence,
                turn_id: next.id,
                read: None,
            })
        }
        _ => None,
    };
    let params = state::push(
        c,
        t.run.run_id,
        t.turn,
        RunStatus::Running.code(),
        telemetry,
        now,
    )?;
    // The next turn's context is read here, after everything this turn wrote: the writer's
    // page cache is warm where a reader's starts cold after every commit, and the next turn
    // starts without a read of its own. A change another writer commits before the next
    // turn's model call then reaches the turn after it, as one committed a moment later would.
    let context = next.and_then(|_| read_ahead(c, t.run.run_id, take_kept(&slot)));
    let next = next.map(|next| Allocated {
        read: context.as_ref().map(|(_, read)| *read),
        ..next
    });
    let context = context.map(|(rows, _)| rows);
    Ok(Ended {
        verdict,
        healer,
        params,
        next,
        context,
    })
}

/// The run's context rows and the budget's calibration, read inside a write for the turn that
/// follows it. A failure only costs that turn a read of its own, so it fails nothing.
fn read_ahead(
    c: &mut diesel::SqliteConnection,
    run_id: i32,
    kept: Option<KeptContext>,
) -> Option<(KeptContext, ContextRead)> {
    let read = context_since(c, run_id, kept).and_then(|context| {
        let ratio = budget::last_ratio(c, run_id)?;
        Ok((context, ContextRead { ratio }))
    });
    read.inspect_err(|e| tracing::warn!(error = %e, "reading a turn's context ahead failed; the turn reads its own"))
        .ok()
}

/// Whether the prompt assembled at `assembled` plus everything written since fits the budget
/// for certain, read inside the write that would end the turn.
fn fits_after_dispatch(
    c: &mut diesel::SqliteConnection,
    t: TurnRef,
    assembled: Assembled,
    context_size: Option<i32>,
    ceiling: f64,
) -> Result<bool, StoreError> {
    let ratio = budget::last_ratio(c, t.run.run_id)?;
    let Some(b) = Budget::new(context_size, None, ceiling, ratio) else {
        return Ok(true);
    };
    let bound = assembled.tokens + budget::growth_since(c, t.run.run_id, assembled.rev)?;
    Ok(b.overflow(b.calibrate(bound)) == 0)
}

/// Dispatches the commands from `start` in order, pausing at a proposal; then post-dispatch budget, the healer, and the turn's end.
///
/// When nothing waits and the growth bound shows the context still fits, the turn ends in the
/// same write as its last commands; otherwise the budget is checked (reassembling if need be)
/// and the end is written after.
#[expect(
    clippy::too_many_arguments,
    reason = "a turn resumed mid-dispatch carries its whole position; one context struct is issue 28 item 5"
)]
async fn dispatch_from(
    svc: &Services,
    job: &TurnJob,
    t: TurnRef,
    turn_id: i32,
    parsed: &ParsedReply,
    mut commands: Commands,
    telemetry: Value,
    assembled: Option<Assembled>,
    mut prelude: Option<Prelude>,
) -> Result<TurnEnd, TurnFailure> {
    let limits = svc.config.limits.clone();
    let divisor = limits.token_divisor;
    let ctx = DispatchCtx {
        t,
        limits: DispatchLimits {
            token_divisor: divisor,
            max_entry_tokens: limits.max_entry_tokens,
        },
        mode: job.mode,
        flags: loop_flags(job),
        command_index: 0,
        search_enabled: svc.search.is_some(),
        runner: svc.config.commands.runner,
    };
    let end = EndInput {
        turn_id,
        healer: job.healer.clone(),
        prose: parsed.unparsed.clone(),
        telemetry,
        ctx,
        next_allowed: job.next_allowed,
        context: Arc::clone(&job.context),
    };
    let (context_size, ceiling) = (job.context_size, limits.budget_ceiling);
    while commands.pending() || prelude.is_some() {
        // Commands are dispatched in one transaction up to the first that must wait (a
        // proposal, or a search whose answer comes from the network): one commit instead of
        // one per command. Each still gets its own run/state, published after the commit.
        let (first, end_input) = (prelude.take(), end.clone());
        let (back, batch, ended) = svc
            .store
            .write(move |c| {
                if let Some(first) = first {
                    first(c)?;
                }
                let now = now();
                let mut batch = commands.dispatch_batch(c, &ctx, now)?;
                // Nothing left to wait for: end the turn here when the context surely fits.
                let ended = match (batch.waits(), assembled) {
                    (false, Some(a)) if fits_after_dispatch(c, t, a, context_size, ceiling)? => {
                        Some(end_turn(c, end_input, &commands)?)
                    }
                    _ => None,
                };
                if ended.is_none() {
                    batch.push_last(c, t, now)?;
                }
                Ok((commands, batch, ended))
            })
            .await
            .map_err(failure)?;
        commands = back;
        for (done, params) in batch.dispatched {
            if let Some(params) = &params {
                svc.publish_state(t.run.project_id, &job.alias, params);
            }
            if done.state == State::Proposed {
                announce_proposal(svc, job, t, &done.path).await?;
                return Ok(TurnEnd {
                    turn: t.turn,
                    decision: Decision::Paused { path: done.path },
                    healer: job.healer.clone(),
                    next: None,
                });
            }
            if done.waits() {
                // A search: answered before the turn goes on; a failed one aborts the rest.
                let answered = super::search::answer(svc, job, t, done).await?;
                commands.note(&answered);
            }
        }
        if let Some(ended) = ended {
            return Ok(published_end(svc, job, t, ended));
        }
    }

    // 8. Post-dispatch budget: Turn Demotion when this turn's additions overflow. When the
    // assembled prompt plus everything written since fits for certain, nothing is reassembled.
    if let Some(b) = budget_for(svc, job).await? {
        let bound = match assembled {
            Some(a) => {
                let run_id = t.run.run_id;
                let growth = svc
                    .store
                    .read(move |c| budget::growth_since(c, run_id, a.rev))
                    .await
                    .map_err(failure)?;
                Some(a.tokens + growth)
            }
            None => None,
        };
        let over = match bound {
            Some(bound) if b.overflow(b.calibrate(bound)) == 0 => 0,
            _ => {
                let (_, messages, _, _) = materialise(svc, job, None).await?;
                b.overflow(b.calibrate(messages.tokens))
            }
        };
        if over > 0 {
            svc.store
                .write(move |c| {
                    let demoted = budget::demote_turn(c, t, now())?;
                    budget::record_overflow(c, t, over, &b, demoted, divisor, now())
                })
                .await
                .map_err(failure)?;
        }
    }

    // 9. Judge the turn, record its warnings, and push the turn-end state with telemetry.
    let ended = svc
        .store
        .write(move |c| end_turn(c, end, &commands))
        .await
        .map_err(failure)?;
    Ok(published_end(svc, job, t, ended))
}

/// Publishes the turn-end `run/state` of a committed end and tells the run what follows.
fn published_end(svc: &Services, job: &TurnJob, t: TurnRef, ended: Ended) -> TurnEnd {
    svc.publish_state(t.run.project_id, &job.alias, &ended.params);
    if let Some(context) = ended.context {
        put_kept(&job.context, context);
    }
    let decision = match ended.verdict {
        Verdict::Continue { .. } => Decision::Continue,
        Verdict::Conclude { status, .. } => Decision::Conclude(status),
        Verdict::Abandon { reason, .. } => Decision::Abandon(reason),
    };
    TurnEnd {
        turn: t.turn,
        decision,
        healer: ended.healer,
        next: ended.next,
    }
}

/// Sends `run/proposal` with what a client needs to decide.
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
        let proposed = Proposed {
            attributes: row.attribute_map(),
            turn: i64::from(row.turn),
            path: row.path,
            body: row.body,
        };
        let proposal = RunProposal {
            proposed: vec![proposed],
            run: job.alias.to_string(),
        };
        svc.push(t.run.project_id, &job.alias, &proposal);
    }
    Ok(())
}

/// Scans the run's project: `None` when its watch shows nothing changed since the last
/// committed scan, or when the scan fails (the run then works with the files already stored).
async fn scan_project(svc: &Services, project_id: i32) -> Option<crate::files::ProjectScan> {
    let project = svc
        .store
        .read(move |c| projects::by_id(c, project_id))
        .await;
    let scanned = match project {
        Ok(p) => crate::files::ProjectScan::run(svc, p.id, &p.project_root).await,
        Err(e) => Err(e),
    };
    scanned
        .inspect_err(|e| tracing::warn!(project_id, error = %e, "project scan failed; using the files already stored"))
        .ok()
        .flatten()
}

/// Gives the run views of the project's files it has none of yet (loop start, unless `noRepo`).
fn attach_views(
    c: &mut diesel::SqliteConnection,
    run: rummy_core::store::entries::RunRef,
) -> Result<(), StoreError> {
    let constraints = constraints::list(c, run.project_id)?;
    sync::attach(c, run, &constraints, hedberg::hedmatch, now())?;
    Ok(())
}

/// Provider reasoning followed by the bodies of `<think>` commands.
fn merge_reasoning(completion: &Completion, commands: &[ToolCall]) -> Option<String> {
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
