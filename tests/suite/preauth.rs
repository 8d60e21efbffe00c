//! Limits before authentication: once a token exists, a connection that has not shown a valid
//! one is closed after `RUMMY_HELLO_TIMEOUT`, such connections are few
//! (`RUMMY_MAX_ANONYMOUS_CONNECTIONS`) and their messages small (64 KiB); no frame is buffered
//! past `RUMMY_MAX_MESSAGE_BYTES`; connections opened while no token existed close once one is
//! made; and the `Bearer` scheme is read in any case.

use crate::support::process::ServerProcess;
use crate::support::raw::{frame_with, header, Frame, RawSocket};
use crate::support::{TestServer, WAIT};
use pretty_assertions::assert_eq;
use rummy_provider::time::Millis;
use rummy_store::location::Location;
use rummy_store::tokens::{self, NewToken};
use rummy_testkit::RpcClient;
use serde_json::json;
use std::process::Stdio;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The close reason of a connection opened while no token existed, once one is made.
const TOKEN_NOW_REQUIRED: &str =
    "this server now has tokens: reconnect with one (Authorization: Bearer, or rummy/hello {token})";

/// Milliseconds since the epoch.
fn now() -> Millis {
    Millis(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_millis() as i64,
    )
}

/// An admin token made on the database itself, as `rummy token create` makes one (no server
/// involved).
fn made_on_the_database(location: &Location, user: &str) -> String {
    let mut conn = rummy_store::database::open(location).unwrap();
    let new = NewToken {
        user: user.into(),
        admin: true,
        projects: Vec::new(),
        expires_at: None,
    };
    let secret: [u8; 32] = std::array::from_fn(|i| (i as u8) ^ user.len() as u8 ^ 0x5a);
    tokens::create(&mut conn, &new, &secret, now()).unwrap().0
}

/// A server with one admin token (made on its database before any connection), and the token.
async fn with_a_token(adjust: impl FnOnce(&mut rummy::config::Config)) -> (TestServer, String) {
    let server = TestServer::start_with(adjust).await;
    let token = made_on_the_database(&server.database(), "ops");
    (server, token)
}

/// A ping request followed by `pad` spaces (still one JSON value), as text.
fn padded_ping(id: u64, pad: usize) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}{}"#,
        " ".repeat(pad)
    )
}

/// Once a token exists, a connection that shows none within RUMMY_HELLO_TIMEOUT is closed 1008
/// at that time; one that showed a valid token (getProjects {token}, or the upgrade's header)
/// stays open past it.
#[actix_rt::test]
async fn a_connection_that_shows_no_token_in_time_is_closed_1008() {
    let (server, token) = with_a_token(|c| c.access.hello_timeout_ms = 400).await;
    let opened = Instant::now();
    let mut silent = RawSocket::connect(server.port()).await;
    let mut shown = server.client().await;
    shown
        .call("getProjects", json!({ "token": token }))
        .await
        .unwrap();
    let mut bearer = RpcClient::connect_with_headers(
        &server.url(),
        &[("Authorization", &format!("Bearer {token}"))],
    )
    .await
    .unwrap();
    assert_eq!(
        silent.next_frame().await,
        Some(Frame::Close(
            1008,
            "no valid token within 400 ms (RUMMY_HELLO_TIMEOUT)".to_owned()
        ))
    );
    let waited = opened.elapsed();
    assert!(
        waited >= Duration::from_millis(400) && waited < Duration::from_secs(3),
        "{waited:?}"
    );
    assert!(silent.server_hangs_up(Duration::from_secs(2)).await);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(shown.call("ping", json!({})).await.unwrap(), json!({}));
    assert_eq!(bearer.call("ping", json!({})).await.unwrap(), json!({}));
    server.stop().await;
}

/// While no token exists, a connection without one is not anonymous: it is not closed after
/// RUMMY_HELLO_TIMEOUT.
#[actix_rt::test]
async fn without_tokens_a_connection_has_no_hello_timeout() {
    let server = TestServer::start_with(|c| c.access.hello_timeout_ms = 200).await;
    let mut client = server.client().await;
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(client.call("ping", json!({})).await.unwrap(), json!({}));
    server.stop().await;
}

