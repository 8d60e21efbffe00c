//! The turn step that answers a dispatched `<search>` before the turn goes on: the backend asked, the hits or the failure recorded, `run/state` pushed.
//!
//! The model reads a failed search next turn (outcome 502); the turn itself goes on.

use super::{TurnFailure, TurnJob};
use crate::services::Services;
use rummy_core::tools::search::backend::SearchFailure;
use rummy_core::tools::search::{record_failure, record_results, request_of, BACKEND_FAILED};
use rummy_core::tools::wording::SEARCH_NOT_CONFIGURED;
use rummy_core::tools::ToolName;
use rummy_core::turn::dispatch::Dispatched;
use rummy_core::turn::{state, TurnRef};
use rummy_store::db::Db;
use rummy_store::entries::{self, WriteCtx};
use rummy_store::entry::State;
use rummy_store::notifications::Recorded;
use rummy_store::run::RunStatus;
use rummy_store::StoreError;
use serde_json::Value;

/// Records what answered a command its turn waited on (`record`, given the write's time) and,
/// in the same write, the `run/state` of the run still running; then publishes it.
pub(super) async fn record_answer<F>(
    svc: &Services,
    job: &TurnJob,
    t: TurnRef,
    record: F,
) -> Result<(), TurnFailure>
where
    F: FnOnce(&mut Db, WriteCtx) -> Result<(), StoreError> + Send + 'static,
{
    let divisor = svc.config.limits.token_divisor;
    let bounds = svc.store.bounds();
    let params: Recorded = svc
        .store
        .write(move |c| {
            let at = crate::clock::write_ctx(divisor);
            record(c, at)?;
            state::push(
                c,
                t.run.run_id,
                t.turn,
                RunStatus::Running.code(),
                Value::Null,
                bounds,
                at.now,
            )
        })
        .await
        .map_err(TurnFailure::Store)?;
    svc.publish_state(t.run.project_id, &job.alias, &params);
    Ok(())
}

/// Answers a dispatched `search` (a streaming result): asks the backend, records
/// the hits or the failure, pushes `run/state`, and returns the command as it
/// finally stands. Any other command is returned unchanged.
pub async fn answer(
    svc: &Services,
    job: &TurnJob,
    t: TurnRef,
    mut done: Dispatched,
) -> Result<Dispatched, TurnFailure> {
    if done.tool != ToolName::Search || done.state != State::Streaming {
        return Ok(done);
    }
    let failure = TurnFailure::Store;
    let (run_id, path) = (t.run.run_id, done.path.clone());
    let row = svc
        .store
        .read(move |c| entries::by_path(c, run_id, &path))
        .await
        .map_err(failure)?;
    let Some(row) = row else {
        return Ok(done);
    };
    let (query, limit) = request_of(&row);
    let found = match &svc.search {
        Some(client) => client.search(&query, limit).await.map_err(|f| {
            if f == SearchFailure::Status(403) {
                tracing::warn!("SearXNG refused a search: is `json` among `search.formats` in its settings.yml?");
            }
            f.message(&query)
        }),
        // Dispatch refuses `search` without a backend; this only guards that contract.
        None => Err(SEARCH_NOT_CONFIGURED.to_owned()),
    };
    match &found {
        Ok(hits) => tracing::info!(query = %query, hits = hits.len(), "searched"),
        Err(reason) => tracing::warn!(query = %query, reason = %reason, "search failed"),
    }
    let path = done.path.clone();
    let recorded = found.is_ok();
    record_answer(svc, job, t, move |c, at| match &found {
        Ok(hits) => record_results(c, t, &path, hits, at),
        Err(reason) => record_failure(c, t, &path, reason, at),
    })
    .await?;
    if recorded {
        done.state = State::Resolved;
    } else {
        done.state = State::Failed;
        done.outcome = Some(BACKEND_FAILED);
    }
    Ok(done)
}
