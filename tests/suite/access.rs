//! Who may connect and what a connection may hold: browser origins,
//! project-root bounds, frame and batch bounds, connection places, dead connections, and the
//! findings of a hostile probe, each pinned by the exact answer it gets.

use crate::support::raw::{header, Frame, RawSocket};
use crate::support::{TestServer, WAIT};
use rummy_core::access::roots::RootBound;
use rummy_testkit::{ClientError, RpcClient};
use serde_json::{json, Value};
use std::time::Duration;

/// A WebSocket upgrade from a foreign web page is refused 403 before any message; the
/// server's own page, a listed origin and clients without `Origin` are let in.
#[actix_rt::test]
async fn a_page_from_a_foreign_origin_cannot_open_a_websocket() {
    let server = TestServer::start_with(|c| {
        c.access.allowed_origins = vec!["https://team.example".to_owned()];
    })
    .await;
    let url = server.url();
    for origin in ["https://evil.example", "null", "http://localhost:1"] {
        let refused = RpcClient::connect_with_headers(&url, &[("Origin", origin)]).await;
        match refused {
            Err(ClientError::Rejected { status, body }) => {
                assert_eq!(status, 403, "{origin}");
                assert_eq!(
                    body,
                    format!("origin {origin} may not open a WebSocket here: only the server's own page and the origins in RUMMY_ALLOWED_ORIGINS may\n")
                );
            }
            Err(other) => panic!("{origin}: {other:?}"),
            Ok(_) => panic!("{origin} was let in"),
        }
    }
    let own = format!("http://127.0.0.1:{}", server.port());
    for origin in [own.as_str(), "https://team.example"] {
        let mut client = RpcClient::connect_with_headers(&url, &[("Origin", origin)])
            .await
            .unwrap_or_else(|e| panic!("{origin}: {e:?}"));
        assert_eq!(client.call("ping", json!({})).await.unwrap(), json!({}));
    }
    let mut plain = server.client().await;
    assert_eq!(plain.call("ping", json!({})).await.unwrap(), json!({}));
    server.stop().await;
}

/// A frame header announcing more than RUMMY_MAX_FRAME_BYTES closes the connection 1009 as
/// soon as the header arrives — no payload is waited for — and others are still served.
#[actix_rt::test]
async fn a_frame_announcing_more_than_the_limit_is_closed_when_its_header_arrives() {
    let server = TestServer::start_with(|c| c.limits.max_frame_bytes = 8192).await;
    let mut raw = RawSocket::connect(server.port()).await;
    raw.send_bytes(&header(0x1, 1 << 62, [1, 2, 3, 4])).await;
    assert_eq!(
        raw.next_frame().await,
        Some(Frame::Close(
            1009,
            "a frame of 4611686018427387904 bytes announced; the limit is 8192".to_owned()
        ))
    );
    assert!(raw.server_hangs_up(Duration::from_secs(2)).await);
    let mut other = server.client().await;
    assert_eq!(other.call("ping", json!({})).await.unwrap(), json!({}));
    server.stop().await;
}

/// After the close handshake the server closes the TCP connection itself, for every client.
#[actix_rt::test]
async fn the_server_hangs_up_after_the_close_handshake() {
    let server = TestServer::start().await;
    let port = server.port();
    let clients = (0..10).map(|_| async move {
        let mut raw = RawSocket::connect(port).await;
        raw.send_text(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#)
            .await;
        assert_eq!(
            raw.next_text().await,
            r#"{"jsonrpc":"2.0","id":1,"result":{}}"#
        );
        raw.send_frame(0x8, &1000u16.to_be_bytes()).await;
        assert!(matches!(
            raw.next_frame().await,
            Some(Frame::Close(1000, _))
        ));
        raw.server_hangs_up(Duration::from_secs(3)).await
    });
    let hung_up = futures_util::future::join_all(clients).await;
    assert_eq!(hung_up, vec![true; 10]);
    server.stop().await;
}

/// A request id comes back byte for byte, however large or oddly spelled.
#[actix_rt::test]
async fn request_ids_are_echoed_exactly() {
    let server = TestServer::start().await;
    let mut raw = RawSocket::connect(server.port()).await;
    for id in [
        "123456789012345678901234567890",
        "1e400",
        "-0.0",
        r#""\u00e9""#,
    ] {
        raw.send_text(&format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#))
            .await;
        assert_eq!(
            raw.next_text().await,
            format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{}}}}"#)
        );
    }
    server.stop().await;
}

