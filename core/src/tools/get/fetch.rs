//! `get` of a web page's URL where the model's web fetch is on: a page fetched in this run is
//! read from its entry (the run's cache); a page of the project's domains is fetched at once
//! (a streaming result the turn answers before it goes on); any other page is a `fetch`
//! proposal, fetched by the server once a person accepts it. Where fetch is off, a URL's `get`
//! promotes what a search stored of it, as any other entry.

use super::super::handler::{Handler, ToolResult};
use super::super::proposal::Proposed;
use rummy_store::db::Db;
use rummy_store::entries::TurnRef;
use rummy_store::entries::{self, EntryWrite, RunRef, WriteCtx};
use rummy_store::entry::{FailureKind, State, Visibility, Writer};
use rummy_store::StoreError;
use rummy_text::path::normalize;
use serde_json::{json, Value};

/// Characters of a fetched page kept as its `snippet`, what its summarized view shows.
pub const SNIPPET_CHARS: usize = 280;

/// Whether `text` is a web page's address (`http://` or `https://`, any case).
pub fn is_url(text: &str) -> bool {
    crate::tools::search::backend::is_web_url(text)
}

/// The host a URL names, lower case, without user, port or brackets; `None` when it names none.
pub fn host_of(url: &str) -> Option<String> {
    let rest = url.split_once("://")?.1;
    let authority = rest.split(['/', '?', '#']).next()?;
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = if let Some(v6) = host_port.strip_prefix('[') {
        v6.split(']').next()?
    } else {
        host_port.split(':').next()?
    };
    Some(host.to_ascii_lowercase()).filter(|h| !h.is_empty())
}

/// The result of `get` of `url`, when its web fetch decides it: `None` for a page fetched in
/// this run already (its entry is read as any other).
pub fn get(
    h: &mut Handler<'_>,
    url: &str,
    domains: &[String],
) -> Result<Option<ToolResult>, StoreError> {
    let Ok(path) = normalize(url) else {
        return Ok(None);
    };
    if let Some(row) = h.find(&path)? {
        if row.attributes().get("fetched") == Some(&Value::Bool(true)) {
            return Ok(None);
        }
    }
    let Some(host) = host_of(url) else {
        return Ok(Some(ToolResult::failed(
            &path,
            FailureKind::Validation,
            format!("{url} names no host"),
        )));
    };
    if crate::web::domains::allows(domains, &host) {
        return Ok(Some(ToolResult::streaming(&path, "fetch").with("url", url)));
    }
    if h.ctx.flags.no_proposals {
        return Ok(Some(ToolResult::failed(
            &path,
            FailureKind::Permission,
            format!("{host} is outside the domains this project fetches from without asking, and this loop runs without proposals (noProposals), so nobody can approve fetching {url}"),
        )));
    }
    let kind = Proposed::Fetch {
        url: url.to_owned(),
    };
    Ok(Some(
        ToolResult::proposed(&path, "", &kind)
            .with("summary", url)
            .with("runner", "server"),
    ))
}

/// A page as fetched, for the store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fetched {
    /// Where it was read from, after redirects.
    pub url: String,
    /// Its readable text.
    pub text: String,
    /// Its content type.
    pub content_type: String,
    /// Whether it was cut at the size limit.
    pub truncated: bool,
}

/// Writes a fetched page as the visible data entry of the URL asked for (`path`, normalised),
/// marked fetched (the run's cache), in turn `turn` of `run`; answers its tokens.
pub fn record_page(
    conn: &mut Db,
    (run, turn): (RunRef, i32),
    path: &str,
    page: &Fetched,
    at: WriteCtx,
) -> Result<i32, StoreError> {
    let snippet: String = page.text.chars().take(SNIPPET_CHARS).collect();
    let title = page
        .text
        .lines()
        .next()
        .and_then(|l| l.strip_prefix("Title: "))
        .unwrap_or(&page.url);
    let attributes = json!({
        "fetched": true,
        "url": page.url,
        "contentType": page.content_type,
        "truncated": page.truncated,
        "title": title,
        "snippet": snippet,
        "summary": title.chars().take(crate::tools::handler::SUMMARY_CHARS).collect::<String>(),
    });
    entries::write(
        conn,
        &EntryWrite {
            run,
            path,
            body: &page.text,
            attributes: &attributes,
            state: State::Resolved,
            outcome: None,
            visibility: Visibility::Visible,
            loop_id: None,
            turn,
            writer: Writer::Plugin,
        },
        at,
    )?;
    Ok(entries::by_path(conn, run.run_id, path)?.map_or(0, |row| row.tokens))
}

/// The body of a `get` that fetched a page: where it is and what it costs.
pub fn fetched_body(path: &str, tokens: i32, truncated: bool) -> String {
    let cut = if truncated {
        ", cut at the size limit"
    } else {
        ""
    };
    format!("{path} fetched ({tokens} tokens{cut})")
}

/// Settles the streaming `get` at `result` of a fetch: resolved with `body`, or failed with
/// `outcome` and the reason as its body.
pub fn settle_get(
    conn: &mut Db,
    t: TurnRef,
    result: &str,
    outcome: Result<String, (FailureKind, String)>,
    at: WriteCtx,
) -> Result<(), StoreError> {
    let row = entries::by_path(conn, t.run.run_id, result)?
        .ok_or_else(|| StoreError::NotFound(format!("{result} not found in this run")))?;
    let attributes = row.attributes();
    let (body, state, failure) = match outcome {
        Ok(body) => (body, State::Resolved, None),
        Err((kind, reason)) => (reason, State::Failed, Some(kind.to_string())),
    };
    crate::tools::search::plugin_write(
        conn,
        t,
        (result, &body, &attributes),
        (state, failure.as_deref(), Visibility::Visible),
        at,
    )
}
