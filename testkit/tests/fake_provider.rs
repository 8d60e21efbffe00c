//! End-to-end tests of the fake provider over real HTTP on loopback.
#![expect(
    clippy::unwrap_used,
    reason = "a test harness should fail loudly at the first surprise"
)]

use std::time::{Duration, Instant};

use futures_util::StreamExt;
use rummy_testkit::{FakeProvider, Gate, Reply};
use serde_json::{json, Value};

const WAIT: Duration = Duration::from_secs(5);

fn http() -> reqwest::Client {
    reqwest::Client::builder().no_proxy().build().unwrap()
}

async fn post(p: &FakeProvider, path: &str, body: &Value) -> reqwest::Response {
    http()
        .post(format!("{}{path}", p.base_url()))
        .json(body)
        .send()
        .await
        .unwrap()
}

/// Splits an SSE body into its `data:` payloads.
fn sse_data(body: &str) -> Vec<String> {
    body.split("\n\n")
        .filter_map(|event| event.strip_prefix("data: "))
        .map(str::to_owned)
        .collect()
}

/// A scripted content reply comes back as a standard chat completion with deterministic usage.
#[actix_rt::test]
async fn content_reply_is_a_chat_completion() {
    let p = FakeProvider::start().unwrap();
    p.push(Reply::content("hello there, world"));
    let body = json!({"model": "m1", "messages": [{"role": "user", "content": "hi"}]});
    let resp = post(&p, "/v1/chat/completions", &body).await;
    assert_eq!(resp.status(), 200);
    let got: Value = resp.json().await.unwrap();
    let prompt = (body.to_string().len() / 4) as u64;
    assert_eq!(
        got,
        json!({
            "id": "chatcmpl-fake-1",
            "object": "chat.completion",
            "created": 0,
            "model": "m1",
            "choices": [{
                "index": 0,
                "message": {"role": "assistant", "content": "hello there, world"},
                "finish_reason": "stop"
            }],
            "usage": {"prompt_tokens": prompt, "completion_tokens": 4, "total_tokens": prompt + 4}
        })
    );
}

