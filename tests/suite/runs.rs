//! Runs end to end: a prompt goes through turns against the fake provider until the model concludes.

use crate::support::{prompt_element, start_run, states_until, wait_status, TestServer, WAIT};
use pretty_assertions::assert_eq;
use rummy_testkit::Reply;
use serde_json::{json, Value};

/// A run records the model's facts, pushes numbered run/state notifications ending in 200, and shows in getEntries and getRun.
#[actix_rt::test]
async fn run_completes_end_to_end() {
    let server = TestServer::start().await;
    server.provider.push(Reply::content(
        "<set path=\"known://answer\" summary=\"answer,meaning\">42</set>\n<update status=\"102\">checking the answer</update>",
    ));
    server.provider.push(Reply::content(
        "<update status=\"200\">The answer is 42.</update>",
    ));
    let mut client = server.project_client("demo").await;

    let alias = start_run(&mut client, "run://deep", "What is the answer?").await;
    assert_eq!(alias, "deep");
    let states = states_until(&mut client, 200).await;
    let seqs: Vec<i64> = states
        .iter()
        .map(|s| s["seq"].as_i64().unwrap_or(0))
        .collect();
    assert_eq!(
        seqs,
        (1..=seqs.len() as i64).collect::<Vec<_>>(),
        "seq counts up from 1"
    );
    assert!(states[..states.len() - 1]
        .iter()
        .all(|s| s["status"] == json!(102)));
    let last = states.last().unwrap();
    assert_eq!(last["summary"], json!("The answer is 42."));
    let first_history: Vec<&str> = states[0]["history"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["path"].as_str().unwrap())
        .collect();
    assert!(
        first_history.contains(&"known://answer"),
        "{first_history:?}"
    );

    let entries = client
        .call(
            "getEntries",
            json!({ "run": "deep", "scheme": "known", "withBody": true }),
        )
        .await
        .unwrap();
    let entries = entries.as_array().unwrap();
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0]["path"], json!("known://answer"));
    assert_eq!(entries[0]["body"], json!("42"));
    assert_eq!(
        entries[0]["attributes"],
        json!({ "summary": "answer,meaning" })
    );
    let without = client
        .call("getEntries", json!({ "run": "deep", "scheme": "known" }))
        .await
        .unwrap();
    assert_eq!(without[0].get("body"), None, "bodies only with withBody");

    let run = client
        .call("getRun", json!({ "run": "deep" }))
        .await
        .unwrap();
    assert_eq!(run["status"], json!(200));
    assert_eq!(run["turn"], json!(2));
    assert_eq!(run["summary"], json!("The answer is 42."));
    let runs = client.call("getRuns", json!({})).await.unwrap();
    assert_eq!(runs.as_array().map(Vec::len), Some(1));
    assert_eq!(runs[0]["run"], json!("deep"));
    assert_eq!(runs[0]["status"], json!(200));
    server.stop().await;
}

/// The model gets two messages built from the store: the request has model, messages, temperature and streaming only, and turn 2 sees turn 1's fact.
#[actix_rt::test]
async fn requests_carry_the_assembled_context() {
    let server = TestServer::start().await;
    server.provider.push(Reply::content(
        "<set path=\"known://port\">8080</set><update status=\"102\">found it</update>",
    ));
    server
        .provider
        .push(Reply::content("<update status=\"200\">8080</update>"));
    let mut client = server.project_client("demo").await;
    let alias = start_run(&mut client, "run://port", "Which port?").await;
    wait_status(&mut client, &alias, 200).await;

    let requests = server.provider.chat_requests();
    assert_eq!(requests.len(), 2);
    for r in &requests {
        assert_eq!(r.path, "/v1/chat/completions");
        let mut keys: Vec<&str> = r
            .body
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        keys.sort_unstable();
        assert_eq!(
            keys,
            vec![
                "messages",
                "model",
                "stream",
                "stream_options",
                "temperature"
            ]
        );
        assert_eq!(r.body["model"], json!("fake-model"));
        assert_eq!(r.body["temperature"], json!(0.5));
        assert_eq!(r.header("authorization"), Some("Bearer sk-test-secret"));
        let roles: Vec<&Value> = r.body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| &m["role"])
            .collect();
        assert_eq!(roles, vec![&json!("system"), &json!("user")]);
    }
    let system1 = requests[0].body["messages"][0]["content"].as_str().unwrap();
    let user1 = requests[0].body["messages"][1]["content"].as_str().unwrap();
    assert!(
        system1.contains("Tools available: get, env, think, set, cp, mv, rm, update, ask_user\n"),
        "{system1}"
    );
    assert!(!system1.contains("<knowns>"));
    assert_eq!(
        prompt_element(user1),
        "<prompt mode=\"ask\" warn=\"File editing disallowed.\">Which port?</prompt>"
    );
    assert!(user1.starts_with("<prompt"), "{user1}");
    let system2 = requests[1].body["messages"][0]["content"].as_str().unwrap();
    let user2 = requests[1].body["messages"][1]["content"].as_str().unwrap();
    assert!(system2.contains("<knowns>\n<known path=\"known://port\" turn=\"1\" status=\"200\" summary=\"\" visibility=\"visible\" tokens=\"2\">8080</known>\n</knowns>"), "{system2}");
    assert!(user2.starts_with("<performed>\n"), "{user2}");
    assert_eq!(
        prompt_element(user2),
        "<prompt mode=\"ask\" warn=\"File editing disallowed.\">Which port?</prompt>"
    );
    server.stop().await;
}

