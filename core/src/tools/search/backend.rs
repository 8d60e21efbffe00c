//! What a search backend answers, read without any I/O: SearXNG's `format=json` answer as hits, and each way a search can fail as the text the model reads.
//!
//! The executor does the HTTP request; everything it hands over is decided
//! here, so the hits kept and the failure texts are tested without a network.

use super::SearchHit;
use serde_json::Value;

/// Why a search brought back no hits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SearchFailure {
    /// The backend could not be reached (connection refused, DNS, TLS); the cause as the HTTP client reports it.
    Unreachable(String),
    /// The backend did not answer within the search timeout (ms).
    TimedOut(u64),
    /// The backend answered with this HTTP error status.
    Status(u16),
    /// The answer is not SearXNG's JSON; what was wrong with it.
    BadAnswer(String),
}

impl SearchFailure {
    /// The failed result's body: what happened, and what the model can do instead.
    pub fn message(&self, query: &str) -> String {
        let cause = match self {
            SearchFailure::Unreachable(cause) => {
                format!("the search backend could not be reached ({cause})")
            }
            SearchFailure::TimedOut(ms) => {
                format!("the search backend did not answer within {ms} ms")
            }
            SearchFailure::Status(code) => format!("the search backend answered HTTP {code}"),
            SearchFailure::BadAnswer(what) => {
                format!("the search backend's answer could not be read ({what})")
            }
        };
        format!(
            "Search for \"{query}\" failed: {cause}. Work from what you already have, or search again on a later turn."
        )
    }
}

/// Whether `url` is a web page address (`http://` or `https://`, any case).
pub fn is_web_url(url: &str) -> bool {
    let lower = url.get(..8).unwrap_or(url).to_ascii_lowercase();
    lower.starts_with("http://") || lower.starts_with("https://")
}

/// Reads SearXNG's JSON answer: the hits of `results[]` with a web URL, in rank
/// order, repeated URLs dropped, at most `limit`. A hit without a title is
/// titled by its URL; one without `content` has an empty snippet.
pub fn parse_searxng(body: &[u8], limit: usize) -> Result<Vec<SearchHit>, SearchFailure> {
    let answer: Value = serde_json::from_slice(body)
        .map_err(|e| SearchFailure::BadAnswer(format!("not JSON: {e}")))?;
    let results = answer
        .get("results")
        .and_then(Value::as_array)
        .ok_or_else(|| SearchFailure::BadAnswer("no results list".to_owned()))?;
    let text = |hit: &Value, key: &str| {
        hit.get(key)
            .and_then(Value::as_str)
            .map(str::trim)
            .unwrap_or_default()
            .to_owned()
    };
    let mut hits: Vec<SearchHit> = Vec::new();
    for hit in results {
        if hits.len() >= limit {
            break;
        }
        let url = text(hit, "url");
        if !is_web_url(&url) || hits.iter().any(|h| h.url == url) {
            continue;
        }
        let title = Some(text(hit, "title"))
            .filter(|t| !t.is_empty())
            .unwrap_or_else(|| url.clone());
        hits.push(SearchHit {
            snippet: text(hit, "content"),
            title,
            url,
        });
    }
    Ok(hits)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    fn hit(url: &str, title: &str, snippet: &str) -> SearchHit {
        SearchHit {
            url: url.to_owned(),
            title: title.to_owned(),
            snippet: snippet.to_owned(),
        }
    }

    /// Web hits are kept in rank order up to the limit; other schemes, repeats and URL-less hits are skipped.
    #[test]
    fn searxng_hits_in_rank_order() {
        let answer = json!({
            "query": "rust actix",
            "number_of_results": 6,
            "results": [
                {"url": "https://actix.rs/", "title": "Actix", "content": "Actor framework.", "engine": "duckduckgo"},
                {"url": "ftp://mirror/actix", "title": "Mirror", "content": "no"},
                {"title": "No URL", "content": "no"},
                {"url": "https://actix.rs/", "title": "Actix again", "content": "repeat"},
                {"url": " HTTP://docs.rs/actix ", "title": "", "content": null},
                {"url": "https://crates.io/crates/actix", "title": "actix on crates.io", "content": " Crate. "},
                {"url": "https://github.com/actix/actix", "title": "beyond the limit", "content": ""},
            ],
        });
        let body = answer.to_string();
        assert_eq!(
            parse_searxng(body.as_bytes(), 3),
            Ok(vec![
                hit("https://actix.rs/", "Actix", "Actor framework."),
                hit("HTTP://docs.rs/actix", "HTTP://docs.rs/actix", ""),
                hit(
                    "https://crates.io/crates/actix",
                    "actix on crates.io",
                    "Crate."
                ),
            ])
        );
        assert_eq!(parse_searxng(body.as_bytes(), 1).map(|h| h.len()), Ok(1));
        assert_eq!(parse_searxng(br#"{"results": []}"#, 12), Ok(Vec::new()));
    }

    /// An answer that is not SearXNG's JSON is a failure naming what was wrong.
    #[test]
    fn unreadable_answers_fail() {
        let table: [(&[u8], &str); 3] = [
            (
                b"<html>busy</html>",
                "not JSON: expected value at line 1 column 1",
            ),
            (br#"{"error": "rate limited"}"#, "no results list"),
            (br#"{"results": "none"}"#, "no results list"),
        ];
        for (body, what) in table {
            assert_eq!(
                parse_searxng(body, 12),
                Err(SearchFailure::BadAnswer(what.to_owned()))
            );
        }
    }

    /// Each failure tells the model the query, the cause and what to do instead.
    #[test]
    fn failure_messages() {
        let tail = "Work from what you already have, or search again on a later turn.";
        let table = [
            (
                SearchFailure::Unreachable("Connection refused (os error 111)".into()),
                "the search backend could not be reached (Connection refused (os error 111))",
            ),
            (
                SearchFailure::TimedOut(10_000),
                "the search backend did not answer within 10000 ms",
            ),
            (
                SearchFailure::Status(500),
                "the search backend answered HTTP 500",
            ),
            (
                SearchFailure::BadAnswer("no results list".into()),
                "the search backend's answer could not be read (no results list)",
            ),
        ];
        for (failure, cause) in table {
            assert_eq!(
                failure.message("rust actix"),
                format!("Search for \"rust actix\" failed: {cause}. {tail}")
            );
        }
    }
}