/// `.usage` overrides the token counts and `.reasoning` adds `reasoning_content`.
#[actix_rt::test]
async fn usage_override_and_reasoning() {
    let p = FakeProvider::start().unwrap();
    p.push(Reply::content("ok").usage(7, 3).reasoning("thinking"));
    let got: Value = post(&p, "/v1/chat/completions", &json!({"model": "m"}))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(
        got["choices"][0]["message"]["reasoning_content"],
        "thinking"
    );
    assert_eq!(
        got["usage"],
        json!({"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10})
    );
}

/// Replies are consumed first in, first out across all completion paths, then the 500 default.
#[actix_rt::test]
async fn replies_are_fifo_then_500() {
    let p = FakeProvider::start().unwrap();
    for text in ["first", "second", "third", "fourth"] {
        p.push(Reply::content(text));
    }
    assert_eq!(p.pending_replies(), 4);
    let paths = [
        "/v1/chat/completions",
        "/chat/completions",
        "/v1/responses",
        "/responses",
    ];
    for (path, want) in paths.iter().zip(["first", "second", "third", "fourth"]) {
        let got: Value = post(&p, path, &json!({})).await.json().await.unwrap();
        let text = got
            .pointer("/choices/0/message/content")
            .or_else(|| got.pointer("/output/0/content/0/text"));
        assert_eq!(text, Some(&json!(want)), "{path}");
    }
    let resp = post(&p, "/v1/chat/completions", &json!({})).await;
    assert_eq!(resp.status(), 500);
    let got: Value = resp.json().await.unwrap();
    assert_eq!(
        got,
        json!({"error": {"message": "fake provider: no scripted reply left"}})
    );
    assert_eq!(p.pending_replies(), 0);
}

/// On the Responses API paths a content reply takes that shape: reasoning and message items, then usage; streamed as `response.*` events.
#[actix_rt::test]
async fn responses_paths_answer_in_the_responses_shape() {
    let p = FakeProvider::start().unwrap();
    p.push(Reply::content("hi there").reasoning("hmm").usage(5, 2));
    p.push(Reply::content("hi there").usage(5, 2));
    let got: Value = post(&p, "/v1/responses", &json!({"model": "grok-4"}))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(
        got,
        json!({
            "id": "chatcmpl-fake-1", "object": "response", "created_at": 0, "model": "grok-4", "status": "completed",
            "output": [
                {"type": "reasoning", "id": "rs_chatcmpl-fake-1", "summary": [{"type": "summary_text", "text": "hmm"}]},
                {"type": "message", "id": "msg_chatcmpl-fake-1", "role": "assistant", "status": "completed",
                 "content": [{"type": "output_text", "text": "hi there", "annotations": []}]}
            ],
            "usage": {"input_tokens": 5, "output_tokens": 2, "total_tokens": 7}
        })
    );
    let body = post(
        &p,
        "/v1/responses",
        &json!({"model": "grok-4", "stream": true}),
    )
    .await
    .text()
    .await
    .unwrap();
    let kinds: Vec<String> = body
        .split("\n\n")
        .filter_map(|event| event.lines().find_map(|l| l.strip_prefix("data: ")))
        .map(|d| {
            serde_json::from_str::<Value>(d).unwrap()["type"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(
        kinds,
        vec![
            "response.created",
            "response.output_text.delta",
            "response.output_text.delta",
            "response.completed"
        ]
    );
}

/// A configured fallback answers every request once the queue is empty.
#[actix_rt::test]
async fn fallback_is_reused() {
    let p = FakeProvider::start().unwrap();
    p.set_fallback(Reply::content("again"));
    for _ in 0..2 {
        let got: Value = post(&p, "/v1/chat/completions", &json!({}))
            .await
            .json()
            .await
            .unwrap();
        assert_eq!(got["choices"][0]["message"]["content"], "again");
    }
}

/// A responder answers from the request body once the queue is empty; queued replies still come first.
#[actix_rt::test]
async fn responder_answers_from_the_request() {
    let p = FakeProvider::start().unwrap();
    p.set_fallback(Reply::content("never"));
    p.set_responder(|body| {
        Reply::content(format!("echo {}", body["model"].as_str().unwrap_or("?")))
    });
    p.push(Reply::content("queued"));
    let mut answers = Vec::new();
    for model in ["a", "b"] {
        let got: Value = post(&p, "/v1/chat/completions", &json!({ "model": model }))
            .await
            .json()
            .await
            .unwrap();
        answers.push(got["choices"][0]["message"]["content"].clone());
    }
    assert_eq!(answers, vec![json!("queued"), json!("echo b")]);
}

/// A streamed content reply is split into chunks, then a usage chunk, then `[DONE]`.
#[actix_rt::test]
async fn streamed_content_has_usage_chunk_and_done() {
    let p = FakeProvider::start().unwrap();
    p.push(Reply::content("one two three").usage(5, 6));
    let body = json!({"model": "m", "stream": true, "stream_options": {"include_usage": true}});
    let resp = post(&p, "/v1/chat/completions", &body).await;
    assert_eq!(resp.headers()["content-type"], "text/event-stream");
    let events = sse_data(&resp.text().await.unwrap());

    assert_eq!(events.last().unwrap(), "[DONE]");
    let chunks: Vec<Value> = events[..events.len() - 1]
        .iter()
        .map(|e| serde_json::from_str(e).unwrap())
        .collect();
    assert!(chunks
        .iter()
        .all(|c| c["object"] == "chat.completion.chunk"));
    let content: String = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["content"].as_str())
        .collect();
    assert_eq!(content, "one two three");
    let content_chunks = chunks
        .iter()
        .filter(|c| {
            c["choices"][0]["delta"]["content"]
                .as_str()
                .is_some_and(|s| !s.is_empty())
        })
        .count();
    assert_eq!(content_chunks, 3);
    let usage = chunks.last().unwrap();
    assert_eq!(usage["choices"], json!([]));
    assert_eq!(
        usage["usage"],
        json!({"prompt_tokens": 5, "completion_tokens": 6, "total_tokens": 11})
    );
    let finish = &chunks[chunks.len() - 2];
    assert_eq!(finish["choices"][0]["finish_reason"], "stop");
}

/// Without `stream_options.include_usage` the stream has no usage chunk.
#[actix_rt::test]
async fn streamed_content_without_usage() {
    let p = FakeProvider::start().unwrap();
    p.push(Reply::content("hi").reasoning("hmm"));
    let resp = post(&p, "/v1/chat/completions", &json!({"stream": true})).await;
    let events = sse_data(&resp.text().await.unwrap());
    assert_eq!(events.last().unwrap(), "[DONE]");
    assert!(!events.iter().any(|e| e.contains("\"usage\"")));
    assert!(events
        .iter()
        .any(|e| e.contains("\"reasoning_content\":\"hmm\"")));
}

/// `Reply::status` sends that status and body, with extra headers such as `Retry-After`.
#[actix_rt::test]
async fn status_reply_with_retry_after() {
    let p = FakeProvider::start().unwrap();
    let error = json!({"error": {"message": "slow down"}});
    p.push(Reply::status(429, error.clone()).header("Retry-After", "1"));
    p.push(Reply::status(503, "overloaded"));
    let resp = post(&p, "/v1/chat/completions", &json!({})).await;
    assert_eq!(resp.status(), 429);
    assert_eq!(resp.headers()["retry-after"], "1");
    assert_eq!(resp.json::<Value>().await.unwrap(), error);
    let resp = post(&p, "/v1/chat/completions", &json!({})).await;
    assert_eq!(resp.status(), 503);
    assert_eq!(resp.text().await.unwrap(), "overloaded");
}

/// Raw SSE pieces arrive verbatim, one body chunk each.
#[actix_rt::test]
async fn raw_sse_pieces_are_separate_chunks() {
    let p = FakeProvider::start().unwrap();
    let pieces = vec![
        "data: {\"a\":".to_owned(),
        "1}\n\n".to_owned(),
        "data: [DONE]\n\n".to_owned(),
    ];
    p.push(Reply::raw_sse(pieces.clone()));
    let resp = post(&p, "/v1/chat/completions", &json!({})).await;
    assert_eq!(resp.headers()["content-type"], "text/event-stream");
    let mut stream = resp.bytes_stream();
    let mut got = Vec::new();
    while let Some(chunk) = stream.next().await {
        got.push(String::from_utf8(chunk.unwrap().to_vec()).unwrap());
    }
    assert_eq!(got, pieces);
}

/// `.disconnect_after(n)` delivers n pieces and then breaks the connection.
#[actix_rt::test]
async fn raw_sse_disconnects_mid_stream() {
    let p = FakeProvider::start().unwrap();
    let pieces = ["data: 1\n\n", "data: 2\n\n", "data: 3\n\n"].map(str::to_owned);
    p.push(Reply::raw_sse(pieces.to_vec()).disconnect_after(2));
    let resp = post(&p, "/v1/chat/completions", &json!({})).await;
    let mut stream = resp.bytes_stream();
    let mut text = String::new();
    let mut failed = false;
    while let Some(chunk) = stream.next().await {
        match chunk {
            Ok(bytes) => text.push_str(std::str::from_utf8(&bytes).unwrap()),
            Err(_) => {
                failed = true;
                break;
            }
        }
    }
    assert!(failed, "stream ended cleanly: {text:?}");
    assert_eq!(text, "data: 1\n\ndata: 2\n\n");
}

/// Every request is recorded with method, path, lower-cased headers and parsed body.
#[actix_rt::test]
async fn requests_are_recorded() {
    let p = FakeProvider::start().unwrap();
    p.push(Reply::content("x"));
    http()
        .post(format!("{}/v1/chat/completions", p.base_url()))
        .header("Authorization", "Bearer k")
        .json(&json!({"model": "m", "n": 1}))
        .send()
        .await
        .unwrap();
    http()
        .post(format!("{}/elsewhere", p.base_url()))
        .body("not json")
        .send()
        .await
        .unwrap();

    let all = p.wait_for_requests(2, WAIT).await;
    assert_eq!(all.len(), 2);
    let chat = &all[0];
    assert_eq!(
        (chat.method.as_str(), chat.path.as_str()),
        ("POST", "/v1/chat/completions")
    );
    assert_eq!(chat.header("AUTHORIZATION"), Some("Bearer k"));
    assert!(chat
        .headers
        .iter()
        .any(|(n, v)| n == "authorization" && v == "Bearer k"));
    assert_eq!(chat.body, json!({"model": "m", "n": 1}));
    assert_eq!(chat.raw_body, r#"{"model":"m","n":1}"#);
    assert_eq!(all[1].path, "/elsewhere");
    assert_eq!(all[1].body, Value::Null);
    assert_eq!(all[1].raw_body, "not json");
    assert_eq!(p.chat_requests(), vec![chat.clone()]);
}

/// Waiting for more requests than arrive returns what exists once the timeout passes.
#[actix_rt::test]
async fn wait_for_requests_times_out_with_what_exists() {
    let p = FakeProvider::start().unwrap();
    assert!(p
        .wait_for_chat_requests(1, Duration::from_millis(50))
        .await
        .is_empty());
}

/// A reply held on a gate waits for the test to open it; other requests are answered meanwhile.
#[actix_rt::test]
async fn held_reply_waits_for_its_gate() {
    let p = FakeProvider::start().unwrap();
    let gate = Gate::new();
    p.push(Reply::content("first").held(&gate));
    p.push(Reply::content("second"));
    let body = json!({"model": "m", "messages": [{"role": "user", "content": "hi"}]});
    let held = actix_rt::spawn({
        let url = format!("{}/v1/chat/completions", p.base_url());
        let body = body.clone();
        async move {
            http()
                .post(url)
                .json(&body)
                .send()
                .await
                .unwrap()
                .json::<Value>()
                .await
                .unwrap()
        }
    });
    assert_eq!(p.wait_for_chat_requests(1, WAIT).await.len(), 1);
    let second: Value = post(&p, "/v1/chat/completions", &body)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(second["choices"][0]["message"]["content"], json!("second"));
    assert!(
        !held.is_finished(),
        "a held reply does not go out before its gate opens"
    );
    gate.open();
    let first = held.await.unwrap();
    assert_eq!(first["choices"][0]["message"]["content"], json!("first"));
}

/// Models, props and show answer their defaults and then the scripted values.
#[actix_rt::test]
async fn metadata_endpoints() {
    let p = FakeProvider::start().unwrap();
    let get = |path: &str| http().get(format!("{}{path}", p.base_url())).send();
    let models: Value = get("/v1/models").await.unwrap().json().await.unwrap();
    assert_eq!(models, json!({"object": "list", "data": []}));
    assert_eq!(get("/props").await.unwrap().status(), 404);
    assert_eq!(post(&p, "/api/show", &json!({})).await.status(), 404);

    p.set_models(json!({"object": "list", "data": [{"id": "m"}]}));
    p.set_props(json!({"n_ctx": 4096}));
    p.set_show(json!({"model_info": {}}));
    let models: Value = get("/v1/models").await.unwrap().json().await.unwrap();
    assert_eq!(models["data"][0]["id"], "m");
    let props: Value = get("/props").await.unwrap().json().await.unwrap();
    assert_eq!(props, json!({"n_ctx": 4096}));
    let show: Value = post(&p, "/api/show", &json!({}))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(show, json!({"model_info": {}}));
    assert!(p.chat_requests().is_empty());
}

/// `.delay` holds the answer back for at least that long.
#[actix_rt::test]
async fn delay_postpones_the_answer() {
    let p = FakeProvider::start().unwrap();
    p.push(Reply::content("late").delay(Duration::from_millis(150)));
    let started = Instant::now();
    let resp = post(&p, "/v1/chat/completions", &json!({})).await;
    assert_eq!(resp.status(), 200);
    assert!(started.elapsed() >= Duration::from_millis(150));
}

/// Two concurrent delayed requests are counted as two in flight at the peak.
#[actix_rt::test]
async fn max_in_flight_counts_concurrent_requests() {
    let p = FakeProvider::start().unwrap();
    for _ in 0..2 {
        p.push(Reply::content("slow").delay(Duration::from_millis(500)));
    }
    let body = json!({});
    let (a, b) = tokio::join!(
        post(&p, "/v1/chat/completions", &body),
        post(&p, "/v1/chat/completions", &body)
    );
    assert_eq!((a.status().as_u16(), b.status().as_u16()), (200, 200));
    assert_eq!(p.max_in_flight(), 2);
    assert_eq!(p.in_flight(), 0);
}

/// A hanging reply holds the request open until the provider stops, then the client fails.
#[actix_rt::test]
async fn hang_holds_until_stop() {
    let mut p = FakeProvider::start().unwrap();
    p.push(Reply::hang());
    let url = format!("{}/v1/chat/completions", p.base_url());
    let request = actix_rt::spawn(async move { http().post(url).json(&json!({})).send().await });
    assert_eq!(p.wait_for_chat_requests(1, WAIT).await.len(), 1);
    assert_eq!(p.in_flight(), 1);
    p.stop();
    assert!(request.await.unwrap().is_err());
}

/// `GET /search` plays SearXNG: 404 until scripted, then the scripted results in its JSON shape
/// (or the scripted failure); every search is recorded with its decoded query.
#[actix_rt::test]
async fn search_answers_like_searxng() {
    let p = FakeProvider::start().unwrap();
    let search = |q: &'static str| {
        http()
            .get(format!("{}/search", p.base_url()))
            .query(&[("q", q), ("format", "json")])
            .send()
    };
    assert_eq!(search("unscripted").await.unwrap().status(), 404);

    let results = json!([{"url": "https://actix.rs/", "title": "Actix", "content": "Actors."}]);
    p.set_search_results(results.clone());
    let answer: Value = search("rust & actix").await.unwrap().json().await.unwrap();
    assert_eq!(answer["query"], "rust & actix");
    assert_eq!(answer["number_of_results"], 1);
    assert_eq!(answer["results"], results);

    p.set_search_failure(500, "engine exploded");
    let failed = search("again").await.unwrap();
    assert_eq!(failed.status(), 500);
    assert_eq!(failed.text().await.unwrap(), "engine exploded");

    let recorded = p.search_requests();
    assert_eq!(recorded.len(), 3);
    assert_eq!(recorded[1].query_param("q"), Some("rust & actix"));
    assert_eq!(
        recorded[1].query,
        vec![
            ("q".to_owned(), "rust & actix".to_owned()),
            ("format".to_owned(), "json".to_owned())
        ]
    );
    assert!(p.chat_requests().is_empty());
}