/// Server-named runs get distinct aliases, even when started at once.
#[actix_rt::test]
async fn server_named_runs_never_collide() {
    let server = TestServer::start().await;
    server
        .provider
        .set_fallback(Reply::content("<update status=\"200\">ok</update>"));
    let mut client = server.project_client("demo").await;
    let mut ids = Vec::new();
    for _ in 0..20 {
        let id = client
            .send_request(
                "set",
                json!({ "path": "run://", "body": "hi", "attributes": { "model": "fast" } }),
            )
            .await
            .unwrap();
        ids.push(id);
    }
    let mut aliases = Vec::new();
    for id in ids {
        let result = client.response_for(id).await.unwrap();
        aliases.push(result["alias"].as_str().unwrap().to_owned());
    }
    let mut unique = aliases.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), 20, "{aliases:?}");
    assert!(
        aliases.iter().all(|a| a.starts_with("fast_")),
        "{aliases:?}"
    );
    server.stop().await;
}

/// A prose-only reply is taken as the answer and concludes the loop, with a warning entry.
#[actix_rt::test]
async fn prose_reply_is_the_answer() {
    let server = TestServer::start().await;
    server
        .provider
        .push(Reply::content("The answer is simply 42."));
    let mut client = server.project_client("demo").await;
    let alias = start_run(&mut client, "run://prose", "What is the answer?").await;
    let last = wait_status(&mut client, &alias, 200).await;
    assert_eq!(last["summary"], json!("The answer is simply 42."));
    let errors = client
        .call(
            "getEntries",
            json!({ "run": alias, "scheme": "error", "withBody": true }),
        )
        .await
        .unwrap();
    assert_eq!(
        errors[0]["body"],
        json!("Plain text response with no tool commands. Treated as final answer.")
    );
    server.stop().await;
}

/// A provider error fails the loop (500) with an error entry, and the run accepts the next prompt.
#[actix_rt::test]
async fn provider_failure_fails_the_loop_not_the_run() {
    let server = TestServer::start().await;
    // A 400 is not retried (a 503 would be, and would then succeed).
    server.provider.push(Reply::status(
        400,
        json!({ "error": { "message": "invalid request" } }),
    ));
    server
        .provider
        .push(Reply::content("<update status=\"200\">back</update>"));
    let mut client = server.project_client("demo").await;
    let alias = start_run(&mut client, "run://flaky", "Hello?").await;
    wait_status(&mut client, &alias, 500).await;
    let errors = client
        .call(
            "getEntries",
            json!({ "run": alias, "scheme": "error", "withBody": true }),
        )
        .await
        .unwrap();
    let body = errors[0]["body"].as_str().unwrap();
    assert!(body.starts_with("openai API error: 400"), "{body}");
    client
        .call(
            "set",
            json!({ "path": format!("run://{alias}"), "body": "Again?" }),
        )
        .await
        .unwrap();
    let last = wait_status(&mut client, &alias, 200).await;
    assert_eq!(last["summary"], json!("back"));
    server.stop().await;
}

/// Cancelling stops the active loop with 499; the run is still usable afterwards.
#[actix_rt::test]
async fn cancel_stops_the_active_loop() {
    let server = TestServer::start().await;
    server.provider.push(Reply::hang());
    let mut client = server.project_client("demo").await;
    let alias = start_run(&mut client, "run://slow", "Take your time").await;
    client
        .wait_for_notification("run/progress", WAIT, |p| p["status"] == json!("thinking"))
        .await
        .unwrap();
    let result = client
        .call("set", json!({ "path": "run://slow", "state": "cancelled" }))
        .await
        .unwrap();
    assert_eq!(result["ok"], json!(true));
    wait_status(&mut client, &alias, 499).await;
    let run = client
        .call("getRun", json!({ "run": alias }))
        .await
        .unwrap();
    assert_eq!(run["status"], json!(499));
    let idle = client
        .call("set", json!({ "path": "run://slow", "state": "cancelled" }))
        .await
        .unwrap();
    assert_eq!(idle["ok"], json!(true), "cancelling an idle run answers ok");
    server.stop().await;
}

