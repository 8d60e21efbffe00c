//! Summarisation on eviction end to end, with the fake provider scripted as the sidecar model (`side` → `openai/side-model`): the first summary, its extension and compression, the summary inside the system message, its earlier texts kept, the fallback to plain demotion when the side task fails or is too slow, its usage and cost on the turn and in the run's, and no side task at all unless the run asks.

use crate::support::long_run::{answer, prompt, SIDE_MODEL};
use crate::support::{wait_status, TestServer};
use pretty_assertions::assert_eq;
use rummy::config::Config;
use rummy_store::models::ModelSeed;
use rummy_testkit::{RecordedRequest, Reply, RpcClient};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// A server whose side tasks go to model `side` (the fake provider's `side-model`), with the
/// summary's cap at `max_chars`, after `adjust`.
async fn server(max_chars: usize, adjust: impl FnOnce(&mut Config)) -> TestServer {
    TestServer::start_with(|c| {
        c.models.push(ModelSeed {
            alias: "side".into(),
            actual: format!("openai/{SIDE_MODEL}"),
            context_length: Some(32_768),
            fallback: None,
        });
        c.sidecar.model = Some("side".into());
        c.summary.max_chars = max_chars;
        adjust(c);
    })
    .await
}

/// Scripts the fake provider: a turn answers the next concluding [`answer`]; a side task
/// answers `side(k, request body)`, `k` counting side tasks from 1.
fn script(server: &TestServer, side: impl Fn(usize, &Value) -> Reply + Send + Sync + 'static) {
    let (turns, sides) = (AtomicUsize::new(0), AtomicUsize::new(0));
    server.provider.set_responder(move |body| {
        if body["model"] == json!(SIDE_MODEL) {
            side(sides.fetch_add(1, Ordering::SeqCst) + 1, body)
        } else {
            Reply::content(answer(turns.fetch_add(1, Ordering::SeqCst)))
        }
    });
}

/// The side tasks' requests so far, in order.
fn side_requests(server: &TestServer) -> Vec<RecordedRequest> {
    server
        .provider
        .chat_requests()
        .into_iter()
        .filter(|r| r.body["model"] == json!(SIDE_MODEL))
        .collect()
}

