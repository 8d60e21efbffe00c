//! `GET /metrics`: the Prometheus text a scrape reads after a run, with the
//! counters moved by exactly what the run did; and who may scrape it.

use crate::support::{start_run, states_until, TestServer};
use pretty_assertions::assert_eq;
use rummy_testkit::{Reply, RpcClient};
use serde_json::json;

/// `GET /metrics` with an optional bearer token: the status and the body.
async fn scrape(server: &TestServer, token: Option<&str>) -> (u16, String) {
    let mut request =
        reqwest::Client::new().get(format!("http://127.0.0.1:{}/metrics", server.port()));
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.text().await.unwrap())
}

/// A token for `user` on project `web`, made over the protocol by `owner`.
async fn token(owner: &mut RpcClient, user: &str, admin: bool) -> String {
    let params = json!({ "user": user, "admin": admin, "projects": ["web"] });
    let made = owner.call("token/create", params).await.unwrap();
    made["token"].as_str().unwrap().to_owned()
}

/// An admin token `ops` made by the owner (whose connection then closes: a token exists), and
/// a member token `alice` on `web` made with it.
async fn ops_and_alice(server: &TestServer) -> (String, String) {
    let mut owner = server.project_client("web").await;
    let ops = token(&mut owner, "ops", true).await;
    let mut admin = RpcClient::connect_with_headers(
        &server.url(),
        &[("Authorization", &format!("Bearer {ops}"))],
    )
    .await
    .unwrap();
    let alice = token(&mut admin, "alice", false).await;
    (ops, alice)
}

/// The value of the series `name` (with its labels, as exported), if exported.
fn value(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|line| line.strip_prefix(series)?.strip_prefix(' '))
        .and_then(|v| v.parse().ok())
}

/// After a two-turn run, the counters say so: two turns (one continued, one concluded), two
/// provider calls that succeeded, their tokens and cost for the project, the run idle at 200,
/// connections and messages counted, the store's commits measured.
#[actix_rt::test]
async fn a_scrape_after_a_run_shows_what_it_did() {
    let server = TestServer::start().await;
    server.provider.push(
        Reply::content(
            "<set path=\"known://answer\">42</set>\n<update status=\"102\">checking</update>",
        )
        .usage(100, 20)
        .cost(0.25),
    );
    server.provider.push(
        Reply::content("<update status=\"200\">The answer is 42.</update>")
            .usage(150, 10)
            .cost(0.5),
    );
    let mut client = server.project_client("demo").await;
    let (status, before) = scrape(&server, None).await;
    assert_eq!(status, 200, "{before}");
    assert_eq!(value(&before, "rummy_turns_total{end=\"conclude\"}"), None);
    start_run(&mut client, "run://deep", "What is the answer?").await;
    states_until(&mut client, 200).await;

    let (status, text) = scrape(&server, None).await;
    assert_eq!(status, 200, "{text}");
    let project = "project=\"1\"";
    let series = |s: &str| value(&text, s);
    let expected: Vec<(String, Option<f64>)> = vec![
        ("rummy_turns_total{end=\"continue\"}".into(), Some(1.0)),
        ("rummy_turns_total{end=\"conclude\"}".into(), Some(1.0)),
        ("rummy_turn_duration_seconds_count".into(), Some(2.0)),
        ("rummy_provider_requests_total{model=\"fake-model\",outcome=\"ok\",provider=\"openai\"}".into(), Some(2.0)),
        ("rummy_provider_request_duration_seconds_count{model=\"fake-model\",provider=\"openai\"}".into(), Some(2.0)),
        ("rummy_provider_first_token_seconds_count{model=\"fake-model\",provider=\"openai\"}".into(), Some(2.0)),
        (format!("rummy_tokens_total{{direction=\"in\",model=\"fake-model\",{project},provider=\"openai\"}}"), Some(250.0)),
        (format!("rummy_tokens_total{{direction=\"out\",model=\"fake-model\",{project},provider=\"openai\"}}"), Some(30.0)),
        (format!("rummy_cost_dollars_total{{model=\"fake-model\",{project},provider=\"openai\"}}"), Some(0.75)),
        ("rummy_runs{status=\"200\"}".into(), Some(1.0)),
        ("rummy_loops_queued".into(), Some(0.0)),
        ("rummy_project_info{name=\"demo\",project=\"1\"}".into(), Some(1.0)),
        ("rummy_websocket_connections".into(), Some(1.0)),
    ];
    let read: Vec<(String, Option<f64>)> = expected
        .iter()
        .map(|(name, _)| (name.clone(), series(name)))
        .collect();
    assert_eq!(read, expected, "{text}");
    let moved = |name: &str| series(name).is_some_and(|n| n > 0.0);
    assert!(moved("rummy_store_commit_duration_seconds_count"), "{text}");
    assert!(moved("rummy_store_group_units_count"), "{text}");
    assert!(
        moved("rummy_websocket_messages_total{direction=\"in\"}"),
        "{text}"
    );
    assert!(
        moved("rummy_websocket_messages_total{direction=\"out\"}"),
        "{text}"
    );
    assert!(series("rummy_store_wal_bytes").is_some(), "{text}");
    assert!(
        series("rummy_notification_backlog_bytes").is_some(),
        "{text}"
    );
    server.stop().await;
}

