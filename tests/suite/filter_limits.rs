//! Body filters over hostile bodies: a 20,000-deep XML body with the XPath filter `//a` (which
//! once overflowed a thread's stack and took the server down) is refused for that call or that
//! command alone — a client's `getEntries {bodyFilter}`, a client's `get` with a filter, the
//! model's `<get path="…">//a</get>` — and the server goes on serving. A model's filter that
//! takes seconds is judged off the store's writer: another project's run goes on meanwhile.

use crate::support::{entry, scheme_entries, start_run, wait_status, TestServer, WAIT};
use pretty_assertions::assert_eq;
use rummy_testkit::{Reply, RpcClient};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

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

/// The model's `<get path="*.xml">//a</get>` over a 20,000-deep project file fails that
/// command with the refusal (judged off the writer, it reaches the model as the tool's error);
/// the run goes on to its next turn and the server stays up.
#[actix_rt::test]
async fn model_get_with_a_filter_refuses_a_deep_file() {
    let server = TestServer::start().await;
    std::fs::write(
        std::path::Path::new(&server.project_root("p")).join("deep.xml"),
        nested_xml(DEEP),
    )
    .unwrap();
    server.provider.push(Reply::content(
        "<get path=\"*.xml\">//a</get>\n<update status=\"102\">reading</update>",
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

/// Elements of the wide document: its filter takes about 4 s in a debug build here, the other
/// run about 0.2 s.
const WIDE: usize = 1500;

/// `count` sibling `<a>` elements, each with its own text: what `//a[not(. = //b)]` reads in
/// time that grows with the square of `count` (every `<a>` walks the whole document again).
fn wide_xml(count: usize) -> String {
    let items: String = (0..count).map(|i| format!("<a>item {i}</a>")).collect();
    format!("<doc>{items}</doc>")
}

/// The model's `<get path="*.xml">//a[not(. = //b)]</get>` over a wide document takes seconds; while
/// it runs, a run of another project starts, writes its turn and ends (the filter is judged on
/// the blocking pool, not on the store's writer, which every project's writes go through). The
/// filter's run then gets its `get` result and ends.
#[actix_rt::test]
async fn a_slow_model_filter_does_not_stall_another_projects_run() {
    let server = TestServer::start().await;
    std::fs::write(
        std::path::Path::new(&server.project_root("slow")).join("wide.xml"),
        wide_xml(WIDE),
    )
    .unwrap();
    server.provider.push(Reply::content(
        "<get path=\"*.xml\">//a[not(. = //b)]</get>\n<update status=\"102\">reading</update>",
    ));
    server
        .provider
        .set_fallback(Reply::content("<update status=\"200\">done</update>"));
    let mut slow = server.project_client("slow").await;
    let mut other = server.project_client("other").await;
    let began = Instant::now();
    start_run(&mut slow, "run://s", "Read the XML").await;
    server.provider.wait_for_chat_requests(1, WAIT).await;
    // The reply is parsed and its filter under way.
    actix_rt::time::sleep(Duration::from_millis(300)).await;

    let started = Instant::now();
    start_run(&mut other, "run://o", "Meanwhile").await;
    wait_status(&mut other, "o", 200).await;
    let other_took = started.elapsed();
    let requests = server.provider.chat_requests().len();

    let s = wait_status(&mut slow, "s", 200).await;
    eprintln!(
        "wide.xml of {WIDE}: the filter's run took {:?}; the other run {other_took:?}",
        began.elapsed()
    );
    assert_eq!(
        requests, 2,
        "the other run ended before the filter's run got its result (its second model call)"
    );
    assert_eq!(s["summary"], json!("done"));
    let tokens = entry(&mut slow, "s", "wide.xml").await.unwrap()["tokens"].clone();
    let results: Vec<(Value, Value)> = scheme_entries(&mut slow, "s", "get")
        .await
        .iter()
        .map(|e| (e["state"].clone(), e["body"].clone()))
        .collect();
    assert_eq!(
        results,
        vec![(
            json!("resolved"),
            json!(format!(
                "get path=\"*.xml\" body=\"//a[not(. = //b)]\": 1 matched ({tokens} tokens)\nwide.xml ({tokens})"
            ))
        )]
    );
    server.stop().await;
}
