//! Model output end to end: native dialects, malformed tags and prose are healed, and the loop ends as the referee says.

use crate::support::{scheme_entries, start_run, wait_status, TestServer};
use pretty_assertions::assert_eq;
use rummy_testkit::{Reply, RpcClient};
use serde_json::json;

async fn bodies(client: &mut RpcClient, run: &str, scheme: &str) -> Vec<String> {
    scheme_entries(client, run, scheme)
        .await
        .iter()
        .map(|e| e["body"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// A Qwen-dialect turn, then an unclosed tag, then prose: commands run, warnings reach the model, and the prose is the answer.
#[actix_rt::test]
async fn dialect_unclosed_tag_then_prose() {
    let server = TestServer::start().await;
    server.provider.push(Reply::content(
        "<|tool_call>call:set{path:<|\"|>known://x<|\"|>, body:<|\"|>first fact<|\"|>}<tool_call|>\n<|tool_call>call:update{status:102, body:<|\"|>going on<|\"|>}<tool_call|>",
    ));
    server
        .provider
        .push(Reply::content("<set path=\"known://y\">second fact"));
    server.provider.push(Reply::content("The answer is 42."));
    let mut client = server.project_client("heal").await;
    let alias = start_run(&mut client, "run://h", "Find it").await;
    let last = wait_status(&mut client, &alias, 200).await;
    assert_eq!(last["summary"], json!("The answer is 42."));
    let mut known = bodies(&mut client, &alias, "known").await;
    known.sort();
    assert_eq!(
        known,
        vec!["first fact".to_owned(), "second fact".to_owned()]
    );
    let errors = bodies(&mut client, &alias, "error").await;
    assert!(
        errors.iter().any(|e| e.starts_with("Unclosed <set> tag")),
        "{errors:?}"
    );
    assert!(
        errors.iter().any(|e| e.starts_with("Missing update")),
        "{errors:?}"
    );
    let third = &server.provider.chat_requests()[2].body["messages"][1]["content"];
    assert!(
        third.as_str().unwrap().contains("Unclosed &lt;set&gt; tag")
            || third.as_str().unwrap().contains("Unclosed <set> tag"),
        "the model reads the warning: {third}"
    );
    server.stop().await;
}

/// Turns that keep striking (no update) abandon the loop with 508 and the reason as an error entry.
#[actix_rt::test]
async fn consecutive_strikes_abandon_the_loop() {
    let server = TestServer::start().await;
    server
        .provider
        .set_fallback(Reply::content("<set path=\"known://same\">again</set>"));
    let mut client = server.project_client("strikes").await;
    let alias = start_run(&mut client, "run://s", "Loop forever").await;
    wait_status(&mut client, &alias, 508).await;
    assert_eq!(
        server.provider.chat_requests().len(),
        3,
        "RUMMY_MAX_STRIKES defaults to 3"
    );
    let errors = bodies(&mut client, &alias, "error").await;
    assert!(
        errors
            .iter()
            .any(|e| e.contains("consecutive strikes") || e.contains("Cyclic tool pattern")),
        "{errors:?}"
    );
    let run = client
        .call("getRun", json!({ "run": alias }))
        .await
        .unwrap();
    assert_eq!(run["status"], json!(508));
    server.stop().await;
}
