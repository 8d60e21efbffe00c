//! What a turn tells clients while it runs: progress, streamed text, and the context's distribution in telemetry.

use super::TurnJob;
use crate::provider::ProviderEvent;
use crate::services::Services;
use rummy_core::entry::Category;
use rummy_core::store::entries::ViewRow;
use serde_json::{json, Value};

/// Sends one provider event to the run's clients: deltas as `ui/render`, the rest as `run/progress`.
pub fn forward_event(
    svc: &Services,
    job: &TurnJob,
    turn: i32,
    event: ProviderEvent,
    streamed: &mut bool,
) {
    let run = &*job.alias;
    let (method, params) = match event {
        ProviderEvent::Delta(text) => {
            let append = std::mem::replace(streamed, true);
            (
                "ui/render",
                json!({ "run": run, "turn": turn, "text": text, "append": append }),
            )
        }
        ProviderEvent::Queued(reason) => (
            "run/progress",
            json!({ "run": run, "turn": turn, "status": "queued", "detail": reason }),
        ),
        ProviderEvent::Retrying { reason, delay_ms } => (
            "run/progress",
            json!({ "run": run, "turn": turn, "status": "retrying", "detail": reason, "delayMs": delay_ms }),
        ),
        ProviderEvent::Rerouted { reason, to } => (
            "run/progress",
            json!({ "run": run, "turn": turn, "status": "rerouted", "detail": reason, "to": to }),
        ),
    };
    svc.publish(job.run.project_id, &job.alias, method, params);
}

/// A `run/progress` notification.
pub fn progress(svc: &Services, job: &TurnJob, turn: i32, status: &str) {
    let params = json!({ "run": &*job.alias, "turn": turn, "status": status });
    svc.publish(job.run.project_id, &job.alias, "run/progress", params);
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
