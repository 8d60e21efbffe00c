//! Provider faults: what is retried (and how long it waits), what never is, when a call falls back to another model, and that a cancelled call frees its slot.

use super::{refused_url, request, without_jitter, Rig};
use pretty_assertions::assert_eq;
use rummy::config::{OllamaConfig, OpenAiConfig, ProviderLimits};
use rummy_actors::provider::{ProviderError, ProviderEvent};
use rummy_provider::retry::RetryPolicy;
use rummy_testkit::{FakeProvider, Reply};
use serde_json::json;
use std::time::{Duration, Instant};

/// Events as short labels, for events whose text comes from the HTTP library.
fn labels(events: &[ProviderEvent]) -> Vec<String> {
    events
        .iter()
        .map(|e| match e {
            ProviderEvent::Delta(text) => format!("delta {text}"),
            ProviderEvent::Reasoning(text) => format!("reasoning {text}"),
            ProviderEvent::Queued(_) => "queued".to_owned(),
            ProviderEvent::Retrying { reason, .. } => {
                format!("retrying: {}", reason.split(':').next().unwrap_or_default())
            }
            ProviderEvent::Rerouted { reason, to } => format!(
                "rerouted to {to}: {}",
                reason.split(':').next().unwrap_or_default()
            ),
        })
        .collect()
}

/// A rig whose `openai` provider is at `primary` (quick retries, `timeout_ms` per request) and whose `ollama` is at `backup`.
async fn rig(primary: String, backup: Option<String>, timeout_ms: u64) -> Rig {
    Rig::start(|c| {
        c.limits.fetch_timeout_ms = timeout_ms;
        c.providers.openai = Some(OpenAiConfig {
            base_url: primary,
            api_key: None,
        });
        c.providers.ollama = backup.map(|base_url| OllamaConfig { base_url });
    })
    .await
}

fn error_503() -> Reply {
    Reply::status(503, json!({"error": {"message": "overloaded"}}))
}

/// 5xx, timeouts and connections dropped before any text are retried with backoff until the answer comes.
#[actix_rt::test]
async fn transient_failures_retry_then_succeed() {
    let cases: [(&str, Vec<Reply>, Vec<&str>); 3] = [
        (
            "503 then 502 then success",
            vec![
                error_503(),
                Reply::status(502, "bad gateway"),
                Reply::content("ok"),
            ],
            vec![
                "retrying: openai API error",
                "retrying: openai API error",
                "delta ok",
            ],
        ),
        (
            "a request that times out",
            vec![Reply::hang(), Reply::content("ok")],
            vec!["retrying: openai timeout after 300 ms", "delta ok"],
        ),
        (
            "a stream cut before any text",
            vec![
                Reply::raw_sse(vec![
                    "data: {\"choices\":[{\"delta\":{\"role\":\"assistant\"}}]}\n\n".into(),
                ])
                .disconnect_after(1),
                Reply::content("ok"),
            ],
            vec!["retrying: openai unreachable", "delta ok"],
        ),
    ];
    for (name, replies, expected) in cases {
        let fake = FakeProvider::start().unwrap();
        let attempts = replies.len();
        replies.into_iter().for_each(|r| fake.push(r));
        let rig = rig(fake.base_url(), None, 300).await;
        let model = rig.model("m", "openai/gpt-x", None).await;
        let (result, events) = rig.call(&model).await;
        assert_eq!(result.map(|c| c.content), Ok("ok".to_owned()), "{name}");
        assert_eq!(labels(&without_jitter(events)), expected, "{name}");
        assert_eq!(fake.chat_requests().len(), attempts, "{name}");
    }
}

/// A rig whose `openai` provider is at `url`, with quick retries but the default `RUMMY_RETRY_CAP_MS` (30 s), the longest `Retry-After` honoured.
async fn rig_with_default_cap(url: String) -> Rig {
    Rig::start(|c| {
        c.providers.retry.cap_ms = RetryPolicy::default().cap_ms;
        c.providers.openai = Some(OpenAiConfig {
            base_url: url,
            api_key: None,
        });
    })
    .await
}

