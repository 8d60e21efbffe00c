//! Replies are bounded: a reply past `RUMMY_MAX_REPLY_BYTES` is cut off and fails its call, neither retried nor sent to a fallback, and the run stays usable; streamed text reaches clients in `ui/render` notifications of bounded size.

use super::Rig;
use crate::support::{start_run, wait_status, TestServer, WAIT};
use pretty_assertions::assert_eq;
use rummy::config::{OllamaConfig, OpenAiConfig};
use rummy_actors::provider::ProviderEvent;
use rummy_testkit::{FakeProvider, Reply};
use serde_json::json;
use std::time::{Duration, Instant};

/// The reply limit every test here sets: 64 KiB of text and reasoning.
const LIMIT: usize = 64 * 1024;

/// The error a reply past [`LIMIT`] fails with.
fn too_large() -> String {
    format!("openai reply passed RUMMY_MAX_REPLY_BYTES ({LIMIT} bytes): the call was cut off")
}

/// One chat-completions stream chunk carrying `text`.
fn text_chunk(text: &str) -> String {
    let chunk =
        json!({"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": null}]});
    format!("data: {chunk}\n\n")
}

/// A streamed reply of `pieces` chunks of 16 KiB of text each, then its end.
fn big_stream(pieces: usize) -> Reply {
    let piece = "0123456789abcdef".repeat(1024);
    let mut events: Vec<String> = (0..pieces).map(|_| text_chunk(&piece)).collect();
    events.push(
        "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n".into(),
    );
    events.push("data: [DONE]\n\n".into());
    Reply::raw_sse(events)
}

