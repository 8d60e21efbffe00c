//! `search` with a SearXNG backend configured: the query reaches it, the hits reach the model next turn, and a broken backend fails the search, not the run.
//!
//! The fake provider also plays SearXNG (`GET /search`), so `RUMMY_SEARXNG_URL`
//! points at the same loopback server as the model.

use crate::support::{scheme_entries, start_run, wait_status, TestServer};
use pretty_assertions::assert_eq;
use rummy::config::Config;
use rummy_testkit::{Reply, RpcClient};
use serde_json::{json, Value};

/// The tail of every failed search's body.
const FAILED_TAIL: &str = "Work from what you already have, or search again on a later turn.";

/// Points `RUMMY_SEARXNG_URL` at the fake provider.
fn searxng_on_the_fake(config: &mut Config) {
    config.searxng_url = config.providers.openai.as_ref().map(|o| o.base_url.clone());
}

/// Scripts a search, then a conclusion, runs the prompt to 200, and answers the run's `search://` entries.
async fn search_run(server: &TestServer) -> (RpcClient, String, Value) {
    server.provider.push(Reply::content(
        "<search>rust actix</search><update status=\"102\">searching</update>",
    ));
    server
        .provider
        .push(Reply::content("<update status=\"200\">done</update>"));
    let mut client = server.project_client("demo").await;
    let alias = start_run(&mut client, "run://web", "Look it up").await;
    wait_status(&mut client, &alias, 200).await;
    let searches = Value::from(scheme_entries(&mut client, &alias, "search").await);
    (client, alias, searches)
}

/// The user message of the model's `n`th request.
fn user_message(server: &TestServer, n: usize) -> String {
    let request = &server.provider.chat_requests()[n];
    request.body["messages"][1]["content"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// With SearXNG configured, search is taught, the query reaches SearXNG, and its hits are the next turn's search result and summarized pages.
#[actix_rt::test]
async fn search_results_reach_the_model_next_turn() {
    let server = TestServer::start_with(searxng_on_the_fake).await;
    server.provider.set_search_results(json!([
        {"url": "https://actix.rs/", "title": "Actix Web", "content": "A powerful, pragmatic web framework.", "engine": "duckduckgo"},
        {"url": "mailto:nobody@example.com", "title": "not a page", "content": ""},
        {"url": "https://docs.rs/actix", "title": "actix - Rust", "content": "Actor framework for Rust."},
    ]));
    let (mut client, alias, searches) = search_run(&server).await;

    let asked = server.provider.search_requests();
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert_eq!(asked[0].query_param("q"), Some("rust actix"));
    assert_eq!(asked[0].query_param("format"), Some("json"));

    assert_eq!(searches.as_array().unwrap().len(), 1, "{searches}");
    assert_eq!(searches[0]["status"], json!(200));
    let listing = "2 results for \"rust actix\"\nhttps://actix.rs/\nhttps://docs.rs/actix";
    assert_eq!(searches[0]["body"], json!(listing));
    let pages = client
        .call(
            "getEntries",
            json!({ "run": alias, "scheme": "https", "withBody": true }),
        )
        .await
        .unwrap();
    let pages: Vec<(&str, &str)> = pages
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["path"].as_str().unwrap(), p["body"].as_str().unwrap()))
        .collect();
    assert_eq!(
        pages,
        vec![
            (
                "https://actix.rs/",
                "# Actix Web\n\nA powerful, pragmatic web framework."
            ),
            (
                "https://docs.rs/actix",
                "# actix - Rust\n\nActor framework for Rust."
            ),
        ]
    );

    let first = &server.provider.chat_requests()[0];
    let system = first.body["messages"][0]["content"].as_str().unwrap();
    assert!(system.contains("## <search"), "search is taught: {system}");
    let user = user_message(&server, 1);
    assert!(
        user.contains("<search path=\"rust actix\" turn=\"1\" status=\"200\""),
        "{user}"
    );
    assert!(user.contains(listing), "{user}");
    let second = &server.provider.chat_requests()[1];
    let system = second.body["messages"][0]["content"].as_str().unwrap();
    for page in [
        r#"<https path="https://actix.rs/" turn="1" status="200" summary="Actix Web" visibility="summarized" tokens="25">A powerful, pragmatic web framework.</https>"#,
        r#"<https path="https://docs.rs/actix" turn="1" status="200" summary="actix - Rust" visibility="summarized" tokens="21">Actor framework for Rust.</https>"#,
    ] {
        assert!(
            system.contains(page),
            "the page is known by its title and snippet: {system}"
        );
    }
    server.stop().await;
}