/// A batch over 100 calls is refused whole; a batch whose answers pass
/// RUMMY_MAX_MESSAGE_BYTES gets -32007 for each call past the limit, never a bigger frame.
#[actix_rt::test]
async fn batches_are_bounded_in_calls_and_in_answer_bytes() {
    let server = TestServer::start_with(|c| c.limits.max_message_bytes = 64 * 1024).await;
    let mut client = server.client().await;
    let call = |id: usize, method: &str| json!({"jsonrpc": "2.0", "id": id, "method": method});
    let over: Vec<Value> = (0..101).map(|i| call(i, "ping")).collect();
    client
        .send_text(&Value::Array(over).to_string())
        .await
        .unwrap();
    let answer = client.next_response().await.unwrap();
    assert_eq!(answer["id"], Value::Null);
    assert_eq!(answer["error"]["code"], json!(-32600));
    assert_eq!(
        answer["error"]["message"],
        json!(
            "invalid request: a batch of 101 calls is over the limit of 100; send fewer per batch"
        )
    );
    let many: Vec<Value> = (0..100).map(|i| call(i, "discover")).collect();
    client
        .send_text(&Value::Array(many).to_string())
        .await
        .unwrap();
    let answers = client.next_response().await.unwrap();
    let answers = answers.as_array().expect("an array");
    assert_eq!(answers.len(), 100);
    // Answers in order: whole results while they fit the limit, then -32007 for each call.
    let fit = answers
        .iter()
        .take_while(|a| a.get("result").is_some())
        .count();
    assert!((1..100).contains(&fit), "{fit} answers fit");
    let fitted: usize = answers[..fit].iter().map(|a| a.to_string().len() + 1).sum();
    assert!(fitted <= 64 * 1024, "{fitted} bytes of results");
    for (i, a) in answers.iter().enumerate() {
        assert_eq!(a["id"], json!(i));
        if i >= fit {
            assert_eq!(a["error"]["code"], json!(-32007));
            assert_eq!(a["error"]["data"]["limit"], json!(64 * 1024));
        }
    }
    assert_eq!(client.call("ping", json!({})).await.unwrap(), json!({}));
    server.stop().await;
}

/// Calls a client makes before its hello are answered but never written to the RPC log.
#[actix_rt::test]
async fn calls_before_hello_are_not_logged() {
    let server = TestServer::start().await;
    let mut client = server.client().await;
    for _ in 0..5 {
        client.call("ping", json!({})).await.unwrap();
        let _ = client.call_err("getRuns", json!({})).await;
    }
    let root = server.project_root("logged");
    client
        .call(
            "rummy/hello",
            json!({"name": "logged", "projectRoot": root}),
        )
        .await
        .unwrap();
    client.call("ping", json!({})).await.unwrap();
    let methods = logged_methods(&server, 2).await;
    assert_eq!(methods, vec!["rummy/hello", "ping"]);
    server.stop().await;
}

/// The methods in the RPC log, in order, once at least `count` rows are there.
async fn logged_methods(server: &TestServer, count: usize) -> Vec<String> {
    use diesel::prelude::*;
    use rummy_store::schema::rpc_log::dsl as l;
    let db = rummy_store::database::open_read_pool(&server.database(), 1).unwrap();
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        let mut conn = db.get().unwrap();
        let rows: Vec<String> = l::rpc_log
            .order(l::id.asc())
            .select(l::method)
            .load(&mut *conn)
            .unwrap();
        if rows.len() >= count || std::time::Instant::now() > deadline {
            // A moment more, so a row that should not be there has had its chance.
            actix_rt::time::sleep(Duration::from_millis(100)).await;
            return l::rpc_log
                .order(l::id.asc())
                .select(l::method)
                .load(&mut *conn)
                .unwrap();
        }
        actix_rt::time::sleep(Duration::from_millis(20)).await;
    }
}