/// A 429's Retry-After is waited out exactly (no jitter), and holds the other runs' requests to that provider too.
#[actix_rt::test]
async fn retry_after_is_honoured_by_everyone() {
    let fake = FakeProvider::start().unwrap();
    let body = json!({"error": {"message": "slow down"}});
    fake.push(Reply::status(429, body.clone()).header("Retry-After", "1"));
    fake.set_fallback(Reply::content("ok"));
    let rig = rig_with_default_cap(fake.base_url()).await;
    let model = rig.model("m", "openai/gpt-x", None).await;
    let route = rig.providers.route(&model).unwrap();
    let started = Instant::now();
    let (tx, mut first_events) = tokio::sync::mpsc::unbounded_channel();
    let first = {
        let (providers, route) = (rig.providers.clone(), route.clone());
        actix_rt::spawn(async move { providers.complete(&route, request("gpt-x", Some(tx))).await })
    };
    let retrying = first_events.recv().await;
    assert_eq!(
        retrying,
        Some(ProviderEvent::Retrying {
            reason: format!("openai API error: 429 - {body}"),
            delay_ms: 1000
        })
    );
    // Another run's call, made while the provider is paused, waits for the pause too.
    let (second, second_events) = rig.call(&model).await;
    let first = first.await.unwrap();
    assert!(
        started.elapsed() >= Duration::from_millis(1000),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(
        (
            first.map(|c| c.content).map_err(|e| e.to_string()),
            second.map(|c| c.content)
        ),
        (Ok("ok".to_owned()), Ok("ok".to_owned()))
    );
    assert_eq!(labels(&second_events), vec!["queued", "delta ok"]);
    let ProviderEvent::Queued(reason) = &second_events[0] else {
        unreachable!()
    };
    assert!(
        reason.starts_with("openai: the provider asked to slow down (429)"),
        "{reason}"
    );
}

/// A 429 whose Retry-After passes `RUMMY_RETRY_CAP_MS` fails that call at once with an error
/// saying so, and pauses nobody: the next call to the provider goes straight through.
#[actix_rt::test]
async fn retry_after_past_the_cap_fails_only_that_call() {
    let cases = [("3600", 3600_u64), ("9999999999999", 9_999_999_999_999)];
    for (header, seconds) in cases {
        let fake = FakeProvider::start().unwrap();
        let body = json!({"error": {"message": "slow down"}});
        fake.push(Reply::status(429, body).header("Retry-After", header));
        fake.set_fallback(Reply::content("ok"));
        let rig = rig_with_default_cap(fake.base_url()).await;
        let model = rig.model("m", "openai/gpt-x", None).await;
        let started = Instant::now();
        let first = rig.call(&model).await;
        let (second, second_events) = rig.call(&model).await;
        let elapsed = started.elapsed();
        assert_eq!(
            (first, (second.map(|c| c.content), second_events)),
            (
                (
                    Err(format!("openai asked to wait {seconds} s before the next request (429 Retry-After), more than RUMMY_RETRY_CAP_MS allows (30000 ms)")),
                    vec![]
                ),
                (Ok("ok".to_owned()), vec![ProviderEvent::Delta("ok".into())]),
            ),
            "Retry-After: {header}"
        );
        assert!(
            elapsed < Duration::from_millis(500),
            "Retry-After: {header}: {elapsed:?}"
        );
        assert_eq!(fake.chat_requests().len(), 2, "Retry-After: {header}");
    }
}

/// The retry budget is small: four 503s in a row fail the call after three retries.
#[actix_rt::test]
async fn retry_budget_runs_out() {
    let fake = FakeProvider::start().unwrap();
    fake.set_fallback(error_503());
    let rig = rig(fake.base_url(), None, 5000).await;
    let model = rig.model("m", "openai/gpt-x", None).await;
    let (result, events) = rig.call(&model).await;
    assert_eq!(
        result,
        Err("openai API error: 503 - {\"error\":{\"message\":\"overloaded\"}}".to_owned())
    );
    assert_eq!(labels(&events), vec!["retrying: openai API error"; 3]);
    assert_eq!(fake.chat_requests().len(), 4);
}

/// Context-length errors, auth and bad requests, and malformed answers are never retried; context length keeps its own error.
#[actix_rt::test]
async fn some_failures_are_never_retried() {
    let cases: [(&str, Reply, &str); 4] = [
        (
            "context length",
            Reply::status(
                400,
                json!({"error": {"message": "This model's maximum context length is 8192 tokens", "code": "context_length_exceeded"}}),
            ),
            "ContextLength",
        ),
        (
            "auth",
            Reply::status(401, json!({"error": {"message": "bad key"}})),
            "Status",
        ),
        (
            "bad request",
            Reply::status(400, json!({"error": {"message": "temperature too high"}})),
            "Status",
        ),
        (
            "not a completion",
            Reply::status(200, "<html>proxy error</html>"),
            "Malformed",
        ),
    ];
    for (name, reply, kind) in cases {
        let fake = FakeProvider::start().unwrap();
        fake.push(reply);
        fake.set_fallback(Reply::content("should not be asked"));
        let rig = rig(fake.base_url(), None, 5000).await;
        let model = rig.model("m", "openai/gpt-x", None).await;
        let (result, events) = rig.call_raw(&model).await;
        let got = match &result {
            Err(ProviderError::ContextLength { .. }) => "ContextLength",
            Err(ProviderError::Status { .. }) => "Status",
            Err(ProviderError::Malformed { .. }) => "Malformed",
            other => panic!("{name}: {other:?}"),
        };
        assert_eq!(
            (got, events, fake.chat_requests().len()),
            (kind, vec![], 1),
            "{name}"
        );
    }
}

/// Transport failures (5xx, 408, 404 model-not-found, refused, timeout) and a 429 asking to wait past the cap go once to the fallback model, after the retries, with a reroute event.
#[actix_rt::test]
async fn fallback_on_transport_failures() {
    let not_found = json!({"error": {"code": "model_not_found", "message": "The model `gpt-x` does not exist"}});
    let cases: [(&str, Vec<Reply>, bool, Vec<&str>); 6] = [
        (
            "5xx",
            vec![error_503(); 4],
            false,
            [
                vec!["retrying: openai API error"; 3],
                vec!["rerouted to backup: openai API error"],
            ]
            .concat(),
        ),
        (
            "408",
            vec![Reply::status(408, "request timeout"); 4],
            false,
            [
                vec!["retrying: openai API error"; 3],
                vec!["rerouted to backup: openai API error"],
            ]
            .concat(),
        ),
        (
            "404 model not found",
            vec![Reply::status(404, not_found)],
            false,
            vec!["rerouted to backup: openai API error"],
        ),
        (
            "connection refused",
            vec![],
            true,
            [
                vec!["retrying: openai unreachable"; 3],
                vec!["rerouted to backup: openai unreachable"],
            ]
            .concat(),
        ),
        (
            "429 asking to wait past the cap",
            vec![Reply::status(429, "slow down").header("Retry-After", "3600")],
            false,
            vec!["rerouted to backup: openai asked to wait 3600 s before the next request (429 Retry-After), more than RUMMY_RETRY_CAP_MS allows (40 ms)"],
        ),
        (
            "timeout",
            vec![Reply::hang(); 4],
            false,
            [
                vec!["retrying: openai timeout after 300 ms"; 3],
                vec!["rerouted to backup: openai timeout after 300 ms"],
            ]
            .concat(),
        ),
    ];
    for (name, replies, refused, expected) in cases {
        let (primary, backup) = (
            FakeProvider::start().unwrap(),
            FakeProvider::start().unwrap(),
        );
        replies.into_iter().for_each(|r| primary.push(r));
        backup.push(Reply::content("from backup"));
        let url = if refused {
            refused_url()
        } else {
            primary.base_url()
        };
        let rig = rig(url, Some(backup.base_url()), 300).await;
        rig.model("backup", "ollama/small", None).await;
        let model = rig.model("m", "openai/gpt-x", Some("backup")).await;
        let (result, events) = rig.call(&model).await;
        let mut want = expected.clone();
        want.push("delta from backup");
        assert_eq!(
            result.map(|c| c.content),
            Ok("from backup".to_owned()),
            "{name}"
        );
        assert_eq!(labels(&events), want, "{name}");
        let asked: Vec<serde_json::Value> = backup
            .chat_requests()
            .iter()
            .map(|r| r.body["model"].clone())
            .collect();
        assert_eq!(asked, vec![json!("small")], "{name}");
    }
}

/// Auth, bad requests, a stream that already showed text, and a fallback that is not configured never reroute.
#[actix_rt::test]
async fn fallback_conditions() {
    let shown = Reply::raw_sse(vec![
        "data: {\"choices\":[{\"delta\":{\"content\":\"Hel\"}}]}\n\n".into(),
    ])
    .disconnect_after(1);
    let cases: [(&str, Reply, bool, &str); 5] = [
        (
            "401",
            Reply::status(401, "no"),
            true,
            "openai API error: 401 - no",
        ),
        (
            "403",
            Reply::status(403, "forbidden"),
            true,
            "openai API error: 403 - forbidden",
        ),
        (
            "400",
            Reply::status(400, "bad shape"),
            true,
            "openai API error: 400 - bad shape",
        ),
        (
            "text already streamed",
            shown,
            true,
            "openai stream interrupted after text was shown",
        ),
        (
            "fallback provider not configured",
            error_503(),
            false,
            "openai API error: 503",
        ),
    ];
    for (name, reply, backup_configured, error) in cases {
        let (primary, backup) = (
            FakeProvider::start().unwrap(),
            FakeProvider::start().unwrap(),
        );
        primary.push(reply);
        primary.set_fallback(error_503());
        backup.set_fallback(Reply::content("should not be asked"));
        let rig = Rig::start(|c| {
            c.providers.retry.max_retries = 0;
            c.providers.openai = Some(OpenAiConfig {
                base_url: primary.base_url(),
                api_key: None,
            });
            c.providers.ollama = backup_configured.then(|| OllamaConfig {
                base_url: backup.base_url(),
            });
        })
        .await;
        rig.model("backup", "ollama/small", None).await;
        let model = rig.model("m", "openai/gpt-x", Some("backup")).await;
        let (result, events) = rig.call(&model).await;
        let message = result.err().unwrap_or_default();
        assert!(message.starts_with(error), "{name}: {message}");
        assert!(
            !labels(&events).iter().any(|l| l.starts_with("rerouted")),
            "{name}: {events:?}"
        );
        assert_eq!(
            (primary.chat_requests().len(), backup.chat_requests().len()),
            (1, 0),
            "{name}"
        );
    }
}

/// A call whose caller stops waiting (a cancelled turn) gives its slot to the next call at once.
#[actix_rt::test]
async fn cancelled_call_frees_its_slot() {
    let fake = FakeProvider::start().unwrap();
    fake.push(Reply::hang());
    fake.push(Reply::content("next"));
    let rig = Rig::start(|c| {
        c.providers.openai = Some(OpenAiConfig {
            base_url: fake.base_url(),
            api_key: None,
        });
        c.providers.limits.insert(
            "openai".into(),
            ProviderLimits {
                concurrency: 1,
                rpm: None,
                tpm: None,
            },
        );
    })
    .await;
    let model = rig.model("m", "openai/gpt-x", None).await;
    let route = rig.providers.route(&model).unwrap();
    let hanging = {
        let (providers, route) = (rig.providers.clone(), route.clone());
        actix_rt::spawn(async move { providers.complete(&route, request("gpt-x", None)).await })
    };
    fake.wait_for_chat_requests(1, crate::support::WAIT).await;
    hanging.abort();
    let next = tokio::time::timeout(crate::support::WAIT, rig.call(&model)).await;
    assert_eq!(
        next.map(|(r, _)| r.map(|c| c.content)),
        Ok(Ok("next".to_owned()))
    );
}
