//! Body filters over hostile bodies: a 20,000-deep XML body with the XPath filter `//a` (which
//! once overflowed a thread's stack and took the server down) is refused for that call or that
//! command alone — a client's `getEntries {bodyFilter}`, a client's `get` with a filter, the
//! model's `<get path="…">//a</get>` — and the server goes on serving.

use crate::support::{scheme_entries, start_run, wait_status, TestServer};
use pretty_assertions::assert_eq;
use rummy_testkit::{Reply, RpcClient};
use serde_json::{json, Value};

/// Nesting far past the bound: 140 KB of `<a>` that overflowed a debug build's stack.
const DEEP: usize = 20_000;

/// What a client is told when a filter meets a body nested too deep.
const TOO_DEEP: &str = "invalid params: body filter: body nested deeper than 256 levels";

/// `depth` nested `<a>` elements around `x`.
fn nested_xml(depth: usize) -> String {
    format!("{}x{}", "<a>".repeat(depth), "</a>".repeat(depth))
}

/// A client on project `p` with a finished run `r` holding `https://deep.example/a.xml`,
/// nested [`DEEP`] levels, and `https://flat.example/b.xml`, a flat document.
async fn run_with_deep_entry(server: &TestServer) -> RpcClient {
    server
        .provider
        .set_fallback(Reply::content("<update status=\"200\">ok</update>"));
    let mut c = server.project_client("p").await;
    start_run(&mut c, "run://r", "start").await;
    wait_status(&mut c, "r", 200).await;
    for (path, body) in [
        ("https://deep.example/a.xml", nested_xml(DEEP)),
        (
            "https://flat.example/b.xml",
            "<b><a>flat</a></b>".to_owned(),
        ),
    ] {
        let written = c
            .call("set", json!({ "run": "r", "path": path, "body": body }))
            .await
            .unwrap();
        assert_eq!(written["ok"], json!(true));
    }
    c
}

/// The server still answers: the run is listed.
async fn still_serves(c: &mut RpcClient) {
    let runs = c.call("getRuns", json!({})).await.unwrap();
    assert_eq!(runs.as_array().map(Vec::len), Some(1), "{runs}");
}

/// `getEntries {bodyFilter: "//a"}` over a 20,000-deep body is an error for that call; the
/// same filter over the flat entries alone, and the next call, are served.
#[actix_rt::test]
async fn get_entries_refuses_a_deep_body() {
    let server = TestServer::start().await;
    let mut c = run_with_deep_entry(&server).await;
    let err = c
        .call_err("getEntries", json!({ "run": "r", "bodyFilter": "//a" }))
        .await;
    assert_eq!((err.code, err.message.as_str()), (-32602, TOO_DEEP));
    let flat = c
        .call(
            "getEntries",
            json!({ "run": "r", "pattern": "https://flat.example/*", "bodyFilter": "//a" }),
        )
        .await
        .unwrap();
    let paths: Vec<Value> = flat
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["path"].clone())
        .collect();
    assert_eq!(paths, vec![json!("https://flat.example/b.xml")]);
    still_serves(&mut c).await;
    server.stop().await;
}

/// A client's `get` (and `set` on every match) with the filter `//a` over a 20,000-deep body
/// is an error for that call and changes nothing; the server answers the next call.
#[actix_rt::test]
async fn get_with_a_filter_refuses_a_deep_body() {
    let server = TestServer::start().await;
    let mut c = run_with_deep_entry(&server).await;
    let err = c
        .call_err(
            "get",
            json!({ "run": "r", "path": "https://*", "bodyFilter": "//a", "visibility": "archived" }),
        )
        .await;
    assert_eq!((err.code, err.message.as_str()), (-32602, TOO_DEEP));
    let err = c
        .call_err(
            "set",
            json!({ "run": "r", "path": "https://*", "bodyFilter": "//a", "visibility": "archived" }),
        )
        .await;
    assert_eq!((err.code, err.message.as_str()), (-32602, TOO_DEEP));
    let visibilities: Vec<(Value, Value)> = scheme_entries(&mut c, "r", "https")
        .await
        .iter()
        .map(|e| (e["path"].clone(), e["visibility"].clone()))
        .collect();
    assert_eq!(
        visibilities,
        vec![
            (json!("https://deep.example/a.xml"), json!("visible")),
            (json!("https://flat.example/b.xml"), json!("visible")),
        ]
    );
    still_serves(&mut c).await;
    server.stop().await;
}

/// The model's `<get path="deep.xml">//a</get>` on a 20,000-deep project file fails that
/// command with the refusal; the run goes on to its next turn and the server stays up.
#[actix_rt::test]
async fn model_get_with_a_filter_refuses_a_deep_file() {
    let server = TestServer::start().await;
    std::fs::write(
        std::path::Path::new(&server.project_root("p")).join("deep.xml"),
        nested_xml(DEEP),
    )
    .unwrap();
    server.provider.push(Reply::content(
        "<get path=\"deep.xml\">//a</get>\n<update status=\"102\">reading</update>",
    ));
    server
        .provider
        .push(Reply::content("<update status=\"200\">done</update>"));
    let mut c = server.project_client("p").await;
    start_run(&mut c, "run://r", "Read deep.xml").await;
    wait_status(&mut c, "r", 200).await;
    let results: Vec<(Value, Value, Value)> = scheme_entries(&mut c, "r", "get")
        .await
        .iter()
        .map(|e| (e["state"].clone(), e["outcome"].clone(), e["body"].clone()))
        .collect();
    assert_eq!(
        results,
        vec![(
            json!("failed"),
            json!("validation"),
            json!("body filter: body nested deeper than 256 levels")
        )]
    );
    assert_eq!(server.provider.chat_requests().len(), 2);
    still_serves(&mut c).await;
    server.stop().await;
}
