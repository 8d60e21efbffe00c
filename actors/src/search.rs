//! Web search: the SearXNG client, and the turn step that answers a dispatched `<search>` before the turn goes on.
//!
//! Dispatch (in `rummy_core`) leaves a streaming `search://` result holding
//! the query and the number of hits wanted; [`answer`] asks SearXNG, records
//! the hits (or the failure, which the model reads next turn) through the
//! store, and pushes `run/state`. A backend that is down, slow or talking
//! nonsense fails the search, never the turn.

use crate::clock::now;
use crate::services::Services;
use crate::turn::{TurnFailure, TurnJob};
use rummy_core::config::Config;
use rummy_core::entry::State;
use rummy_core::run::RunStatus;
use rummy_core::store::entries;
use rummy_core::store::notifications::Recorded;
use rummy_core::tools::messages::SEARCH_NOT_CONFIGURED;
use rummy_core::tools::search::backend::{parse_searxng, SearchFailure};
use rummy_core::tools::search::{record_failure, record_results, request_of, SearchHit};
use rummy_core::turn::dispatch::Dispatched;
use rummy_core::turn::{state, TurnRef};
use serde_json::Value;
use std::time::Duration;

/// The outcome of a search the backend could not answer (as `record_failure` writes it).
const FAILED_OUTCOME: &str = "502";

/// A SearXNG instance, asked over HTTP with its JSON output format.
#[derive(Debug, Clone)]
pub struct SearchClient {
    http: reqwest::Client,
    /// `<base>/search`.
    endpoint: String,
    /// Reported in the failure the model reads when the backend is too slow.
    timeout_ms: u64,
}

impl SearchClient {
    /// A client for the instance at `base_url` (no trailing `/`) that gives up on a search after `timeout_ms`.
    pub fn new(base_url: &str, timeout_ms: u64) -> Result<SearchClient, String> {
        let http = reqwest::Client::builder()
            .timeout(Duration::from_millis(timeout_ms))
            .build()
            .map_err(|e| format!("cannot build the search HTTP client: {e}"))?;
        Ok(SearchClient {
            http,
            endpoint: format!("{base_url}/search"),
            timeout_ms,
        })
    }

    /// The client for `RUMMY_SEARXNG_URL`, or none when it is not set (then `search` is not offered).
    pub fn from_config(config: &Config) -> Result<Option<SearchClient>, String> {
        config
            .searxng_url
            .as_deref()
            .map(|url| SearchClient::new(url, config.limits.search_timeout_ms))
            .transpose()
    }

    /// `GET <base>/search?q=<query>&format=json&language=en`: at most `limit` hits, in the backend's rank order.
    pub async fn search(&self, query: &str, limit: usize) -> Result<Vec<SearchHit>, SearchFailure> {
        let response = self
            .http
            .get(&self.endpoint)
            .query(&[("q", query), ("format", "json"), ("language", "en")])
            .header(reqwest::header::ACCEPT, "application/json")
            .send()
            .await
            .map_err(|e| self.failure(&e))?;
        let status = response.status();
        if !status.is_success() {
            return Err(SearchFailure::Status(status.as_u16()));
        }
        let body = response.bytes().await.map_err(|e| self.failure(&e))?;
        parse_searxng(&body, limit)
    }

    /// What a transport error means for the model.
    fn failure(&self, e: &reqwest::Error) -> SearchFailure {
        if e.is_timeout() {
            SearchFailure::TimedOut(self.timeout_ms)
        } else if e.is_body() || e.is_decode() {
            SearchFailure::BadAnswer(format!("the answer broke off: {}", root_cause(e)))
        } else {
            SearchFailure::Unreachable(root_cause(e))
        }
    }
}

/// The innermost cause of an error ("Connection refused (os error 111)"), which says more than reqwest's own text, and holds no URL.
fn root_cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut cause = e;
    while let Some(next) = cause.source() {
        cause = next;
    }
    cause.to_string()
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
    if done.tool != "search" || done.state != State::Streaming {
        return Ok(done);
    }
    let failure = |e: rummy_core::store::StoreError| TurnFailure {
        message: e.to_string(),
    };
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
    let params: Recorded = svc
        .store
        .write(move |c| {
            let now = now();
            match &found {
                Ok(hits) => record_results(c, t, divisor, &path, hits, now)?,
                Err(reason) => record_failure(c, t, divisor, &path, reason, now)?,
            }
            state::push(
                c,
                run_id,
                t.turn,
                RunStatus::Running.code(),
                Value::Null,
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
        done.outcome = Some(FAILED_OUTCOME.to_owned());
    }
    Ok(done)
}
