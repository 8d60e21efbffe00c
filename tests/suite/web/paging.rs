//! `getRun {limit, offset}`: a long run's history is read a page at a time, counted
//! from its newest entry, so a web page shows the latest work without the whole run.

use crate::support::{start_run, wait_status, TestServer};
use pretty_assertions::assert_eq;
use rummy_client::params::HelloParams;
use rummy_client::{Client, ClientOptions};
use rummy_testkit::Reply;
use serde_json::{json, Value};

/// Three turns, each writing two facts, then a conclusion: sixteen history entries (the
/// prompt; per turn two facts, the two `set://` logs that wrote them and an update).
fn script(server: &TestServer) {
    for turn in 1..=3 {
        server.provider.push(Reply::content(format!(
            "<set path=\"known://t{turn}a\">a</set><set path=\"known://t{turn}b\">b</set>\
             <update status=\"{}\">turn {turn}</update>",
            if turn == 3 { 200 } else { 102 }
        )));
    }
}

fn paths(history: &Value) -> Vec<String> {
    history
        .as_array()
        .map(|items| {
            items
                .iter()
                .filter_map(|i| i["path"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// A page holds the newest `limit` entries after skipping `offset`, oldest first; pages read
/// back to back give the whole history, and `historyTotal` counts it. Without `limit` the
/// answer is what it always was: every entry and no `historyTotal`.
#[actix_rt::test]
async fn get_run_pages_its_history_from_the_newest_entry() {
    let server = TestServer::start().await;
    script(&server);
    let mut client = server.project_client("paging").await;
    start_run(&mut client, "run://long", "Work").await;
    wait_status(&mut client, "long", 200).await;

    let whole = client.call("getRun", json!({"run": "long"})).await.unwrap();
    let all = paths(&whole["history"]);
    assert_eq!((all.len(), whole.get("historyTotal")), (16, None));

    let mut pages = Vec::new();
    let mut totals = Vec::new();
    for offset in [0, 6, 12] {
        let page = client
            .call(
                "getRun",
                json!({"run": "long", "limit": 6, "offset": offset}),
            )
            .await
            .unwrap();
        totals.push(page["historyTotal"].clone());
        pages.insert(0, paths(&page["history"]));
    }
    assert_eq!(totals, vec![json!(16), json!(16), json!(16)]);
    assert_eq!(
        pages.iter().map(Vec::len).collect::<Vec<_>>(),
        vec![4, 6, 6]
    );
    assert_eq!(pages.concat(), all);

    let past = client
        .call("getRun", json!({"run": "long", "limit": 4, "offset": 50}))
        .await
        .unwrap();
    assert_eq!(
        (past["history"].clone(), past["historyTotal"].clone()),
        (json!([]), json!(16))
    );
    server.stop().await;
}

/// A reconnecting client asks `getRun {sinceSeq, limit: 0}`: the missed pushes without
/// shipping any history; the typed client's page reads `historyTotal`.
#[actix_rt::test]
async fn an_empty_page_replays_the_missed_pushes_alone() {
    let server = TestServer::start().await;
    script(&server);
    let mut client = server.project_client("replay").await;
    start_run(&mut client, "run://r", "Work").await;
    wait_status(&mut client, "r", 200).await;

    let replay = client
        .call("getRun", json!({"run": "r", "sinceSeq": 0, "limit": 0}))
        .await
        .unwrap();
    let last_seq = replay["lastSeq"].as_i64().unwrap();
    let missed = replay["missed"].as_array().map_or(0, Vec::len);
    assert_eq!(
        (replay["history"].clone(), replay["historyTotal"].clone()),
        (json!([]), json!(16))
    );
    assert!(missed > 0 && i64::try_from(missed).unwrap() <= last_seq);

    let mut typed = Client::connect(ClientOptions::new(server.url()))
        .await
        .unwrap();
    typed
        .hello(HelloParams {
            name: "replay".into(),
            ..HelloParams::default()
        })
        .await
        .unwrap();
    let page = typed.get_run_page("r", 3, 0).await.unwrap();
    let newest: Vec<String> = page.history.iter().map(|h| h.path.clone()).collect();
    let whole = client.call("getRun", json!({"run": "r"})).await.unwrap();
    assert_eq!(
        (page.history_total, newest),
        (Some(16), paths(&whole["history"])[13..].to_vec())
    );
    server.stop().await;
}
