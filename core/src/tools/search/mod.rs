//! `search`: a web search. The core does no network I/O: dispatch records a
//! streaming result entry, the executor asks the backend, reads its answer
//! with [`backend::parse_searxng`] and hands the hits to [`record_results`]
//! (or a [`backend::SearchFailure`]'s message to [`record_failure`]).
//!
//! Each hit becomes an `http(s)://` data entry, summarized, so the model sees
//! its title (as summary) and snippet and promotes what it wants with `get`.
//!
//! Views: search results show their body when visible, nothing when
//! summarized; a page shows its body when visible and its snippet when
//! summarized.

pub mod backend;

use super::handler::{attr, body, Handler, ToolResult, SUMMARY_CHARS};
use super::wording::listing;
use rummy_store::db::Db;
use rummy_store::entries::{self, EntryWrite, TurnRef, ViewRow, WriteCtx};
use rummy_store::entry::FailureKind;
use rummy_store::entry::{State, Visibility};
use rummy_store::StoreError;
use rummy_text::parse::ToolCall;
use rummy_text::path::{normalize, scheme_of};
use serde_json::{json, Value};

/// The model-facing doc.
pub const DOC: &str = include_str!("doc.md");

/// Results asked for when `results=` is absent.
pub const DEFAULT_RESULTS: u32 = 12;

/// Most results one search may ask for.
pub const MAX_RESULTS: u32 = 20;

/// A search without a query.
pub const QUERY_REQUIRED: &str = "a query is required: <search>terms</search>";

/// A `results` attribute out of range.
pub const BAD_RESULTS: &str = "results must be a whole number from 1 to 20";

/// One hit the backend returned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchHit {
    /// The page's URL (`http://` or `https://`).
    pub url: String,
    /// Its title.
    pub title: String,
    /// The backend's snippet.
    pub snippet: String,
}

/// Runs `search`: a streaming result with the query and the number of results wanted.
pub fn run(_h: &mut Handler<'_>, call: &ToolCall) -> Result<ToolResult, StoreError> {
    let query = attr(call, "path")
        .or_else(|| attr(call, "query"))
        .or_else(|| body(call));
    let Some(query) = query else {
        return Ok(ToolResult::failed(
            "",
            FailureKind::Validation,
            QUERY_REQUIRED,
        ));
    };
    let results = match attr(call, "results").map(str::parse::<u32>) {
        None => DEFAULT_RESULTS,
        Some(Ok(n)) if (1..=MAX_RESULTS).contains(&n) => n,
        Some(_) => {
            return Ok(ToolResult::failed(
                query,
                FailureKind::Validation,
                BAD_RESULTS,
            ))
        }
    };
    Ok(ToolResult::streaming(query, "search")
        .with("query", query)
        .with("results", results))
}

/// `K results for "q"` and one URL per line.
pub fn results_body(query: &str, urls: &[String]) -> String {
    let head = format!("{} results for \"{query}\"", urls.len());
    if urls.is_empty() {
        return head;
    }
    format!("{head}\n{}", listing(urls.iter().cloned()))
}

/// What a streaming search result asks of the backend: its query and how many hits it wants.
pub fn request_of(row: &ViewRow) -> (String, usize) {
    let attributes = row.attributes();
    let query = attributes
        .get("query")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let results = attributes
        .get("results")
        .and_then(Value::as_u64)
        .and_then(|n| usize::try_from(n).ok())
        .unwrap_or(DEFAULT_RESULTS as usize);
    (query, results)
}

/// Records a search's hits: each new page as a summarized data entry, and the result entry at `path` resolved with the list.
pub fn record_results(
    conn: &mut Db,
    t: TurnRef,
    path: &str,
    results: &[SearchHit],
    at: WriteCtx,
) -> Result<(), StoreError> {
    let result = entries::by_path(conn, t.run.run_id, path)?
        .ok_or_else(|| StoreError::NotFound(format!("{path} not found in this run")))?;
    let attributes = result.attributes();
    let (query, _) = request_of(&result);
    let mut urls: Vec<String> = Vec::new();
    for hit in results {
        let Ok(url) = normalize(hit.url.trim()) else {
            continue;
        };
        if !matches!(scheme_of(&url).as_deref(), Some("http" | "https")) || urls.contains(&url) {
            continue;
        }
        if entries::by_path(conn, t.run.run_id, &url)?.is_none() {
            let title = hit.title.trim();
            let page = json!({
                "title": title,
                "snippet": hit.snippet.trim(),
                "query": query,
                "summary": title.chars().take(SUMMARY_CHARS).collect::<String>(),
            });
            let body = format!("# {title}\n\n{}", hit.snippet.trim());
            plugin_write(
                conn,
                t,
                (&url, &body, &page),
                (State::Resolved, None, Visibility::Summarized),
                at,
            )?;
        }
        urls.push(url);
    }
    let body = results_body(&query, &urls);
    plugin_write(
        conn,
        t,
        (path, &body, &attributes),
        (State::Resolved, None, Visibility::Visible),
        at,
    )
}

/// The failure of a search the backend could not answer: `502`.
pub const BACKEND_FAILED: FailureKind = FailureKind::Status { code: 502 };

/// Records that a search failed (the backend was unreachable or answered an error); outcome
/// [`BACKEND_FAILED`].
pub fn record_failure(
    conn: &mut Db,
    t: TurnRef,
    path: &str,
    reason: &str,
    at: WriteCtx,
) -> Result<(), StoreError> {
    let result = entries::by_path(conn, t.run.run_id, path)?
        .ok_or_else(|| StoreError::NotFound(format!("{path} not found in this run")))?;
    let attributes = result.attributes();
    let outcome = BACKEND_FAILED.to_string();
    plugin_write(
        conn,
        t,
        (path, reason, &attributes),
        (State::Failed, Some(&outcome), Visibility::Visible),
        at,
    )
}

/// A plugin write of this turn: (path, body, attributes) with (state, outcome, visibility).
pub(crate) fn plugin_write(
    conn: &mut Db,
    t: TurnRef,
    (path, body, attributes): (&str, &str, &Value),
    (state, outcome, visibility): (State, Option<&str>, Visibility),
    at: WriteCtx,
) -> Result<(), StoreError> {
    entries::write(
        conn,
        &EntryWrite {
            state,
            outcome,
            visibility,
            ..EntryWrite::plugin(t, path, body, attributes)
        },
        at,
    )
    .map(|_| ())
}

/// The summarized view of a page: its snippet (the title is already its summary).
pub fn page_summary(row: &ViewRow) -> String {
    row.attributes()
        .get("snippet")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}