/// Behind a proxy every request comes from loopback, so there only an admin token opens
/// `/metrics`: none, or a member's, is refused 403.
#[actix_rt::test]
async fn behind_a_proxy_only_an_admin_token_may_scrape() {
    let mut server = TestServer::start().await;
    let (ops, alice) = ops_and_alice(&server).await;
    server
        .restart_with(|config| config.access.trust_proxy = true)
        .await;
    let (refused, why) = scrape(&server, None).await;
    assert_eq!(
        (refused, why.as_str()),
        (403, "forbidden: /metrics needs an admin token (Authorization: Bearer), or a request from loopback to a loopback Host (localhost, 127.0.0.1, [::1]) without RUMMY_TRUST_PROXY\n")
    );
    assert_eq!(scrape(&server, Some(&alice)).await.0, 403);
    assert_eq!(scrape(&server, Some("not-a-token")).await.0, 403);
    let (status, text) = scrape(&server, Some(&ops)).await;
    assert_eq!(status, 200);
    assert!(
        text.contains("# TYPE rummy_loops_queued gauge\nrummy_loops_queued 0\n"),
        "{text}"
    );
    server.stop().await;
}

/// `GET /metrics` sent from loopback with `host` as its `Host` header and `authorization` if
/// given: the status.
async fn scrape_as(server: &TestServer, host: &str, authorization: Option<&str>) -> u16 {
    let port = server.port();
    let mut request = format!("GET /metrics HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n");
    if let Some(value) = authorization {
        request.push_str(&format!("Authorization: {value}\r\n"));
    }
    request.push_str("\r\n");
    let answer = actix_rt::task::spawn_blocking(move || {
        use std::io::{Read, Write};
        let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        stream.write_all(request.as_bytes()).unwrap();
        let mut text = String::new();
        stream.read_to_string(&mut text).unwrap();
        text
    })
    .await
    .unwrap();
    answer
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

/// Without a token, `/metrics` answers a loopback peer only when its `Host` is a loopback name
/// (a page whose name was re-pointed at 127.0.0.1 sends its own); with an admin token — its
/// scheme in any case — any `Host` is answered, and a member's token opens nothing.
#[actix_rt::test]
async fn without_a_token_metrics_answer_only_a_loopback_host() {
    let server = TestServer::start().await;
    let port = server.port();
    let (ops, alice) = ops_and_alice(&server).await;
    let mut statuses = Vec::new();
    for host in [
        format!("127.0.0.1:{port}"),
        format!("localhost:{port}"),
        "LOCALHOST".to_owned(),
        format!("[::1]:{port}"),
        format!("evil.example:{port}"),
        format!("10.0.0.5:{port}"),
    ] {
        statuses.push((host.clone(), scrape_as(&server, &host, None).await));
    }
    let evil = format!("evil.example:{port}");
    for authorization in [
        format!("Bearer {ops}"),
        format!("BEARER {ops}"),
        format!("bearer {ops}"),
        format!("Bearer {alice}"),
    ] {
        statuses.push((
            authorization
                .replace(&ops, "<ops>")
                .replace(&alice, "<alice>"),
            scrape_as(&server, &evil, Some(&authorization)).await,
        ));
    }
    assert_eq!(
        statuses,
        vec![
            (format!("127.0.0.1:{port}"), 200),
            (format!("localhost:{port}"), 200),
            ("LOCALHOST".to_owned(), 200),
            (format!("[::1]:{port}"), 200),
            (format!("evil.example:{port}"), 403),
            (format!("10.0.0.5:{port}"), 403),
            ("Bearer <ops>".to_owned(), 200),
            ("BEARER <ops>".to_owned(), 200),
            ("bearer <ops>".to_owned(), 200),
            ("Bearer <alice>".to_owned(), 403),
        ]
    );
    server.stop().await;
}
