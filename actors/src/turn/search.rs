//! The turn step that answers a dispatched `<search>` before the turn goes on: the backend asked, the hits or the failure recorded, `run/state` pushed.
//!
//! The model reads a failed search next turn (outcome 502); the turn itself goes on.

use super::{TurnFailure, TurnJob};
use crate::services::Services;
use rummy_core::tools::messages::SEARCH_NOT_CONFIGURED;
use rummy_core::tools::search::backend::SearchFailure;
use rummy_core::tools::search::{record_failure, record_results, request_of, BACKEND_FAILED};
use rummy_core::tools::ToolName;
use rummy_core::turn::dispatch::Dispatched;
use rummy_core::turn::{state, TurnRef};
use rummy_store::entries;
use rummy_store::entry::State;
use rummy_store::notifications::Recorded;
use rummy_store::run::RunStatus;
use serde_json::Value;

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
    let (divisor, path) = (svc.config.limits.token_divisor, done.path.clone());
    let recorded = found.is_ok();
    let bounds = svc.store.bounds();
    let params: Recorded = svc
        .store
        .write(move |c| {
            let at = crate::clock::write_ctx(divisor);
            let now = at.now;
            match &found {
                Ok(hits) => record_results(c, t, &path, hits, at)?,
                Err(reason) => record_failure(c, t, &path, reason, at)?,
            }
            state::push(
                c,
                run_id,
                t.turn,
                RunStatus::Running.code(),
                Value::Null,
                bounds,
                now,
            )
        })
        .await
        .map_err(failure)?;
    svc.publish_state(t.run.project_id, &job.alias, &params);
    if recorded {
        done.state = State::Resolved;
    } else {
        done.state = State::Failed;
        done.outcome = Some(BACKEND_FAILED);
    }
    Ok(done)
}