/// Once a token exists, at most RUMMY_MAX_ANONYMOUS_CONNECTIONS connections without one are
/// open: one more is refused HTTP 503 at the upgrade; a connection with a token still gets in,
/// and a place comes back when an anonymous connection shows its token.
#[actix_rt::test]
async fn anonymous_connections_past_the_limit_are_refused_503() {
    let (server, token) = with_a_token(|c| c.access.max_anonymous_connections = 2).await;
    let _first = RawSocket::connect(server.port()).await;
    let mut second = server.client().await;
    let refused = RawSocket::connect_with(server.port(), &[]).await.err();
    assert_eq!(
        refused,
        Some((
            503,
            "the server holds its maximum of 2 connections that have not shown a token \
             (RUMMY_MAX_ANONYMOUS_CONNECTIONS); send Authorization: Bearer <token>, or try again later\n"
                .to_owned()
        ))
    );
    let with_token = RawSocket::connect_with(
        server.port(),
        &[("Authorization", &format!("Bearer {token}"))],
    )
    .await;
    assert!(with_token.is_ok());
    second
        .call("getProjects", json!({ "token": token }))
        .await
        .unwrap();
    let third = RawSocket::connect_with(server.port(), &[]).await;
    assert!(third.is_ok());
    server.stop().await;
}

/// Before it shows a valid token, a connection's frame over 64 KiB is refused at its header
/// (1009); once it has shown one, it may send messages up to RUMMY_MAX_MESSAGE_BYTES.
#[actix_rt::test]
async fn before_a_token_a_frame_over_64_kib_closes_1009() {
    let (server, token) = with_a_token(|_| {}).await;
    let mut anonymous = RawSocket::connect(server.port()).await;
    anonymous
        .send_bytes(&header(0x1, 64 * 1024 + 1, [1, 2, 3, 4]))
        .await;
    assert_eq!(
        anonymous.next_frame().await,
        Some(Frame::Close(
            1009,
            "a frame of 65537 bytes announced; the limit is 65536".to_owned()
        ))
    );
    assert!(anonymous.server_hangs_up(Duration::from_secs(2)).await);

    let mut shown = RawSocket::connect(server.port()).await;
    shown
        .send_text(&format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"getProjects","params":{{"token":"{token}"}}}}"#
        ))
        .await;
    assert_eq!(
        shown.next_text().await,
        r#"{"jsonrpc":"2.0","id":1,"result":[]}"#
    );
    shown.send_text(&padded_ping(2, 100 * 1024)).await;
    assert_eq!(
        shown.next_text().await,
        r#"{"jsonrpc":"2.0","id":2,"result":{}}"#
    );
    server.stop().await;
}

/// A frame announcing more than RUMMY_MAX_MESSAGE_BYTES is refused at its header (1009), though
/// under RUMMY_MAX_FRAME_BYTES; a fragmented message is refused at the header of the fragment
/// that brings it past the limit.
#[actix_rt::test]
async fn a_message_over_the_limit_is_refused_at_its_header() {
    let server = TestServer::start_with(|c| {
        c.limits.max_message_bytes = 1024;
        c.limits.max_frame_bytes = 16 * 1024 * 1024;
    })
    .await;
    let mut whole = RawSocket::connect(server.port()).await;
    whole.send_bytes(&header(0x1, 15 << 20, [1, 2, 3, 4])).await;
    assert_eq!(
        whole.next_frame().await,
        Some(Frame::Close(
            1009,
            "a frame of 15728640 bytes announced; the limit is 1024".to_owned()
        ))
    );
    let mut fragmented = RawSocket::connect(server.port()).await;
    fragmented
        .send_bytes(&frame_with(false, 0, 0x1, true, &[b' '; 600]))
        .await;
    fragmented.send_bytes(&header(0x0, 600, [1, 2, 3, 4])).await;
    assert_eq!(
        fragmented.next_frame().await,
        Some(Frame::Close(
            1009,
            "a message of 1200 bytes announced; the limit is 1024".to_owned()
        ))
    );
    server.stop().await;
}

/// Opens a WebSocket to `port` (with `headers`), sends a header announcing 15 MiB and half of
/// that payload (what the sockets' buffers take, the rest failing once the server hung up);
/// answers whether the server hung up within 10 s.
async fn send_half_frame(port: u16, headers: &[(&str, &str)]) -> bool {
    let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .unwrap();
    let mut request = format!(
        "GET /ws HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
    );
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut bytes = header(0x1, 15 << 20, [9, 8, 7, 6]);
    bytes.resize(bytes.len() + (15 << 19), b'x');
    for chunk in bytes.chunks(64 * 1024) {
        let sent = tokio::time::timeout(Duration::from_secs(10), stream.write_all(chunk)).await;
        if !matches!(sent, Ok(Ok(()))) {
            break;
        }
    }
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    let mut sink = vec![0u8; 64 * 1024];
    loop {
        match tokio::time::timeout_at(deadline, stream.read(&mut sink)).await {
            Err(_) => return false,
            Ok(Ok(0)) | Ok(Err(_)) => return true,
            Ok(Ok(_)) => {}
        }
    }
}