/// A whole (non-streamed) chat completion whose content is `text`.
fn whole_answer(text: String) -> Reply {
    Reply::status(
        200,
        json!({"choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}]}),
    )
}

/// Streamed text past the limit, one endless stream event, a whole body past its raw bound and a
/// whole answer whose text passes the limit all fail the call with the same error, after one
/// request: no retry, no fallback, and no more than the limit of text was shown.
#[actix_rt::test]
async fn replies_past_the_limit_fail_their_call() {
    let endless = (0..64)
        .map(|i| {
            let head = if i == 0 { "data: {\"choices\":\"" } else { "" };
            format!("{head}{}", "x".repeat(16 * 1024))
        })
        .collect();
    let cases: [(&str, Reply); 4] = [
        ("streamed text of 1 MiB", big_stream(64)),
        ("a stream event that never ends", Reply::raw_sse(endless)),
        (
            "a whole body of 1 MiB",
            whole_answer("x".repeat(1024 * 1024)),
        ),
        (
            "a whole answer of 100 KiB",
            whole_answer("x".repeat(100 * 1024)),
        ),
    ];
    for (name, reply) in cases {
        let (primary, backup) = (
            FakeProvider::start().unwrap(),
            FakeProvider::start().unwrap(),
        );
        primary.push(reply);
        primary.set_fallback(Reply::content("should not be asked again"));
        backup.set_fallback(Reply::content("should not be asked"));
        let rig = Rig::start(|c| {
            c.limits.max_reply_bytes = LIMIT;
            c.providers.openai = Some(OpenAiConfig {
                base_url: primary.base_url(),
                api_key: None,
            });
            c.providers.ollama = Some(OllamaConfig {
                base_url: backup.base_url(),
            });
        })
        .await;
        rig.model("backup", "ollama/small", None).await;
        let model = rig.model("m", "openai/gpt-x", Some("backup")).await;
        let (result, events) = rig.call(&model).await;
        assert_eq!(result, Err(too_large()), "{name}");
        let shown: usize = events
            .iter()
            .map(|e| match e {
                ProviderEvent::Delta(text) => text.len(),
                other => panic!("{name}: {other:?}"),
            })
            .sum();
        assert!(shown <= LIMIT, "{name}: {shown} bytes shown");
        assert_eq!(
            (primary.chat_requests().len(), backup.chat_requests().len()),
            (1, 0),
            "{name}"
        );
    }
}

/// Through a real server: a streamed reply of 1 MiB against a 64 KiB limit ends the loop 500 with
/// an `error://` entry naming the limit, the server stops reading (the provider sees the
/// connection go long before its stream would have ended), and the run's next prompt succeeds.
#[actix_rt::test]
async fn a_reply_past_the_limit_fails_the_loop_not_the_run() {
    let server = TestServer::start_with(|c| c.limits.max_reply_bytes = LIMIT).await;
    // 64 chunks 60 ms apart: the whole stream would take almost four seconds.
    server
        .provider
        .push(big_stream(64).chunk_delay(Duration::from_millis(60)));
    server
        .provider
        .push(Reply::content("<update status=\"200\">back</update>"));
    let mut client = server.project_client("demo").await;
    let started = Instant::now();
    let alias = start_run(&mut client, "run://huge", "Talk a lot").await;
    wait_status(&mut client, &alias, 500).await;
    while server.provider.in_flight() > 0 && started.elapsed() < WAIT {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let stopped = started.elapsed();
    assert!(
        stopped < Duration::from_secs(2),
        "the stream was read for {stopped:?}"
    );
    let errors = client
        .call(
            "getEntries",
            json!({ "run": alias, "scheme": "error", "withBody": true }),
        )
        .await
        .unwrap();
    let bodies: Vec<&str> = errors
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["body"].as_str())
        .collect();
    assert_eq!(bodies, vec![too_large().as_str()]);
    client
        .call(
            "set",
            json!({ "path": format!("run://{alias}"), "body": "Again, briefly" }),
        )
        .await
        .unwrap();
    let last = wait_status(&mut client, &alias, 200).await;
    assert_eq!(last["summary"], json!("back"));
    assert_eq!(server.provider.chat_requests().len(), 2);
    // Closed first: after text streamed in several large frames, the server's graceful stop
    // otherwise waits its whole 5 s shutdown timeout for this client's connection.
    drop(client);
    server.stop().await;
}

/// A reply that arrives in one burst of about 200 KiB reaches clients as several `ui/render`
/// notifications of at most 64 KiB of text each, cut between characters, whose texts join back
/// into the reply exactly, the first alone not an append.
#[actix_rt::test]
async fn a_big_burst_reaches_clients_in_bounded_pieces() {
    let server = TestServer::start().await;
    // Two-byte characters after a 21-byte tag: a cut at 64 KiB would fall inside one.
    let reply = format!("<update status=\"200\">{}</update>", "é".repeat(100_000));
    server.provider.push(Reply::content(reply.clone()));
    let mut client = server.project_client("demo").await;
    let alias = start_run(&mut client, "run://burst", "Say it all").await;
    wait_status(&mut client, &alias, 200).await;
    let renders: Vec<serde_json::Value> = client
        .drain_notifications()
        .into_iter()
        .filter(|n| n["method"] == json!("ui/render"))
        .map(|n| n["params"].clone())
        .collect();
    let texts: Vec<&str> = renders.iter().filter_map(|r| r["text"].as_str()).collect();
    let appends: Vec<bool> = renders.iter().map(|r| r["append"] == json!(true)).collect();
    assert_eq!(texts.concat(), reply);
    assert!(
        texts.iter().all(|t| t.len() <= 64 * 1024),
        "render sizes: {:?}",
        texts.iter().map(|t| t.len()).collect::<Vec<_>>()
    );
    assert!(
        texts.len() >= reply.len().div_ceil(64 * 1024),
        "{} renders",
        texts.len()
    );
    assert_eq!(
        appends,
        [vec![false], vec![true; appends.len() - 1]].concat()
    );
    drop(client);
    server.stop().await;
}

/// A model's streamed reasoning reaches clients as `ui/render`s marked `reasoning`, before its
/// text, each with its own `append` sequence; the text's renders are unmarked.
#[actix_rt::test]
async fn reasoning_streams_to_clients_apart_from_the_text() {
    let server = TestServer::start().await;
    let reply = "<update status=\"200\">the answer</update>";
    server
        .provider
        .push(Reply::content(reply).reasoning("first I look, then I answer"));
    let mut client = server.project_client("thinking").await;
    let alias = start_run(&mut client, "run://think", "Why?").await;
    wait_status(&mut client, &alias, 200).await;
    let renders: Vec<serde_json::Value> = client
        .drain_notifications()
        .into_iter()
        .filter(|n| n["method"] == json!("ui/render"))
        .map(|n| n["params"].clone())
        .collect();
    let part = |reasoning: bool| -> (String, Vec<bool>) {
        let mine: Vec<&serde_json::Value> = renders
            .iter()
            .filter(|r| (r["reasoning"] == json!(true)) == reasoning)
            .collect();
        (
            mine.iter().filter_map(|r| r["text"].as_str()).collect(),
            mine.iter().map(|r| r["append"] == json!(true)).collect(),
        )
    };
    let (thought, thought_appends) = part(true);
    let (text, text_appends) = part(false);
    assert_eq!(thought, "first I look, then I answer");
    assert_eq!(text, reply);
    assert_eq!(thought_appends.first(), Some(&false));
    assert_eq!(text_appends.first(), Some(&false));
    let first_text = renders.iter().position(|r| r.get("reasoning").is_none());
    let last_thought = renders.iter().rposition(|r| r["reasoning"] == json!(true));
    assert!(last_thought < first_text, "{renders:?}");
    drop(client);
    server.stop().await;
}
