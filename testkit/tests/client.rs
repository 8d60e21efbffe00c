//! Tests of the JSON-RPC client against a tiny scripted WebSocket server on loopback.
#![expect(
    clippy::unwrap_used,
    reason = "a test harness should fail loudly at the first surprise"
)]

use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use rummy_testkit::{CallError, ClientError, RpcClient, RpcError};
use serde_json::{json, Value};
use tokio::net::{TcpListener, TcpStream};
use tokio_tungstenite::tungstenite::handshake::server::{ErrorResponse, Request, Response};
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::Message;

const WAIT: Duration = Duration::from_secs(5);

/// Starts the scripted server and returns its `ws://` URL.
async fn start_server() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    actix_rt::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            actix_rt::spawn(serve(stream));
        }
    });
    format!("ws://{addr}/")
}

fn note(method: &str, params: Value) -> Message {
    Message::Text(json!({"jsonrpc": "2.0", "method": method, "params": params}).to_string())
}

/// Handshake callback: `/private` refuses the upgrade with 401 unless `x-token: secret` is sent.
// The `Result` shape is fixed by tungstenite's `Callback` trait.
#[expect(
    clippy::result_large_err,
    reason = "the signature tungstenite's handshake callback requires"
)]
fn check_token(req: &Request, resp: Response) -> Result<Response, ErrorResponse> {
    let token = req.headers().get("x-token").and_then(|v| v.to_str().ok());
    if req.uri().path() == "/private" && token != Some("secret") {
        let mut refusal = ErrorResponse::new(Some("no token".to_owned()));
        *refusal.status_mut() = 401u16.try_into().unwrap();
        return Err(refusal);
    }
    Ok(resp)
}

/// Per connection: `/private` needs `x-token: secret`. Every request first gets a `tick`
/// notification, then an answer by method: `fail` errors, `hold` is answered only after
/// the next request's answer, `burst` sends extra notifications, `close` closes with 4000.
async fn serve(stream: TcpStream) {
    let Ok(mut ws) = tokio_tungstenite::accept_hdr_async(stream, check_token).await else {
        return;
    };
    let mut held: Option<Value> = None;
    while let Some(Ok(Message::Text(text))) = ws.next().await {
        let Ok(req) = serde_json::from_str::<Value>(&text) else {
            let error = json!({"jsonrpc": "2.0", "id": null,
                "error": {"code": -32700, "message": "parse error"}});
            ws.send(Message::Text(error.to_string())).await.unwrap();
            continue;
        };
        let id = req["id"].clone();
        let method = req["method"].as_str().unwrap_or_default().to_owned();
        ws.send(note("tick", json!({"id": id}))).await.unwrap();
        let answer = match method.as_str() {
            "fail" => json!({"jsonrpc": "2.0", "id": id,
                "error": {"code": -32601, "message": "method not found", "data": "fail"}}),
            "burst" => {
                for n in 1..=3 {
                    ws.send(note("a", json!({"n": n}))).await.unwrap();
                    ws.send(note("b", json!({"n": n}))).await.unwrap();
                }
                json!({"jsonrpc": "2.0", "id": id, "result": "burst done"})
            }
            "close" => {
                let frame = CloseFrame {
                    code: CloseCode::from(4000),
                    reason: "bye".into(),
                };
                ws.close(Some(frame)).await.unwrap();
                continue;
            }
            _ => json!({"jsonrpc": "2.0", "id": id,
                "result": {"method": method, "params": req["params"]}}),
        };
        if method == "hold" {
            held = Some(answer);
            continue;
        }
        ws.send(Message::Text(answer.to_string())).await.unwrap();
        if let Some(earlier) = held.take() {
            ws.send(Message::Text(earlier.to_string())).await.unwrap();
        }
    }
}

/// `call` returns the matching result and buffers the notification that came first.
#[actix_rt::test]
async fn call_returns_result_and_buffers_notifications() {
    let mut c = RpcClient::connect(&start_server().await).await.unwrap();
    let got = c.call("echo", json!({"x": 1})).await.unwrap();
    assert_eq!(got, json!({"method": "echo", "params": {"x": 1}}));
    let got = c.call("echo", json!([2])).await.unwrap();
    assert_eq!(got["params"], json!([2]));
    let buffered = c.drain_notifications();
    let ids: Vec<&Value> = buffered.iter().map(|n| &n["params"]["id"]).collect();
    assert_eq!(ids, [&json!(1), &json!(2)]);
    assert!(c.drain_notifications().is_empty());
    c.close().await;
}

/// Responses arriving out of order still reach the call with the matching id.
#[actix_rt::test]
async fn responses_are_matched_by_id() {
    let mut c = RpcClient::connect(&start_server().await).await.unwrap();
    let first = c.send_request("hold", json!({"n": 1})).await.unwrap();
    let second = c.send_request("echo", json!({"n": 2})).await.unwrap();
    assert_ne!(first, second);
    let got = c.response_for(first).await.unwrap();
    assert_eq!(got["params"]["n"], 1);
    let got = c.response_for(second).await.unwrap();
    assert_eq!(got["params"]["n"], 2);
}

/// An error response comes back as `CallError::Rpc` and through `call_err` as a plain code.
#[actix_rt::test]
async fn rpc_errors_are_easy_to_assert() {
    let mut c = RpcClient::connect(&start_server().await).await.unwrap();
    let err = c.call("fail", json!({})).await.unwrap_err();
    assert_eq!(err.code(), Some(-32601));
    let err = c.call_err("fail", json!({})).await;
    assert_eq!(err.code, -32601);
    assert_eq!(err.message, "method not found");
    assert_eq!(err.data, Some(json!("fail")));
    let err = c.call_err("echo", json!({})).await;
    assert_eq!(err.code, rummy_testkit::client::UNEXPECTED_SUCCESS);
}