/// A request's message `i` (0: system, 1: user).
fn message(request: &RecordedRequest, i: usize) -> String {
    request.body["messages"][i]["content"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// Starts run `alias` under an 8,192-token limit (`summarize` as given, absent when `None`).
async fn start(client: &mut RpcClient, alias: &str, summarize: Option<bool>) {
    let mut attributes = json!({ "model": "fast", "contextLimit": 8192 });
    if let Some(on) = summarize {
        attributes["summarize"] = json!(on);
    }
    let answer = client
        .call(
            "set",
            json!({ "path": format!("run://{alias}"), "body": prompt(0), "attributes": attributes }),
        )
        .await
        .unwrap();
    assert_eq!(answer["ok"], json!(true), "{answer}");
    wait_status(client, alias, 200).await;
}

/// Continues the run with prompts 1, 2, … until `done` holds (checked after each loop, which
/// must end 200), at most 30 loops; answers how many loops ran in all.
async fn continue_until(
    server: &TestServer,
    client: &mut RpcClient,
    alias: &str,
    done: impl Fn(&TestServer) -> bool,
) -> usize {
    for n in 1..=30 {
        let answer = client
            .call(
                "set",
                json!({ "path": format!("run://{alias}"), "body": prompt(n) }),
            )
            .await
            .unwrap();
        assert_eq!(answer["ok"], json!(true), "{answer}");
        let state = wait_status(client, alias, 200).await;
        assert_eq!(state["status"], json!(200), "loop {n}");
        if done(server) {
            return n + 1;
        }
    }
    panic!("the condition never held in 30 loops");
}

/// The run's `summary://` entries with bodies: path → (body, visibility, version).
async fn summaries(client: &mut RpcClient, run: &str) -> Vec<(String, String, String, Value)> {
    let list = client
        .call(
            "getEntries",
            json!({ "run": run, "scheme": "summary", "withBody": true }),
        )
        .await
        .unwrap();
    let mut out: Vec<(String, String, String, Value)> = list
        .as_array()
        .expect("a list")
        .iter()
        .map(|e| {
            (
                e["path"].as_str().unwrap_or_default().to_owned(),
                e["body"].as_str().unwrap_or_default().to_owned(),
                e["visibility"].as_str().unwrap_or_default().to_owned(),
                e["attributes"]["version"].clone(),
            )
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// The turn-end `telemetry.sidecar` records the run pushed, oldest first.
async fn sidecar_telemetry(client: &mut RpcClient, run: &str) -> Vec<Value> {
    let snapshot = client
        .call("getRun", json!({ "run": run, "sinceSeq": 0 }))
        .await
        .unwrap();
    snapshot["missed"]
        .as_array()
        .expect("missed")
        .iter()
        .filter_map(|n| n["params"]["telemetry"]["sidecar"].as_array())
        .flatten()
        .cloned()
        .collect()
}

/// The first turn request after side request `k` (1-based) among all chat requests.
fn turn_after_side(server: &TestServer, k: usize) -> RecordedRequest {
    let requests = server.provider.chat_requests();
    let mut sides = 0;
    let mut after = false;
    for r in requests {
        if r.body["model"] == json!(SIDE_MODEL) {
            sides += 1;
            after = sides == k;
        } else if after {
            return r;
        }
    }
    panic!("no turn after side request {k}");
}

/// The first time earlier loops' entries are archived, the sidecar is asked for a first
/// summary of them (its own prompt, the evicted entries oldest first, capped reply, low
/// temperature); the next model call reads it as the first element of `<previous>` inside its
/// one system message, and it is stored as `summary://run`, version 1.
#[actix_rt::test]
async fn the_first_eviction_makes_a_first_summary_shown_inside_the_system_message() {
    let server = server(2_000, |_| {}).await;
    script(&server, |k, _| Reply::content(format!("SUMMARY {k}")));
    let mut client = server.project_client("first").await;
    start(&mut client, "first", Some(true)).await;
    continue_until(&server, &mut client, "first", |s| {
        !side_requests(s).is_empty()
    })
    .await;

    let side = &side_requests(&server)[0];
    assert!(message(side, 0).starts_with("You summarise the earlier history of an agent's run."));
    assert!(message(side, 0).contains("at most 2000 characters"));
    let input = message(side, 1);
    assert!(
        input.starts_with(
            "The entries leaving the context, oldest first:\n\n[turn 1] prompt prompt://1\nQuestion 0: "
        ),
        "{input}"
    );
    assert!(input.contains("Answer 0: "), "{input}");
    assert_eq!(side.body["max_completion_tokens"], json!(1024));
    assert_eq!(side.body["temperature"], json!(0.2));

    let next = turn_after_side(&server, 1);
    assert_eq!(next.body["messages"].as_array().map(Vec::len), Some(2));
    assert_eq!(next.body["messages"][0]["role"], json!("system"));
    let system = message(&next, 0);
    let at = system.find("<previous>\n<summary path=\"summary://run\" turn=\"");
    assert!(at.is_some(), "{system}");
    assert!(system.contains("\">SUMMARY 1</summary>\n"), "{system}");
    assert!(!message(&next, 1).contains("SUMMARY"));

    assert_eq!(
        summaries(&mut client, "first").await,
        vec![(
            "summary://run".into(),
            "SUMMARY 1".into(),
            "visible".into(),
            json!(1)
        )]
    );
    server.stop().await;
}

/// A later eviction extends the summary (the sidecar gets the summary so far and the new
/// entries); the text it replaces stays readable, archived, as `summary://run/1`.
#[actix_rt::test]
async fn a_later_eviction_extends_the_summary_and_keeps_the_earlier_text() {
    let server = server(2_000, |_| {}).await;
    script(&server, |k, _| Reply::content(format!("SUMMARY {k}")));
    let mut client = server.project_client("extend").await;
    start(&mut client, "extend", Some(true)).await;
    continue_until(&server, &mut client, "extend", |s| {
        side_requests(s).len() >= 2
    })
    .await;

    let second = &side_requests(&server)[1];
    assert!(message(second, 0).starts_with("You keep the summary of an agent's run up to date."));
    let input = message(second, 1);
    assert!(
        input.starts_with(
            "The summary so far:\n\nSUMMARY 1\n\nThe entries leaving the context, oldest first:\n\n[turn "
        ),
        "{input}"
    );
    assert!(message(&turn_after_side(&server, 2), 0).contains(">SUMMARY 2</summary>"));
    assert_eq!(
        summaries(&mut client, "extend").await,
        vec![
            (
                "summary://run".into(),
                "SUMMARY 2".into(),
                "visible".into(),
                json!(2)
            ),
            (
                "summary://run/1".into(),
                "SUMMARY 1".into(),
                "archived".into(),
                json!(1)
            ),
        ]
    );
    let telemetry = sidecar_telemetry(&mut client, "extend").await;
    let tasks: Vec<(&str, &str, &str)> = telemetry
        .iter()
        .map(|r| {
            (
                r["task"].as_str().unwrap_or_default(),
                r["model"].as_str().unwrap_or_default(),
                r["outcome"].as_str().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(
        tasks,
        vec![("summary", "side", "ok"), ("summary.extend", "side", "ok")]
    );
    server.stop().await;
}

/// A summary that passes `RUMMY_SUMMARY_MAX_CHARS` is compressed at once by a second side task
/// (given that summary alone), and the compressed text is what the run keeps.
#[actix_rt::test]
async fn a_summary_past_the_cap_is_compressed() {
    let long = "The run looked at every part of the system in turn. ".repeat(8);
    assert!(long.len() > 300);
    let server = server(300, |_| {}).await;
    let grown = long.clone();
    script(&server, move |k, _| match k {
        1 => Reply::content("SUMMARY 1"),
        2 => Reply::content(grown.clone()),
        _ => Reply::content(format!("COMPRESSED {k}")),
    });
    let mut client = server.project_client("compress").await;
    start(&mut client, "compress", Some(true)).await;
    continue_until(&server, &mut client, "compress", |s| {
        side_requests(s).len() >= 3
    })
    .await;

    let compress = &side_requests(&server)[2];
    assert!(message(compress, 0).starts_with("You compress the summary of an agent's run"));
    assert!(message(compress, 0).contains("at most 300 characters"));
    assert_eq!(
        message(compress, 1),
        format!("The summary to compress:\n\n{}", long.trim())
    );
    let kept = summaries(&mut client, "compress").await;
    assert_eq!(
        kept[0],
        (
            "summary://run".into(),
            "COMPRESSED 3".into(),
            "visible".into(),
            json!(2)
        )
    );
    let tasks: Vec<Value> = sidecar_telemetry(&mut client, "compress")
        .await
        .iter()
        .map(|r| r["task"].clone())
        .collect();
    assert_eq!(
        tasks,
        vec![
            json!("summary"),
            json!("summary.extend"),
            json!("summary.compress")
        ]
    );
    server.stop().await;
}

/// A sidecar that fails (here a 400 from its provider) costs the run nothing but the summary:
/// the entries are demoted plainly, every loop still ends 200, no summary is written, and the
/// failure is recorded once per side task in the turn's telemetry.
#[actix_rt::test]
async fn a_failing_sidecar_falls_back_to_plain_demotion() {
    let server = server(2_000, |_| {}).await;
    script(&server, |_, _| Reply::status(400, "no summaries today"));
    let mut client = server.project_client("fails").await;
    start(&mut client, "fails", Some(true)).await;
    continue_until(&server, &mut client, "fails", |s| {
        side_requests(s).len() >= 2
    })
    .await;

    assert_eq!(summaries(&mut client, "fails").await, Vec::new());
    let telemetry = sidecar_telemetry(&mut client, "fails").await;
    assert_eq!(telemetry.len(), 2);
    assert!(telemetry.iter().all(|r| r["outcome"] == json!("failed")
        && r["error"]
            .as_str()
            .is_some_and(|e| e.contains("no summaries today"))));
    let notes = client
        .call("getEntries", json!({ "run": "fails", "scheme": "budget" }))
        .await
        .unwrap();
    assert!(notes
        .as_array()
        .unwrap()
        .iter()
        .any(|n| n["path"].as_str().is_some_and(|p| p.ends_with("/history"))));
    let prompts = client
        .call("getEntries", json!({ "run": "fails", "scheme": "prompt" }))
        .await
        .unwrap();
    let first = prompts
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["path"] == json!("prompt://1"))
        .cloned();
    assert_eq!(
        first.map(|p| p["visibility"].clone()),
        Some(json!("archived"))
    );
    server.stop().await;
}

/// A sidecar slower than `RUMMY_SIDECAR_TIMEOUT` is abandoned at the limit: the loop that
/// waited for it ends well before the side task would have answered, without a summary, and
/// the timeout is in its telemetry.
#[actix_rt::test]
async fn a_slow_sidecar_is_abandoned_at_its_time_limit() {
    let server = server(2_000, |c| c.sidecar.timeout_ms = 300).await;
    script(&server, |_, _| {
        Reply::content("too late").delay(Duration::from_secs(20))
    });
    let mut client = server.project_client("slow").await;
    start(&mut client, "slow", Some(true)).await;
    let started = Instant::now();
    continue_until(&server, &mut client, "slow", |s| {
        !side_requests(s).is_empty()
    })
    .await;
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "{:?}",
        started.elapsed()
    );
    let telemetry = sidecar_telemetry(&mut client, "slow").await;
    assert_eq!(telemetry.len(), 1);
    assert_eq!(telemetry[0]["outcome"], json!("timeout"));
    assert_eq!(
        telemetry[0]["error"],
        json!("sidecar call timed out after 300 ms")
    );
    assert!(telemetry[0]["elapsedMs"]
        .as_u64()
        .is_some_and(|ms| (300..5_000).contains(&ms)));
    assert_eq!(summaries(&mut client, "slow").await, Vec::new());
    server.stop().await;
}

/// A side task's usage and cost are the turn's `sidecar` telemetry and count in the run's
/// totals (`getRun`, `getRuns`) and the project's spending beside the turns' own.
#[actix_rt::test]
async fn side_task_usage_and_cost_count_on_the_turn_and_in_the_run() {
    let server = server(2_000, |_| {}).await;
    let turns = AtomicUsize::new(0);
    server.provider.set_responder(move |body| {
        if body["model"] == json!(SIDE_MODEL) {
            Reply::content("SUMMARY").usage(400, 25).cost(0.5)
        } else {
            Reply::content(answer(turns.fetch_add(1, Ordering::SeqCst))).cost(0.25)
        }
    });
    let mut client = server.project_client("cost").await;
    start(&mut client, "cost", Some(true)).await;
    continue_until(&server, &mut client, "cost", |s| {
        !side_requests(s).is_empty()
    })
    .await;

    let telemetry = sidecar_telemetry(&mut client, "cost").await;
    assert_eq!(telemetry.len(), 1);
    assert_eq!(
        telemetry[0]["usage"],
        json!({ "promptTokens": 400, "cachedTokens": 0, "completionTokens": 25,
                "reasoningTokens": 0, "totalTokens": 425, "cost": 0.5 })
    );
    let turns = server.provider.chat_requests().len() - 1;
    let pushed = client
        .call("getRun", json!({ "run": "cost", "sinceSeq": 0 }))
        .await
        .unwrap();
    let turn_tokens: i64 = pushed["missed"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|n| n["params"]["telemetry"]["usage"]["totalTokens"].as_i64())
        .sum();
    let run = client
        .call("getRun", json!({ "run": "cost" }))
        .await
        .unwrap();
    let expected_cost = turns as f64 * 0.25 + 0.5;
    assert_eq!(run["telemetry"]["cost"], json!(expected_cost));
    assert_eq!(run["telemetry"]["totalTokens"], json!(turn_tokens + 425));
    let runs = client.call("getRuns", json!({})).await.unwrap();
    assert_eq!(runs[0]["cost"], json!(expected_cost));
    // The project's spending, which its cost ceiling is held against, counts them too.
    let project = client
        .call("project/set", json!({ "name": "cost", "costCeiling": 100 }))
        .await
        .unwrap();
    assert_eq!(project["spent"], json!(expected_cost));
    server.stop().await;
}

/// Without `summarize` (and with `RUMMY_SUMMARIZE` off, the default) a run that evicts makes
/// no side task: plain demotion, no summary, no sidecar telemetry.
#[actix_rt::test]
async fn summarisation_is_off_by_default() {
    let server = server(2_000, |_| {}).await;
    script(&server, |_, _| Reply::content("never asked"));
    let mut client = server.project_client("off").await;
    start(&mut client, "off", None).await;
    for n in 1..=20 {
        let answer = client
            .call("set", json!({ "path": "run://off", "body": prompt(n) }))
            .await
            .unwrap();
        assert_eq!(answer["ok"], json!(true));
        wait_status(&mut client, "off", 200).await;
    }
    let prompts = client
        .call("getEntries", json!({ "run": "off", "scheme": "prompt" }))
        .await
        .unwrap();
    assert!(prompts
        .as_array()
        .unwrap()
        .iter()
        .any(|p| p["visibility"] == json!("archived")));
    assert_eq!(side_requests(&server).len(), 0);
    assert_eq!(summaries(&mut client, "off").await, Vec::new());
    assert_eq!(
        sidecar_telemetry(&mut client, "off").await,
        Vec::<Value>::new()
    );
    server.stop().await;
}

/// Turn Demotion folds first too: a turn whose reads overflow the budget has what it promoted
/// summarised into `summary://run` before it leaves the model's view, and the next turn reads
/// the summary.
#[actix_rt::test]
async fn turn_demotion_folds_the_turns_entries_into_the_summary() {
    let server = server(2_000, |_| {}).await;
    let mut client = server.project_client("turn").await;
    let root = server.project_root("turn");
    std::fs::write(
        std::path::Path::new(&root).join("big.txt"),
        "the big file says hello. ".repeat(600),
    )
    .unwrap();
    let turns = AtomicUsize::new(0);
    server.provider.set_responder(move |body| {
        if body["model"] == json!(SIDE_MODEL) {
            return Reply::content("The run read big.txt: it says hello.");
        }
        match turns.fetch_add(1, Ordering::SeqCst) {
            0 => Reply::content("<get path=\"big.txt\"/><update status=\"102\">reading</update>"),
            _ => Reply::content("<update status=\"200\">It says hello.</update>"),
        }
    });
    client
        .call(
            "set",
            json!({ "path": "run://turn", "body": "What does big.txt say?",
                    "attributes": { "model": "fast", "contextLimit": 6000, "summarize": true } }),
        )
        .await
        .unwrap();
    wait_status(&mut client, "turn", 200).await;

    let sides = side_requests(&server);
    assert_eq!(sides.len(), 1);
    let input = message(&sides[0], 1);
    assert!(
        input.contains("big.txt\nthe big file says hello."),
        "{}",
        &input[..input.len().min(400)]
    );
    let overflow = client
        .call(
            "getEntries",
            json!({ "run": "turn", "scheme": "budget", "withBody": true }),
        )
        .await
        .unwrap();
    assert!(overflow.as_array().unwrap().iter().any(|n| n["body"]
        .as_str()
        .is_some_and(|b| b.starts_with("Token budget overflow"))));
    let last = server
        .provider
        .chat_requests()
        .into_iter()
        .rfind(|r| r.body["model"] != json!(SIDE_MODEL))
        .unwrap();
    assert!(
        message(&last, 0).contains(">The run read big.txt: it says hello.</summary>"),
        "{}",
        message(&last, 0)
    );
    assert_eq!(
        summaries(&mut client, "turn").await,
        vec![(
            "summary://run".into(),
            "The run read big.txt: it says hello.".into(),
            "visible".into(),
            json!(1)
        )]
    );
    server.stop().await;
}

/// While a turn waits on the sidecar its clients are told so: the turn that folds evicted
/// entries into the summary shows `run/progress` `sidecar` (detail `summary`) before it
/// calls the model.
#[actix_rt::test]
async fn a_turn_waiting_on_a_side_task_says_so_in_run_progress() {
    let server = server(2_000, |_| {}).await;
    script(&server, |k, _| Reply::content(format!("SUMMARY {k}")));
    let mut client = server.project_client("told").await;
    start(&mut client, "told", Some(true)).await;
    continue_until(&server, &mut client, "told", |s| {
        !side_requests(s).is_empty()
    })
    .await;

    let progress: Vec<(i64, String, Option<String>)> = client
        .drain_notifications()
        .into_iter()
        .filter(|n| n["method"] == json!("run/progress"))
        .map(|n| {
            let p = &n["params"];
            (
                p["turn"].as_i64().unwrap_or_default(),
                p["status"].as_str().unwrap_or_default().to_owned(),
                p["detail"].as_str().map(str::to_owned),
            )
        })
        .collect();
    let Some(&(turn, _, _)) = progress.iter().find(|(_, status, _)| status == "sidecar") else {
        panic!("no sidecar progress in {progress:?}");
    };
    let of_turn: Vec<(String, Option<String>)> = progress
        .into_iter()
        .filter(|(t, _, _)| *t == turn)
        .map(|(_, status, detail)| (status, detail))
        .collect();
    assert_eq!(
        of_turn,
        vec![
            ("sidecar".to_owned(), Some("summary".to_owned())),
            ("thinking".to_owned(), None),
            ("processing".to_owned(), None),
        ]
    );
    server.stop().await;
}
