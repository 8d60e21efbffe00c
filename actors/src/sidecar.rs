//! The sidecar (docs/design/memory.md): the one path side tasks — summaries, session state, re-ranking, consolidation — take to a model.
//!
//! ```text
//! let charge = Charge::new(turn_ref, &job.model_alias);
//! let task = SideTask::new("summary", system, input, parse);
//! match sidecar::run(&svc, &charge, task).await {
//!     Ok(value) => { /* use it */ }
//!     Err(_) => { /* take the fallback; the failure is already logged and recorded */ }
//! }
//! let telemetry = charge.telemetry(); // the turn's `sidecar` records, for its turn-end push
//! ```
//!
//! A side task goes to `RUMMY_SIDECAR_MODEL` (default: the model of the loop that caused it)
//! through the same [`Providers`](crate::provider::Providers) — the same provider actors, the
//! same limiter, retries and fallback — as a turn, within `RUMMY_SIDECAR_TIMEOUT` (past it the
//! call is dropped, which frees its place at the provider). Its usage and cost are stored on the
//! turn it is charged to (`sidecar_calls`), so they count in the run's totals and its project's
//! cost ceiling. It never fails a turn: a failure — no such model, a provider error, the time
//! limit, an answer the parser refuses — is logged once (one warning, one stored row, one
//! record in the turn's telemetry) and answered as a [`SidecarFailure`] for the caller's
//! fallback. While it runs the run's clients see `run/progress` `sidecar` with the task's name,
//! so a run that waits on a summary does not look stuck.

use crate::clock::now;
use crate::provider::Complete;
use crate::services::Services;
use rummy_core::sidecar::{SideTask, SidecarFailure, SidecarRecord, TEMPERATURE};
use rummy_core::turn::TurnRef;
use rummy_core::wire::methods::progress;
use rummy_core::wire::notifications::RunProgress;
use rummy_provider::{Completion, Usage};
use rummy_store::{models, runs, sidecar_calls};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The turn a side task is charged to, and the sidecar records gathered for its telemetry.
/// Cheap to clone; clones share the records.
#[derive(Debug, Clone)]
pub struct Charge {
    /// The turn (its run, loop and number).
    pub turn: TurnRef,
    /// The model of the loop that caused the task: side tasks go there unless
    /// `RUMMY_SIDECAR_MODEL` names another.
    pub model: String,
    records: Arc<Mutex<Vec<SidecarRecord>>>,
}

impl Charge {
    /// Side tasks charged to `turn`, caused by a loop on model alias `model`.
    pub fn new(turn: TurnRef, model: impl Into<String>) -> Charge {
        Charge {
            turn,
            model: model.into(),
            records: Arc::default(),
        }
    }

    /// The records of the calls made so far, oldest first.
    pub fn records(&self) -> Vec<SidecarRecord> {
        self.records.lock().map(|r| r.clone()).unwrap_or_default()
    }

    /// The records as the turn's `sidecar` telemetry (`None` when no side task ran).
    pub fn telemetry(&self) -> Option<serde_json::Value> {
        let records = self.records();
        (!records.is_empty())
            .then(|| serde_json::to_value(records).ok())
            .flatten()
    }

    fn keep(&self, record: SidecarRecord) {
        if let Ok(mut records) = self.records.lock() {
            records.push(record);
        }
    }
}

/// Runs a side task for the turn `charge` names: the model's answer read by the task's parser,
/// or why there is none. Never longer than the task's time limit (at most
/// `RUMMY_SIDECAR_TIMEOUT`); the call, whatever its end, is recorded on the turn.
pub async fn run<T>(
    svc: &Services,
    charge: &Charge,
    task: SideTask<T>,
) -> Result<T, SidecarFailure> {
    let settings = &svc.config.sidecar;
    let alias = settings
        .model
        .clone()
        .unwrap_or_else(|| charge.model.clone());
    let limit_ms = task.time_limit(settings.timeout_ms);
    let started = Instant::now();
    let mut provider = None;
    let (result, usage) = match call(svc, charge, &alias, &task, limit_ms, &mut provider).await {
        Ok(completion) => (task.read(&completion.content), completion.usage),
        Err(failure) => (Err(failure), Usage::default()),
    };
    let elapsed_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    let record = SidecarRecord::of(task.name, &alias, &result, usage, elapsed_ms);
    let metrics = svc.store.metrics();
    metrics
        .sidecar_tasks
        .with_label_values(&[task.name, record.outcome.as_str()])
        .inc();
    if let Some(provider) = &provider {
        metrics.usage(
            provider.0,
            &provider.1,
            charge.turn.run.project_id,
            &record.usage,
        );
    }
    if let Err(failure) = &result {
        tracing::warn!(
            run = charge.turn.run.run_id.0,
            turn = charge.turn.turn,
            task = task.name,
            model = %alias,
            error = %failure,
            "side task failed; its caller falls back"
        );
    }
    let (run_id, turn) = (charge.turn.run.run_id, charge.turn.turn);
    let row = record.clone();
    let stored = svc
        .store
        .write(move |c| sidecar_calls::record(c, &row.row(run_id, turn), now()))
        .await;
    if let Err(e) = stored {
        tracing::warn!(run = run_id.0, turn, task = task.name, error = %e, "cannot record a side task's call");
    }
    charge.keep(record);
    result
}

/// The provider call of a task on model `alias`, within `limit_ms`, announced to the run's
/// clients.
async fn call<T>(
    svc: &Services,
    charge: &Charge,
    alias: &str,
    task: &SideTask<T>,
    limit_ms: u64,
    provider: &mut Option<(&'static str, String)>,
) -> Result<Completion, SidecarFailure> {
    let work = async {
        let lookup = alias.to_owned();
        let run_id = charge.turn.run.run_id;
        let (model, run) = svc
            .store
            .read(move |c| Ok((models::by_alias(c, &lookup)?, runs::by_id(c, run_id)?)))
            .await
            .map_err(|e| SidecarFailure::Unavailable(e.to_string()))?;
        let model = model
            .ok_or_else(|| SidecarFailure::Unavailable(crate::provider::undefined_model(alias)))?;
        let waiting = RunProgress {
            detail: Some(task.name.to_owned()),
            ..RunProgress::new(&run.alias, i64::from(charge.turn.turn), progress::SIDECAR)
        };
        svc.push(run.project_id, &run.alias, &waiting);
        let route = svc
            .providers
            .route(&model)
            .map_err(SidecarFailure::Unavailable)?;
        *provider = Some((route.provider_name, route.wire_model.clone()));
        let settings = &svc.config.sidecar;
        let call = Complete {
            model: route.wire_model.clone(),
            messages: task.messages(),
            temperature: TEMPERATURE,
            max_tokens: Some(
                task.reply_cap(settings.max_tokens, svc.config.providers.max_output_tokens),
            ),
            events: None,
        };
        svc.providers
            .complete(&route, call)
            .await
            .map_err(|e| SidecarFailure::Provider(e.to_string()))
    };
    // Dropping the call at the limit abandons its HTTP request and frees its provider slot.
    match tokio::time::timeout(Duration::from_millis(limit_ms), work).await {
        Ok(result) => result,
        Err(_) => Err(SidecarFailure::Timeout { ms: limit_ms }),
    }
}