/// `next_notification` picks by method and leaves other methods buffered in order.
#[actix_rt::test]
async fn notifications_are_picked_by_method() {
    let mut c = RpcClient::connect(&start_server().await).await.unwrap();
    assert_eq!(c.call("burst", json!({})).await.unwrap(), "burst done");
    assert_eq!(
        c.next_notification("b", WAIT).await.unwrap(),
        json!({"n": 1})
    );
    assert_eq!(
        c.next_notification("a", WAIT).await.unwrap(),
        json!({"n": 1})
    );
    assert_eq!(
        c.next_notification("a", WAIT).await.unwrap(),
        json!({"n": 2})
    );
    let left: Vec<Value> = c
        .drain_notifications()
        .into_iter()
        .map(|n| json!([n["method"], n["params"]]))
        .collect();
    let want = [
        json!(["tick", {"id": 1}]),
        json!(["b", {"n": 2}]),
        json!(["a", {"n": 3}]),
        json!(["b", {"n": 3}]),
    ];
    assert_eq!(left, want);
}

/// `next_any_notification` takes notifications of every method in arrival order.
#[actix_rt::test]
async fn any_notification_comes_in_arrival_order() {
    let mut c = RpcClient::connect(&start_server().await).await.unwrap();
    assert_eq!(c.call("burst", json!({})).await.unwrap(), "burst done");
    let mut seen = Vec::new();
    for _ in 0..7 {
        let n = c.next_any_notification(WAIT).await.unwrap();
        seen.push(json!([n["method"], n["params"]]));
    }
    let want = [
        json!(["tick", {"id": 1}]),
        json!(["a", {"n": 1}]),
        json!(["b", {"n": 1}]),
        json!(["a", {"n": 2}]),
        json!(["b", {"n": 2}]),
        json!(["a", {"n": 3}]),
        json!(["b", {"n": 3}]),
    ];
    assert_eq!(seen, want);
    assert!(c.drain_notifications().is_empty());
}

/// `wait_for_notification` skips (consumes) same-method notifications failing the predicate.
#[actix_rt::test]
async fn wait_for_notification_consumes_non_matching() {
    let mut c = RpcClient::connect(&start_server().await).await.unwrap();
    let id = c.send_request("burst", json!({})).await.unwrap();
    let got = c
        .wait_for_notification("a", WAIT, |p| p["n"] == 2)
        .await
        .unwrap();
    assert_eq!(got, json!({"n": 2}));
    assert_eq!(
        c.next_notification("a", WAIT).await.unwrap(),
        json!({"n": 3})
    );
    assert_eq!(
        c.next_notification("b", WAIT).await.unwrap(),
        json!({"n": 1})
    );
    assert_eq!(c.response_for(id).await.unwrap(), "burst done");
}

/// `expect_no_notification` is false for a buffered one and true for a silent window.
#[actix_rt::test]
async fn expect_no_notification_window() {
    let mut c = RpcClient::connect(&start_server().await).await.unwrap();
    c.call("echo", json!({})).await.unwrap();
    assert!(!c.expect_no_notification("tick", Duration::ZERO).await);
    assert!(
        c.expect_no_notification("never", Duration::from_millis(100))
            .await
    );
    assert_eq!(c.drain_notifications().len(), 1, "nothing was consumed");
}

/// Timeouts surface as `ClientError::Timeout` for waits and as a synthetic code for calls.
#[actix_rt::test]
async fn timeouts_are_reported() {
    let mut c = RpcClient::connect(&start_server().await).await.unwrap();
    let err = c
        .next_notification("never", Duration::from_millis(50))
        .await;
    assert_eq!(err, Err(ClientError::Timeout));
    c.set_timeout(Duration::from_millis(50));
    let err = c.call("hold", json!({})).await.unwrap_err();
    assert_eq!(err, CallError::Client(ClientError::Timeout));
    assert_eq!(
        c.call_err("hold", json!({})).await.code,
        RpcError::CLIENT_FAILURE
    );
}

/// Raw malformed text gets the server's parse error back through `next_response`.
#[actix_rt::test]
async fn raw_text_and_next_response() {
    let mut c = RpcClient::connect(&start_server().await).await.unwrap();
    c.send_text("{not json").await.unwrap();
    let got = c.next_response().await.unwrap();
    assert_eq!(got["id"], Value::Null);
    assert_eq!(got["error"]["code"], -32700);
}

/// `close_reason` reports the server's close code and reason; later calls fail as closed.
#[actix_rt::test]
async fn close_reason_reports_code() {
    let mut c = RpcClient::connect(&start_server().await).await.unwrap();
    c.send_request("close", json!({})).await.unwrap();
    assert_eq!(c.close_reason(WAIT).await, Some((4000, "bye".to_owned())));
    let err = c.call("echo", json!({})).await.unwrap_err();
    assert!(
        matches!(err, CallError::Client(ClientError::Closed(_))),
        "{err:?}"
    );
}

/// Upgrade headers are sent, and a refused upgrade reports its HTTP status.
#[actix_rt::test]
async fn connect_with_headers_and_rejection() {
    let url = format!("{}private", start_server().await);
    let err = RpcClient::connect(&url).await.unwrap_err();
    assert!(
        matches!(err, ClientError::Rejected { status: 401, .. }),
        "{err:?}"
    );
    let mut c = RpcClient::connect_with_headers(&url, &[("x-token", "secret")])
        .await
        .unwrap();
    assert_eq!(c.call("echo", json!(1)).await.unwrap()["params"], 1);
}
