//! Web search: the SearXNG client.
//!
//! Dispatch (in `rummy_core`) leaves a streaming `search://` result holding
//! the query and the number of hits wanted; the turn's search step
//! (`turn::search`) asks SearXNG through [`SearchClient`]. A backend that is
//! down, slow or talking nonsense is a [`SearchFailure`] with the message the
//! model reads, never a failed turn.

use crate::errors::HttpClientError;
use rummy_core::config::Config;
use rummy_core::tools::search::backend::{parse_searxng, SearchFailure};
use rummy_core::tools::search::SearchHit;
use std::time::Duration;

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
    pub fn new(base_url: &str, timeout_ms: u64) -> Result<SearchClient, HttpClientError> {
        let http = reqwest::Client::builder()
            .timeout(Duration::from_millis(timeout_ms))
            .build()?;
        Ok(SearchClient {
            http,
            endpoint: format!("{base_url}/search"),
            timeout_ms,
        })
    }

    /// The client for `RUMMY_SEARXNG_URL`, or none when it is not set (then `search` is not offered).
    pub fn from_config(config: &Config) -> Result<Option<SearchClient>, HttpClientError> {
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