/// getRun with sinceSeq replays the notifications a client missed.
#[actix_rt::test]
async fn get_run_replays_missed_notifications() {
    let server = TestServer::start().await;
    server
        .provider
        .push(Reply::content("<update status=\"200\">done</update>"));
    let mut client = server.project_client("demo").await;
    let alias = start_run(&mut client, "run://replay", "Go").await;
    wait_status(&mut client, &alias, 200).await;
    let run = client
        .call("getRun", json!({ "run": alias, "sinceSeq": 1 }))
        .await
        .unwrap();
    let missed = run["missed"].as_array().unwrap();
    assert!(!missed.is_empty());
    assert!(missed
        .iter()
        .all(|n| n["method"] == json!("run/state") && n["params"]["seq"].as_i64().unwrap() > 1));
    assert_eq!(run["lastSeq"], missed.last().unwrap()["params"]["seq"]);
    server.stop().await;
}

/// A loop that keeps continuing stops at RUMMY_MAX_TURNS with 200: the model is asked exactly
/// that many times, and no turn is allocated beyond the limit — each turn that continues
/// allocates the next in its last write, the last allowed one does not.
#[actix_rt::test]
async fn a_loop_stops_at_the_turn_limit_without_a_turn_beyond_it() {
    let server = TestServer::start_with(|c| c.limits.max_turns = 3).await;
    for n in 1..=5 {
        server.provider.push(Reply::content(format!(
            "<set path=\"known://step_{n}\">step {n}</set>\n<update status=\"102\">step {n} done</update>"
        )));
    }
    let mut client = server.project_client("demo").await;
    let alias = start_run(&mut client, "run://limited", "Keep going").await;
    wait_status(&mut client, &alias, 200).await;
    assert_eq!(server.provider.chat_requests().len(), 3);

    let db = rummy_store::database::open_read_pool(&server.database(), 1).unwrap();
    let turns: Vec<(i32, i32)> = {
        use diesel::prelude::*;
        use rummy_store::schema::turns::dsl as t;
        let mut conn = db.get().unwrap();
        t::turns
            .order(t::sequence.asc())
            .select((t::sequence, t::status))
            .load(&mut *conn)
            .unwrap()
    };
    server.stop().await;
    assert_eq!(turns, vec![(1, 200), (2, 200), (3, 200)]);
}

/// A prompt sent the moment the previous loop's 200 arrives is never lost: the run may still
/// be looking for a next loop (and find none) when the new one is stored, and must look again.
/// Four runs at once keep the writer busy, which widens that window.
#[actix_rt::test]
async fn a_prompt_sent_as_the_previous_loop_ends_always_runs() {
    let server = TestServer::start().await;
    server
        .provider
        .set_fallback(Reply::content("<update status=\"200\">done</update>"));
    let mut runs = Vec::new();
    for r in 0..4 {
        let mut client = server.project_client("demo").await;
        runs.push(actix_rt::spawn(async move {
            let alias = start_run(&mut client, &format!("run://eager_{r}"), "First").await;
            wait_status(&mut client, &alias, 200).await;
            for n in 0..20 {
                client
                    .call(
                        "set",
                        json!({ "path": format!("run://{alias}"), "body": format!("Again {n}") }),
                    )
                    .await
                    .unwrap();
                wait_status(&mut client, &alias, 200).await;
            }
        }));
    }
    for run in runs {
        run.await.unwrap();
    }
    assert_eq!(server.provider.chat_requests().len(), 4 * 21);
    server.stop().await;
}

/// Clients see every command's outcome, each in the history of exactly one `run/state` in the
/// order run. A turn that ends in the same write as its last command pushes once for both:
/// that push carries the last command and the turn's telemetry.
#[actix_rt::test]
async fn every_commands_outcome_reaches_clients_once_in_order() {
    let server = TestServer::start().await;
    server.provider.push(Reply::content(
        "<set path=\"known://a\">1</set><set path=\"known://b\">2</set><update status=\"200\">done</update>",
    ));
    let mut client = server.project_client("demo").await;
    start_run(&mut client, "run://order", "Note two facts").await;
    let pushes: Vec<(i64, bool, Vec<String>)> = states_until(&mut client, 200)
        .await
        .iter()
        .map(|state| {
            let paths = state["history"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|h| h["path"].as_str().unwrap_or_default().to_owned())
                .collect();
            let status = state["status"].as_i64().unwrap_or_default();
            (status, state["telemetry"].is_object(), paths)
        })
        .collect();
    let set = |fact: &str| format!("set://turn_1/known%3A%2F%2F{fact}");
    assert_eq!(
        pushes,
        vec![
            (
                102,
                false,
                vec!["prompt://1".into(), "known://a".into(), set("a")]
            ),
            (102, false, vec!["known://b".into(), set("b")]),
            (102, true, vec!["update://turn_1".into()]),
            (200, false, vec![]),
        ]
    );
}