/// A SearXNG answering 500 fails the search (502) with a message the model reads next turn; the run still completes.
#[actix_rt::test]
async fn failing_searxng_fails_the_search_not_the_run() {
    let server = TestServer::start_with(searxng_on_the_fake).await;
    server
        .provider
        .set_search_failure(500, "Internal Server Error");
    let (_client, _alias, searches) = search_run(&server).await;

    assert_eq!(server.provider.search_requests().len(), 1);
    assert_eq!(searches.as_array().unwrap().len(), 1, "{searches}");
    let message = format!(
        "Search for \"rust actix\" failed: the search backend answered HTTP 500. {FAILED_TAIL}"
    );
    assert_eq!(
        (&searches[0]["status"], &searches[0]["body"]),
        (&json!(502), &json!(message))
    );
    let user = user_message(&server, 1);
    assert!(
        user.contains("<search path=\"rust actix\" turn=\"1\" status=\"502\" state=\"failed\""),
        "{user}"
    );
    assert!(user.contains(&message), "{user}");
    server.stop().await;
}

/// A SearXNG that cannot be reached fails the search with the connection's cause; the run still completes.
#[actix_rt::test]
async fn unreachable_searxng_fails_the_search_not_the_run() {
    // A loopback port that was free a moment ago: nothing listens there.
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap();
    let server =
        TestServer::start_with(move |c| c.searxng_url = Some(format!("http://{closed}"))).await;
    let (_client, _alias, searches) = search_run(&server).await;

    let body = searches[0]["body"].as_str().unwrap();
    assert_eq!(searches[0]["status"], json!(502), "{searches}");
    assert!(
        body.starts_with(
            "Search for \"rust actix\" failed: the search backend could not be reached ("
        ),
        "{body}"
    );
    assert!(body.ends_with(FAILED_TAIL), "{body}");
    assert!(!body.contains(&closed.to_string()), "no URL leaks: {body}");
    server.stop().await;
}

/// A SearXNG slower than `RUMMY_SEARCH_TIMEOUT` fails the search (502) saying so; the run still completes.
#[actix_rt::test]
async fn slow_searxng_times_out_the_search_not_the_run() {
    let server = TestServer::start_with(|c| {
        searxng_on_the_fake(c);
        c.limits.search_timeout_ms = 200;
    })
    .await;
    server.provider.set_search_results(json!([]));
    server
        .provider
        .set_search_delay(std::time::Duration::from_secs(5));
    let (_client, _alias, searches) = search_run(&server).await;

    let message = format!(
        "Search for \"rust actix\" failed: the search backend did not answer within 200 ms. {FAILED_TAIL}"
    );
    assert_eq!(
        (&searches[0]["status"], &searches[0]["body"]),
        (&json!(502), &json!(message))
    );
    server.stop().await;
}

/// search without a configured SearXNG is not taught, and is refused with a visible 501 entry the model reads next turn.
#[actix_rt::test]
async fn unconfigured_search_is_refused_visibly() {
    let server = TestServer::start().await;
    let (_client, _alias, searches) = search_run(&server).await;

    assert_eq!(searches.as_array().unwrap().len(), 1, "{searches}");
    assert_eq!(searches[0]["status"], json!(501));
    assert_eq!(
        searches[0]["body"],
        json!("search is not configured on this server (set RUMMY_SEARXNG_URL)")
    );
    let first = &server.provider.chat_requests()[0];
    let system = first.body["messages"][0]["content"].as_str().unwrap();
    assert!(
        !system.contains("## <search"),
        "search is not taught: {system}"
    );
    let user = user_message(&server, 1);
    assert!(
        user.contains("<search path=\"rust actix\" turn=\"1\" status=\"501\" state=\"failed\""),
        "{user}"
    );
    server.stop().await;
}
