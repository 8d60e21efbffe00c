//! What a turn tells clients while it runs: progress, streamed text, and the context's distribution in telemetry.

use super::TurnJob;
use crate::provider::ProviderEvent;
use crate::services::Services;
use rummy_core::turn::render::{Gather, Render, RENDER_EVERY, RENDER_PIECE_BYTES};
use rummy_core::wire::methods::progress;
use rummy_core::wire::notifications::{RunProgress, UiRender};
use rummy_store::entries::ViewRow;
use rummy_store::entry::Category;
use serde_json::{json, Value};
use std::time::Instant;
use tokio::sync::mpsc::UnboundedReceiver;

/// Forwards one provider call's events to the run's clients until the call ends (`events`
/// closes): deltas as `ui/render`, gathered as [`Gather`] says (what is pending goes out when
/// the call ends, so the turn never waits for it; a burst goes out as several renders of at
/// most [`RENDER_PIECE_BYTES`] of text each), and the rest as `run/progress`, in the order
/// they came.
pub async fn forward_events(
    svc: Services,
    job: TurnJob,
    turn: i32,
    mut events: UnboundedReceiver<ProviderEvent>,
) {
    let mut text = Gather::new(RENDER_EVERY, RENDER_PIECE_BYTES);
    // The model's reasoning streams beside its text, as `ui/render`s marked `reasoning`.
    let mut thought = Gather::new(RENDER_EVERY, RENDER_PIECE_BYTES);
    let send = |renders: Vec<Render>, reasoning: bool| {
        for Render { text, append } in renders {
            let render = UiRender {
                append,
                reasoning,
                run: job.alias.to_string(),
                text,
                turn: Some(i64::from(turn)),
            };
            svc.push(job.run.project_id, &job.alias, &render);
        }
    };
    loop {
        let due = [text.due(Instant::now()), thought.due(Instant::now())]
            .into_iter()
            .flatten()
            .min();
        let next = match due {
            Some(due) => match tokio::time::timeout_at(due.into(), events.recv()).await {
                Ok(next) => next,
                Err(_elapsed) => {
                    send(thought.take(Instant::now()), true);
                    send(text.take(Instant::now()), false);
                    continue;
                }
            },
            None => events.recv().await,
        };
        match next {
            Some(ProviderEvent::Reasoning(delta)) => {
                thought.push(&delta);
                send(thought.take_due(Instant::now()), true);
            }
            Some(ProviderEvent::Delta(delta)) => {
                // Reasoning read before this text goes out before it.
                send(thought.take(Instant::now()), true);
                text.push(&delta);
                send(text.take_due(Instant::now()), false);
            }
            Some(other) => {
                send(thought.take(Instant::now()), true);
                send(text.take(Instant::now()), false);
                forward_progress(&svc, &job, turn, other);
            }
            None => {
                send(thought.take(Instant::now()), true);
                send(text.take(Instant::now()), false);
                return;
            }
        }
    }
}

/// Sends a provider event other than a delta as `run/progress`.
fn forward_progress(svc: &Services, job: &TurnJob, turn: i32, event: ProviderEvent) {
    let at = |status| RunProgress::new(&job.alias, i64::from(turn), status);
    let params = match event {
        ProviderEvent::Delta(_) | ProviderEvent::Reasoning(_) => return,
        ProviderEvent::Queued(reason) => RunProgress {
            detail: Some(reason),
            ..at(progress::QUEUED)
        },
        ProviderEvent::Retrying { reason, delay_ms } => RunProgress {
            detail: Some(reason),
            delay_ms: Some(i64::try_from(delay_ms).unwrap_or(i64::MAX)),
            ..at(progress::RETRYING)
        },
        ProviderEvent::Rerouted { reason, to } => RunProgress {
            detail: Some(reason),
            to: Some(to),
            ..at(progress::REROUTED)
        },
    };
    svc.push(job.run.project_id, &job.alias, &params);
}

/// A `run/progress` notification.
pub fn progress(svc: &Services, job: &TurnJob, turn: i32, status: &str) {
    let params = RunProgress::new(&job.alias, i64::from(turn), status);
    svc.push(job.run.project_id, &job.alias, &params);
}

/// Tokens and entries of the context by category.
pub fn distribution(rows: &[ViewRow]) -> Value {
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
