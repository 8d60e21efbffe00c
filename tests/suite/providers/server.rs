//! Providers as a run's clients see them through a real server: deltas, retries and reroutes as notifications, a clear error for an unconfigured provider, and one limiter shared by fifty runs.

use super::quick_retries;
use crate::support::{start_run, wait_status, TestServer, WAIT};
use pretty_assertions::assert_eq;
use rummy::config::{OllamaConfig, ProviderLimits};
use rummy_store::models::ModelSeed;
use rummy_testkit::{FakeProvider, Reply};
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::time::Duration;

/// The params of the `ui/render` notifications received so far, in order.
fn renders(client: &mut rummy_testkit::RpcClient) -> Vec<Value> {
    client
        .drain_notifications()
        .into_iter()
        .filter(|n| n["method"] == json!("ui/render"))
        .map(|n| n["params"].clone())
        .collect()
}

/// A retried 503 shows as `run/progress retrying`, the answer streams as `ui/render`, and the loop completes.
#[actix_rt::test]
async fn clients_see_retries_and_deltas() {
    let server = TestServer::start_with(|c| c.providers.retry = quick_retries()).await;
    server.provider.push(Reply::status(
        503,
        json!({"error": {"message": "overloaded"}}),
    ));
    server
        .provider
        .push(Reply::content("<update status=\"200\">all done</update>"));
    let mut client = server.project_client("demo").await;
    let alias = start_run(&mut client, "run://streamed", "Hello?").await;
    let retrying = client
        .wait_for_notification("run/progress", WAIT, |p| p["status"] == json!("retrying"))
        .await
        .unwrap();
    assert_eq!(
        (&retrying["run"], &retrying["detail"]),
        (
            &json!(alias),
            &json!("openai API error: 503 - {\"error\":{\"message\":\"overloaded\"}}")
        )
    );
    assert!(retrying["delayMs"]
        .as_u64()
        .is_some_and(|ms| ms <= quick_retries().cap_ms));
    wait_status(&mut client, &alias, 200).await;
    let renders = renders(&mut client);
    let text: String = renders.iter().filter_map(|r| r["text"].as_str()).collect();
    let appends: Vec<&Value> = renders.iter().map(|r| &r["append"]).collect();
    assert_eq!(text, "<update status=\"200\">all done</update>");
    assert_eq!(appends[0], &json!(false));
    assert!(
        appends[1..].iter().all(|a| **a == json!(true)),
        "{appends:?}"
    );
    server.stop().await;
}

/// A reply streamed a word at a time reaches clients whole and in order, but gathered into far
/// fewer `ui/render` frames than the provider sent deltas (the first at once, then at most one
/// per 25 ms).
#[actix_rt::test]
async fn streamed_text_is_gathered_into_few_frames() {
    let server = TestServer::start().await;
    let words: Vec<String> = (1..=40).map(|i| format!("word{i}")).collect();
    let reply = format!("<update status=\"200\">{}</update>", words.join(" "));
    server.provider.push(Reply::content(reply.clone()));
    let mut client = server.project_client("demo").await;
    let alias = start_run(&mut client, "run://gathered", "Talk").await;
    wait_status(&mut client, &alias, 200).await;
    let renders = renders(&mut client);
    let text: String = renders.iter().filter_map(|r| r["text"].as_str()).collect();
    assert_eq!(text, reply);
    assert_eq!(renders[0]["append"], json!(false));
    assert!(renders[1..].iter().all(|r| r["append"] == json!(true)));
    assert!(renders
        .iter()
        .all(|r| r["run"] == json!(alias) && r["turn"] == json!(1)));
    // 41 deltas written back to back: only a stall of hundreds of milliseconds between them
    // could spread them over this many intervals.
    assert!(renders.len() < 20, "{} renders", renders.len());
    server.stop().await;
}

/// A model whose provider does not know it is rerouted to its fallback; clients see `rerouted`.
#[actix_rt::test]
async fn clients_see_the_reroute() {
    let backup = FakeProvider::start().unwrap();
    backup.push(Reply::content(
        "<update status=\"200\">from the backup</update>",
    ));
    let backup_url = backup.base_url();
    let server = TestServer::start_with(move |c| {
        c.models[0].fallback = Some("backup".into());
        c.models.push(ModelSeed {
            alias: "backup".into(),
            actual: "ollama/small".into(),
            context_length: Some(8192),
            fallback: None,
        });
        c.providers.ollama = Some(OllamaConfig {
            base_url: backup_url,
        });
    })
    .await;
    server.provider.push(Reply::status(
        404,
        json!({"error": {"code": "model_not_found", "message": "The model `fake-model` does not exist"}}),
    ));
    let mut client = server.project_client("demo").await;
    let alias = start_run(&mut client, "run://rerouted", "Hello?").await;
    let rerouted = client
        .wait_for_notification("run/progress", WAIT, |p| p["status"] == json!("rerouted"))
        .await
        .unwrap();
    assert_eq!(rerouted["to"], json!("backup"));
    assert!(rerouted["detail"]
        .as_str()
        .unwrap_or_default()
        .starts_with("openai API error: 404"));
    let last = wait_status(&mut client, &alias, 200).await;
    assert_eq!(last["summary"], json!("from the backup"));
    assert_eq!(backup.chat_requests().len(), 1);
    assert_eq!(backup.chat_requests()[0].body["model"], json!("small"));
    server.stop().await;
}