/// At RUMMY_MAX_CONNECTIONS one more upgrade is refused 503; a closed session gives its place back.
#[actix_rt::test]
async fn connections_are_capped() {
    let server = TestServer::start_with(|c| c.access.max_connections = 2).await;
    let first = server.client().await;
    let _second = server.client().await;
    match RpcClient::connect(&server.url()).await {
        Err(ClientError::Rejected { status, body }) => {
            assert_eq!(status, 503);
            assert_eq!(body, "the server holds its maximum of 2 connections (RUMMY_MAX_CONNECTIONS); try again later\n");
        }
        other => panic!("a third connection: {:?}", other.map(|_| ())),
    }
    first.close().await;
    let deadline = std::time::Instant::now() + WAIT;
    let mut third = loop {
        match RpcClient::connect(&server.url()).await {
            Ok(client) => break client,
            Err(_) if std::time::Instant::now() < deadline => {
                actix_rt::time::sleep(Duration::from_millis(20)).await
            }
            Err(e) => panic!("the place never came back: {e:?}"),
        }
    };
    assert_eq!(third.call("ping", json!({})).await.unwrap(), json!({}));
    server.stop().await;
}

/// The server pings every RUMMY_PING_INTERVAL: a client that answers (its library does) stays
/// connected however quiet it is; one that answers nothing is closed after three intervals.
#[actix_rt::test]
async fn dead_connections_are_closed_and_quiet_ones_stay() {
    let server = TestServer::start_with(|c| c.access.ping_interval_ms = 100).await;
    let mut quiet = server.client().await;
    // Reading (as a live client does) answers the pings; nothing else is sent for a second.
    assert!(
        quiet
            .expect_no_notification("run/state", Duration::from_secs(1))
            .await
    );
    assert_eq!(quiet.call("ping", json!({})).await.unwrap(), json!({}));
    let mut dead = RawSocket::connect(server.port()).await;
    let started = std::time::Instant::now();
    assert!(dead.server_hangs_up(Duration::from_secs(3)).await);
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_millis(300),
        "closed after {waited:?}"
    );
    server.stop().await;
}

/// Without RUMMY_PROJECT_ROOTS, `/`, `/etc` and other system trees are refused -32003 however
/// spelled; with it, roots outside are refused -32003 whether or not they exist (no oracle),
/// a symlink inside pointing out likewise, and a missing path or a file inside is -32602.
#[actix_rt::test]
async fn project_roots_are_bounded() {
    let server = TestServer::start().await;
    let mut client = server.client().await;
    for root in ["/", "/etc", "/usr/share", "/tmp/../etc", "/proc/self"] {
        let err = client
            .call_err("rummy/hello", json!({"name": "x", "projectRoot": root}))
            .await;
        assert_eq!(
            (
                err.code,
                err.data.clone().unwrap_or_default()["kind"].clone()
            ),
            (-32003, json!("permission")),
            "{root}"
        );
    }
    server.stop().await;

    let projects = tempfile::tempdir().unwrap();
    let bound = projects.path().canonicalize().unwrap();
    let allowed = bound.join("inside");
    std::fs::create_dir(&allowed).unwrap();
    let allowed = allowed.display().to_string();

    let server =
        TestServer::start_with(|c| c.access.project_roots = RootBound::Listed(vec![bound.clone()]))
            .await;
    let mut client = server.client().await;
    std::os::unix::fs::symlink("/etc", bound.join("link")).ok();
    std::fs::write(bound.join("file"), "x").unwrap();
    let hello = |root: String| json!({"name": "p", "projectRoot": root});
    let outside = server.home().join("elsewhere");
    std::fs::create_dir_all(&outside).unwrap();
    for root in [
        outside.display().to_string(),
        "/nowhere/at/all".to_owned(),
        bound.join("link").display().to_string(),
    ] {
        let err = client.call_err("rummy/hello", hello(root.clone())).await;
        assert_eq!(err.code, -32003, "{root}");
        assert_eq!(
            err.message,
            format!("project root {root} is not allowed here: it is outside RUMMY_PROJECT_ROOTS")
        );
    }
    let missing = bound.join("missing").display().to_string();
    let err = client.call_err("rummy/hello", hello(missing.clone())).await;
    assert_eq!(
        (err.code, err.message),
        (
            -32602,
            format!("invalid params: projectRoot: {missing} does not exist")
        )
    );
    let file = bound.join("file").display().to_string();
    let err = client.call_err("rummy/hello", hello(file.clone())).await;
    assert_eq!(
        (err.code, err.message),
        (
            -32602,
            format!("invalid params: projectRoot: {file} is not a directory")
        )
    );
    let ok = client
        .call("rummy/hello", hello(allowed.clone()))
        .await
        .unwrap();
    assert_eq!(ok["projectRoot"], json!(allowed));
    server.stop().await;
}
