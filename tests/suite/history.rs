//! A long-lived run under a small context: a new loop whose prompt does not
//! fit beside the run's history demotes earlier loops' entries — summarized first, archived
//! when that is not enough, oldest first — instead of ending 413; 413 stays for a prompt that
//! cannot fit on its own.

use crate::support::long_run::{answer, prompt};
use crate::support::{wait_status, TestServer};
use rummy_testkit::{Reply, RpcClient};
use serde_json::{json, Value};

async fn continue_run(client: &mut RpcClient, alias: &str, body: &str) {
    let answer = client
        .call(
            "set",
            json!({ "path": format!("run://{alias}"), "body": body }),
        )
        .await
        .unwrap();
    assert_eq!(answer["ok"], json!(true), "{answer}");
}

fn system_message(server: &TestServer, index: usize) -> String {
    server.provider.chat_requests()[index].body["messages"][0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// A run continued 50 times with a small context limit answers every prompt: the model is
/// called each time, old loops leave the prompt oldest first, the newest stay whole, and the
/// model is told in a `budget://` entry what was demoted.
#[actix_rt::test]
async fn a_run_continued_fifty_times_under_a_small_limit_keeps_working() {
    let server = TestServer::start().await;
    let mut client = server.project_client("long").await;
    for n in 0..50 {
        server.provider.push(Reply::content(answer(n)));
    }
    client
        .call(
            "set",
            json!({ "path": "run://long", "body": prompt(0), "attributes": { "model": "fast", "contextLimit": 8192 } }),
        )
        .await
        .unwrap();
    wait_status(&mut client, "long", 200).await;
    for n in 1..50 {
        continue_run(&mut client, "long", &prompt(n)).await;
        let state = wait_status(&mut client, "long", 200).await;
        assert_eq!(state["status"], json!(200), "loop {n}");
    }
    assert_eq!(server.provider.chat_requests().len(), 50);
    let last = system_message(&server, 49);
    assert!(
        last.contains("Answer 48:"),
        "the previous loop's answer is kept"
    );
    assert!(
        !last.contains("Question 0:"),
        "the oldest prompt left the context"
    );
    let notes = client
        .call(
            "getEntries",
            json!({ "run": "long", "scheme": "budget", "withBody": true }),
        )
        .await
        .unwrap();
    let notes = notes.as_array().expect("a list");
    assert!(!notes.is_empty());
    let history: Vec<&Value> = notes
        .iter()
        .filter(|n| n["path"].as_str().is_some_and(|p| p.ends_with("/history")))
        .collect();
    // Most loops demote once the context is full; how many exactly moves with the size of the
    // instructions (a demotion that frees more leaves the next loops room), 38–41 of 50 today.
    assert!(history.len() >= 35, "{} demotions", history.len());
    assert!(history.iter().all(|n| n["body"]
        .as_str()
        .is_some_and(|b| b.starts_with("Context budget: to make room, "))));
    // Nothing was deleted: the first prompt is still stored, only out of the model's view.
    let prompts = client
        .call("getEntries", json!({ "run": "long", "scheme": "prompt" }))
        .await
        .unwrap();
    assert_eq!(prompts.as_array().map(Vec::len), Some(50));
    assert_eq!(
        prompts
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["path"] == json!("prompt://1"))
            .map(|p| p["visibility"].clone()),
        Some(json!("archived"))
    );
    server.stop().await;
}

/// A prompt too large to fit even with every earlier loop archived and itself truncated ends
/// 413 without a model call — and leaves the run's history as it was.
#[actix_rt::test]
async fn a_prompt_that_cannot_fit_on_its_own_still_ends_413_and_demotes_nothing() {
    let server = TestServer::start().await;
    let mut client = server.project_client("tight").await;
    server.provider.push(Reply::content(answer(0)));
    client
        .call(
            "set",
            json!({ "path": "run://tight", "body": prompt(0), "attributes": { "model": "fast", "contextLimit": 8192 } }),
        )
        .await
        .unwrap();
    wait_status(&mut client, "tight", 200).await;
    client
        .call(
            "set",
            json!({ "path": "run://tight", "attributes": { "contextLimit": 1024 } }),
        )
        .await
        .unwrap();
    continue_run(&mut client, "tight", "Short question.").await;
    wait_status(&mut client, "tight", 413).await;
    assert_eq!(server.provider.chat_requests().len(), 1);
    let prompts: Vec<Value> = client
        .call("getEntries", json!({ "run": "tight", "scheme": "prompt" }))
        .await
        .unwrap()
        .as_array()
        .unwrap()
        .clone();
    let first = prompts
        .iter()
        .find(|p| p["path"] == json!("prompt://1"))
        .unwrap();
    assert_eq!(first["visibility"], json!("visible"));
    server.stop().await;
}

/// Within a loop too: a turn whose own output leaves no room for the next demotes earlier
/// loops' entries at that next turn, and the loop goes on instead of ending 413.
#[actix_rt::test]
async fn a_later_turn_of_a_loop_makes_room_from_earlier_loops_too() {
    let server = TestServer::start().await;
    let mut client = server.project_client("grow").await;
    for n in 0..3 {
        server.provider.push(Reply::content(answer(n)));
    }
    let big = format!(
        "<update status=\"102\">{}</update>",
        "still working through the details. ".repeat(450)
    );
    server.provider.push(Reply::content(big));
    server
        .provider
        .push(Reply::content("<update status=\"200\">done</update>"));
    client
        .call(
            "set",
            json!({ "path": "run://grow", "body": prompt(0), "attributes": { "model": "fast", "contextLimit": 8192 } }),
        )
        .await
        .unwrap();
    wait_status(&mut client, "grow", 200).await;
    for n in 1..4 {
        continue_run(&mut client, "grow", &prompt(n)).await;
        wait_status(&mut client, "grow", 200).await;
    }
    assert_eq!(server.provider.chat_requests().len(), 5);
    let notes = client
        .call("getEntries", json!({ "run": "grow", "scheme": "budget" }))
        .await
        .unwrap();
    let paths: Vec<&str> = notes
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|n| n["path"].as_str())
        .collect();
    assert!(paths.contains(&"budget://4/5/history"), "{paths:?}");
    server.stop().await;
}
