//! Call: the model asked with the turn's prompt (its progress and streamed text going to the run's clients), and its reply parsed, to be recorded with the turn's first commands.
//!
//! The prompt's audit entries (`system://N`, `user://N`) commit with the reply rather than
//! before the call: one commit fewer per turn. A call that fails writes them on its own, so a
//! failed turn still shows what was sent.

use super::begin::Begun;
use super::context::Prompt;
use super::dispatch::{Dispatching, Prelude};
use super::end::Full;
use super::failure;
use crate::clock::now;
use crate::provider::{Complete, ProviderError};
use crate::services::Services;
use crate::turn::events::{forward_events, progress};
use crate::turn::{TurnFailure, TurnJob};
use rummy_core::turn::assemble::Messages;
use rummy_core::turn::batch::Commands;
use rummy_core::turn::healer::warnings as healer_warnings;
use rummy_core::turn::{record, TurnRef};
use rummy_core::wire::methods;
use rummy_provider::{ChatMessage, Completion};
use rummy_store::entries::WriteCtx;
use rummy_store::ids::TurnId;
use rummy_store::turns;
use rummy_text::parse::{looks_like_tool_call, parse_reply, ParsedReply, ToolCall, ToolName};
use serde_json::json;

/// Calls the model with the turn's prompt and readies its reply for dispatch: its commands,
/// its telemetry, and the writes that record it (with the prompt's audit) in the first batch.
/// `Err` when the provider refused the prompt as too long: the turn then ends 413.
pub(super) async fn call(
    svc: &Services,
    job: &TurnJob,
    begun: Begun,
    prompt: Prompt,
) -> Result<Result<Dispatching, Full>, TurnFailure> {
    let Begun { t, turn_id, .. } = begun;
    let assembled = prompt.assembled();
    let Prompt {
        spread,
        messages,
        flags,
        sidecar,
        ..
    } = prompt;
    let context_tokens = messages.tokens;
    let prompt_audit = (messages.system.clone(), messages.user.clone());
    progress(svc, job, t.turn, methods::progress::THINKING);
    let completion = match call_model(svc, job, t.turn, messages).await {
        Ok(completion) => completion,
        Err(e) => {
            let (system, user) = prompt_audit;
            let divisor = svc.config.limits.token_divisor;
            svc.store
                .write(move |c| {
                    let sent = [("system", system.as_str()), ("user", user.as_str())];
                    record::audit_all(c, t, &sent, crate::clock::write_ctx(divisor))
                })
                .await
                .map_err(failure)?;
            if let ProviderError::ContextLength { .. } = e {
                let message =
                    "Context full: the provider refused the prompt as too long.".to_owned();
                return Ok(Err(Full {
                    message,
                    ceiling: None,
                }));
            }
            return Err(failure(e));
        }
    };
    progress(svc, job, t.turn, methods::progress::PROCESSING);
    svc.store.metrics().usage(
        job.route.provider_name,
        &job.route.wire_model,
        job.run.project_id,
        &completion.usage,
    );
    let parsed = parse_reply(&completion.content, svc.config.limits.max_commands);
    let recorded = record_reply(
        svc,
        t,
        turn_id,
        context_tokens,
        &completion,
        &parsed,
        prompt_audit,
    );
    let mut telemetry = json!({
        "model": job.model_alias,
        "contextTokens": context_tokens,
        "usage": completion.usage,
        "contextDistribution": spread,
    });
    if !sidecar.is_empty() {
        telemetry["sidecar"] = json!(sidecar);
    }
    Ok(Ok(Dispatching {
        t,
        turn_id,
        commands: Commands::new(&parsed.commands),
        prose: parsed.unparsed,
        telemetry,
        assembled: Some(assembled),
        prelude: Some(recorded),
        flags,
    }))
}

/// One provider call, its events forwarded to the run's clients as they come.
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
        max_tokens: None,
    };
    let result = svc.providers.complete(&job.route, call).await;
    let _ = forward.await;
    result
}

/// The writes that record the turn's audit trail (`prompt_audit`: the system and user messages
/// sent; then the reply), its usage and the parser's warnings, to be committed with the turn's
/// first commands: fewer commits per turn, and a crash leaves either all or none (a turn whose
/// reply was not recorded is marked failed on restart).
fn record_reply(
    svc: &Services,
    t: TurnRef,
    turn_id: TurnId,
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
    if parsed.commands.iter().any(|c| c.name != ToolName::Think) && looks_like_tool_call(&unparsed)
    {
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
        record::audit_all(c, t, &trail, WriteCtx { divisor, now })?;
        turns::record_usage(
            c,
            turn_id,
            context_tokens,
            &reply.usage,
            reasoning.as_deref(),
            now,
        )?;
        for w in &warnings {
            record::warning(c, t, w, WriteCtx { divisor, now })?;
        }
        Ok(())
    })
}

/// Provider reasoning followed by the bodies of `<think>` commands.
fn merge_reasoning(completion: &Completion, commands: &[ToolCall]) -> Option<String> {
    let mut parts: Vec<String> = completion.reasoning.iter().cloned().collect();
    parts.extend(
        commands
            .iter()
            .filter(|c| c.name == ToolName::Think)
            .map(|c| c.body.trim().to_owned())
            .filter(|b| !b.is_empty()),
    );
    (!parts.is_empty()).then(|| parts.join("\n"))
}