/// A run with `fallback: false` never goes to its model's fallback: the failure that would
/// have been rerouted ends the loop 500 and the backup is not asked; configured back to
/// `fallback: true`, the run's next loop is rerouted again.
#[actix_rt::test]
async fn fallback_false_keeps_the_run_off_the_fallback() {
    let backup = FakeProvider::start().unwrap();
    backup.push(Reply::content(
        "<update status=\"200\">from the backup</update>",
    ));
    let backup_url = backup.base_url();
    let server = TestServer::start_with(move |c| {
        c.models[0].fallback = Some("backup".into());
        c.models.push(ModelSeed {
            alias: "backup".into(),
            actual: "ollama/small".into(),
            context_length: Some(8192),
            fallback: None,
        });
        c.providers.ollama = Some(OllamaConfig {
            base_url: backup_url,
        });
    })
    .await;
    let not_found = || {
        Reply::status(
            404,
            json!({"error": {"code": "model_not_found", "message": "The model `fake-model` does not exist"}}),
        )
    };
    server.provider.push(not_found());
    server.provider.push(not_found());
    let mut client = server.project_client("demo").await;
    client
        .call(
            "set",
            json!({"path": "run://strict", "body": "Hello?", "attributes": {"model": "fast", "fallback": false}}),
        )
        .await
        .unwrap();
    wait_status(&mut client, "strict", 500).await;
    let failed = client
        .call("getRun", json!({"run": "strict"}))
        .await
        .unwrap();
    let errors: Vec<&Value> = failed["history"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|h| {
            h["path"]
                .as_str()
                .is_some_and(|p| p.starts_with("error://"))
        })
        .map(|h| &h["body"])
        .collect();
    assert_eq!(errors.len(), 1, "{failed}");
    assert!(
        errors[0].as_str().unwrap_or_default().contains("404"),
        "{errors:?}"
    );
    let rerouted_while_strict = client
        .drain_notifications()
        .into_iter()
        .filter(|n| {
            n["method"] == json!("run/progress") && n["params"]["status"] == json!("rerouted")
        })
        .count();
    assert_eq!(
        (rerouted_while_strict, backup.chat_requests().len()),
        (0, 0)
    );

    client
        .call(
            "set",
            json!({"path": "run://strict", "body": "Again?", "attributes": {"fallback": true}}),
        )
        .await
        .unwrap();
    let rerouted = client
        .wait_for_notification("run/progress", WAIT, |p| p["status"] == json!("rerouted"))
        .await
        .unwrap();
    let done = wait_status(&mut client, "strict", 200).await;
    assert_eq!(
        (
            &rerouted["to"],
            &done["summary"],
            backup.chat_requests().len()
        ),
        (&json!("backup"), &json!("from the backup"), 1)
    );
    server.stop().await;
}

/// A model on a provider that is not configured, or not known, is refused with a message saying what to set.
#[actix_rt::test]
async fn unconfigured_provider_is_a_clear_error() {
    let server = TestServer::start().await;
    let mut client = server.project_client("demo").await;
    let cases = [
        ("grok", "xai/grok-4", "provider \"xai\" for model \"grok\" is not configured: set XAI_API_KEY (and XAI_BASE_URL for another host)"),
        ("local", "ollama/qwen3", "provider \"ollama\" for model \"local\" is not configured: set OLLAMA_BASE_URL"),
        ("odd", "anthropic/claude", "provider \"anthropic\" for model \"odd\" is not supported (supported: openai, ollama, openrouter, xai)"),
    ];
    for (alias, actual, message) in cases {
        client
            .call("addModel", json!({ "alias": alias, "actual": actual }))
            .await
            .unwrap();
        let err = client
            .call_err(
                "set",
                json!({ "path": "run://", "body": "hi", "attributes": { "model": alias } }),
            )
            .await;
        assert_eq!((err.code, err.message.as_str()), (-32004, message));
    }
    server.stop().await;
}

/// Fifty runs share `RUMMY_OPENAI_CONCURRENCY=2`: never more than two requests in flight, waiting runs see `queued`, all finish.
#[actix_rt::test]
async fn fifty_runs_share_two_slots() {
    const RUNS: usize = 50;
    let server = TestServer::start_with(|c| {
        c.providers.limits.insert(
            "openai".into(),
            ProviderLimits {
                concurrency: 2,
                rpm: None,
                tpm: None,
            },
        );
    })
    .await;
    server.provider.set_fallback(
        Reply::content("<update status=\"200\">done</update>").delay(Duration::from_millis(10)),
    );
    let mut client = server.project_client("demo").await;
    let mut ids = Vec::new();
    for _ in 0..RUNS {
        let id = client
            .send_request(
                "set",
                json!({ "path": "run://", "body": "hi", "attributes": { "model": "fast" } }),
            )
            .await
            .unwrap();
        ids.push(id);
    }
    for id in ids {
        client.response_for(id).await.unwrap();
    }
    let mut done = BTreeSet::new();
    let mut queued = 0;
    while done.len() < RUNS {
        let note = client
            .wait_for_notification("run/state", Duration::from_secs(30), |p| {
                p["status"] == json!(200)
            })
            .await
            .unwrap_or_else(|e| panic!("{} of {RUNS} runs finished: {e:?}", done.len()));
        done.insert(note["run"].as_str().unwrap_or_default().to_owned());
    }
    for n in client.drain_notifications() {
        if n["method"] == json!("run/progress") && n["params"]["status"] == json!("queued") {
            queued += 1;
        }
    }
    assert_eq!(server.provider.chat_requests().len(), RUNS);
    assert_eq!(server.provider.max_in_flight(), 2);
    assert!(queued > 0, "no run was told it was queued");
    server.stop().await;
}