/// The resident memory of process `pid`, in KiB.
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

/// Thirty connections, anonymous and then with a token, each sending a header announcing 15
/// MiB and half of its payload, grow the built server's resident memory by less than 8 MiB:
/// every such frame is refused at its header, nothing of it buffered.
#[actix_rt::test]
async fn thirty_half_frames_of_15_mib_are_never_buffered() {
    let home = tempfile::TempDir::new().unwrap();
    let location = crate::support::database::of_home(home.path());
    let token = made_on_the_database(&location, "ops");
    let server = ServerProcess::start(home.path(), &[], Stdio::null());
    let pid = server.child.id();
    let mut warm = RpcClient::connect(&format!("ws://127.0.0.1:{}/", server.port))
        .await
        .unwrap();
    warm.call("getProjects", json!({ "token": token }))
        .await
        .unwrap();
    let before = rss_kib(pid);
    let bearer = format!("Bearer {token}");
    for headers in [vec![], vec![("Authorization", bearer.as_str())]] {
        let sends = (0..30).map(|_| send_half_frame(server.port, &headers));
        let hung_up = futures_util::future::join_all(sends).await;
        assert_eq!(hung_up, vec![true; 30]);
    }
    let grown = rss_kib(pid).saturating_sub(before);
    println!("server RSS grew by {grown} KiB over 60 half-frames of 15 MiB");
    assert!(grown < 8 * 1024, "grew by {grown} KiB");
    assert_eq!(warm.call("ping", json!({})).await.unwrap(), json!({}));
}

/// A connection opened while no token existed — bound to a project or not — is closed 1008
/// within half a second of the first token being made on the database (as `rummy token
/// create` does, no server involved); a connection with the token is not.
#[actix_rt::test]
async fn connections_opened_before_the_first_token_close_when_one_is_made() {
    let server = TestServer::start().await;
    let mut bound = server.project_client("web").await;
    let mut unbound = server.client().await;
    assert_eq!(unbound.call("ping", json!({})).await.unwrap(), json!({}));
    let made = Instant::now();
    let token = made_on_the_database(&server.database(), "ops");
    for client in [&mut bound, &mut unbound] {
        assert_eq!(
            client.close_reason(WAIT).await,
            Some((1008, TOKEN_NOW_REQUIRED.to_owned()))
        );
        let within = made.elapsed();
        assert!(within < Duration::from_millis(500), "{within:?}");
    }
    let mut holder = RpcClient::connect_with_headers(
        &server.url(),
        &[("Authorization", &format!("Bearer {token}"))],
    )
    .await
    .unwrap();
    holder
        .call("rummy/hello", json!({ "name": "web" }))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(holder.call("ping", json!({})).await.unwrap(), json!({}));
    server.stop().await;
}

/// The owner's connection that makes the first token over the protocol gets its answer — the
/// token — and is then closed 1008 like every connection opened without one.
#[actix_rt::test]
async fn the_connection_that_makes_the_first_token_gets_it_then_closes() {
    let server = TestServer::start().await;
    let mut owner = server.project_client("web").await;
    let made = owner
        .call("token/create", json!({ "user": "ops", "admin": true }))
        .await
        .unwrap();
    assert!(made["token"].as_str().is_some_and(|t| !t.is_empty()));
    assert_eq!(
        owner.close_reason(WAIT).await,
        Some((1008, TOKEN_NOW_REQUIRED.to_owned()))
    );
    server.stop().await;
}

/// `Authorization: BEARER …` and `bearer …` open a connection as `Bearer …` does: the scheme
/// is read in any case.
#[actix_rt::test]
async fn the_bearer_scheme_is_read_in_any_case() {
    let (server, token) = with_a_token(|_| {}).await;
    for scheme in ["BEARER", "bearer", "bEaReR"] {
        let mut client = RpcClient::connect_with_headers(
            &server.url(),
            &[("Authorization", &format!("{scheme} {token}"))],
        )
        .await
        .unwrap();
        assert_eq!(
            client.call("getProjects", json!({})).await.unwrap(),
            json!([]),
            "{scheme}"
        );
    }
    let refused = RawSocket::connect_with(
        server.port(),
        &[("Authorization", &format!("Basic {token}"))],
    )
    .await
    .err();
    assert_eq!(
        refused,
        Some((
            401,
            "unauthorized: the Authorization header must be Bearer <token>\n".to_owned()
        ))
    );
    server.stop().await;
}
