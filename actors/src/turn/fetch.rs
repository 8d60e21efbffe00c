//! The model's web fetch in a turn: a dispatched `get` of a page of the project's domains is
//! answered before the turn goes on ([`answer`]: the page fetched, written as its URL's
//! entry, the `get` resolved or failed with the reason the model reads, `run/state` pushed),
//! and an accepted `fetch` proposal is fetched while its turn waits ([`accepted`]). A fetch
//! that fails fails the command, never the turn.

use super::{TurnFailure, TurnJob};
use crate::services::Services;
use crate::shell::write_output;
use crate::web_fetch::{FetchError, Reach};
use rummy_core::tools::get::fetch::{fetched_body, host_of, record_page, settle_get, Fetched};
use rummy_core::tools::ToolName;
use rummy_core::turn::dispatch::Dispatched;
use rummy_core::turn::streams::StreamEnd;
use rummy_core::turn::TurnRef;
use rummy_store::entries;
use rummy_store::entries::RunRef;
use rummy_store::entry::{FailureKind, State};
use rummy_store::projects;
use rummy_text::path::normalize;
use serde_json::Value;

/// Answers a dispatched `get` of a web page (a streaming result): fetches it within the
/// project's domains (`domains`, as its dispatch read them), records the page or the failure, pushes `run/state`, and returns the
/// command as it finally stands. Any other command is returned unchanged.
pub async fn answer(
    svc: &Services,
    job: &TurnJob,
    t: TurnRef,
    mut done: Dispatched,
    domains: Option<&[String]>,
) -> Result<Dispatched, TurnFailure> {
    if done.tool != ToolName::Get || done.state != State::Streaming {
        return Ok(done);
    }
    let (run_id, path) = (t.run.run_id, done.path.clone());
    let row = svc
        .store
        .read(move |c| entries::by_path(c, run_id, &path))
        .await
        .map_err(TurnFailure::Store)?;
    let Some(row) = row else {
        return Ok(done);
    };
    let url = row
        .attributes()
        .get("url")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let reach = Reach {
        domains: domains.map(<[String]>::to_vec).unwrap_or_default(),
        approved_host: None,
    };
    let fetched = match &svc.web {
        Some(web) => web.fetch(&url, &reach).await,
        None => Err(FetchError::Refused(format!(
            "{url} is not fetched: the server's web fetch is off"
        ))),
    };
    match &fetched {
        Ok(page) => tracing::info!(url = %url, bytes = page.text.len(), "page fetched"),
        Err(e) => tracing::info!(url = %url, reason = %e.message(), "page not fetched"),
    }
    let result = done.path.clone();
    let ok = fetched.is_ok();
    let outcome_kind = fetched.as_ref().err().map(FetchError::kind);
    super::search::record_answer(svc, job, t, move |c, at| {
        let outcome = match fetched {
            Ok(page) => {
                let page_path = normalize(&url).unwrap_or_else(|_| url.clone());
                let page = Fetched {
                    url: page.url,
                    text: page.text,
                    content_type: page.content_type,
                    truncated: page.truncated,
                };
                let tokens = record_page(c, (t.run, t.turn), &page_path, &page, at)?;
                Ok(fetched_body(&page_path, tokens, page.truncated))
            }
            Err(e) => Err((e.kind(), e.message().to_owned())),
        };
        settle_get(c, t, &result, outcome, at)
    })
    .await?;
    if ok {
        done.state = State::Resolved;
    } else {
        done.state = State::Failed;
        done.outcome = outcome_kind.or(Some(FailureKind::Status { code: 502 }));
    }
    Ok(done)
}

/// Fetches the page of an accepted `fetch` proposal at `path` (turn `turn` of `run`): the
/// person approved its URL, so its host is within reach, and so are the project's domains. The
/// page becomes its URL's entry and the proposal's channel says so — or fails with the reason
/// — and the waiting turn goes on.
pub async fn accepted(svc: &Services, (run, turn): (RunRef, i32), path: &str, url: &str) {
    let project_id = run.project_id;
    let domains = svc
        .store
        .read(move |c| projects::web_domains(c, project_id))
        .await
        .ok()
        .flatten()
        .unwrap_or_default();
    let reach = Reach {
        domains,
        approved_host: host_of(url),
    };
    let fetched = match &svc.web {
        Some(web) => web.fetch(url, &reach).await,
        None => Err(FetchError::Refused(format!(
            "{url} is not fetched: the server's web fetch is off"
        ))),
    };
    let divisor = svc.config.limits.token_divisor;
    let (chunks, end) = match fetched {
        Ok(page) => {
            let page_path = normalize(url).unwrap_or_else(|_| url.to_owned());
            let truncated = page.truncated;
            let page = Fetched {
                url: page.url,
                text: page.text,
                content_type: page.content_type,
                truncated,
            };
            let written = svc
                .store
                .write(move |c| {
                    let at = crate::clock::write_ctx(divisor);
                    let tokens = record_page(c, (run, turn), &page_path, &page, at)?;
                    Ok(fetched_body(&page_path, tokens, truncated))
                })
                .await;
            match written {
                Ok(body) => (
                    vec![(1, body)],
                    StreamEnd::Completed {
                        exit_code: 0,
                        duration: None,
                    },
                ),
                Err(e) => (
                    Vec::new(),
                    StreamEnd::Failed {
                        reason: format!("the page could not be stored: {e}"),
                        duration: None,
                    },
                ),
            }
        }
        Err(e) => (
            Vec::new(),
            StreamEnd::Failed {
                reason: e.message().to_owned(),
                duration: None,
            },
        ),
    };
    let cap = Some(svc.config.shell.output_bytes);
    if let Err(e) = write_output(svc, run, path.to_owned(), chunks, Some(end), cap).await {
        tracing::warn!(path, error = %e, "cannot settle a fetch's channel");
    }
    svc.shell.settled(run.run_id, path);
}
