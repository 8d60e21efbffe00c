//! The client primitives on entries: set (write, append, state, visibility, attribute merge, pattern bulk), get, rm, cp, mv, update; writer tiers; isolation.

use crate::support::{entry, start_run, wait_status, TestServer};
use pretty_assertions::assert_eq;
use rummy_testkit::{Reply, RpcClient};
use serde_json::{json, Value};

async fn ready(server: &TestServer, project: &str, alias: &str) -> RpcClient {
    server
        .provider
        .set_fallback(Reply::content("<update status=\"200\">ok</update>"));
    let mut client = server.project_client(project).await;
    start_run(&mut client, &format!("run://{alias}"), "start").await;
    wait_status(&mut client, alias, 200).await;
    client
}

/// set writes, appends, changes state and visibility, and merges attributes; getEntries shows each change.
#[actix_rt::test]
async fn set_writes_appends_and_changes() {
    let server = TestServer::start().await;
    let mut c = ready(&server, "p", "r").await;
    let written = c.call("set", json!({ "run": "r", "path": "Known://Team Notes", "body": "alpha", "attributes": { "summary": "team" } })).await.unwrap();
    assert_eq!(
        written,
        json!({ "ok": true, "path": "known://Team%20Notes" })
    );
    c.call(
        "set",
        json!({ "run": "r", "path": "known://Team%20Notes", "body": " beta", "append": true }),
    )
    .await
    .unwrap();
    let e = entry(&mut c, "r", "known://Team%20Notes").await.unwrap();
    assert_eq!(
        (
            e["body"].clone(),
            e["attributes"].clone(),
            e["tokens"].clone()
        ),
        (json!("alpha beta"), json!({ "summary": "team" }), json!(5))
    );
    c.call("set", json!({ "run": "r", "path": "known://Team%20Notes", "visibility": "demoted", "attributes": { "tag": "x", "summary": null } })).await.unwrap();
    let e = entry(&mut c, "r", "known://Team%20Notes").await.unwrap();
    assert_eq!(
        (
            e["visibility"].clone(),
            e["attributes"].clone(),
            e["body"].clone()
        ),
        (
            json!("summarized"),
            json!({ "tag": "x" }),
            json!("alpha beta")
        )
    );
    c.call("set", json!({ "run": "r", "path": "known://Team%20Notes", "state": "failed", "outcome": "conflict" })).await.unwrap();
    let e = entry(&mut c, "r", "known://Team%20Notes").await.unwrap();
    assert_eq!(
        (
            e["state"].clone(),
            e["outcome"].clone(),
            e["status"].clone()
        ),
        (json!("failed"), json!("conflict"), json!(409))
    );
    assert_eq!(
        c.call_err(
            "set",
            json!({ "run": "r", "path": "known://nope", "visibility": "visible" })
        )
        .await
        .code,
        -32004
    );
    assert_eq!(
        c.call_err("set", json!({ "run": "r", "path": "known://x" }))
            .await
            .code,
        -32602
    );
    assert_eq!(
        c.call_err(
            "set",
            json!({ "run": "r", "path": "known://x", "state": "done" })
        )
        .await
        .code,
        -32602
    );
    assert_eq!(
        c.call_err("set", json!({ "path": "known://x", "body": "no run" }))
            .await
            .code,
        -32602
    );
    server.stop().await;
}

/// Every kind of write is checked against the scheme's writer tiers, with an error naming writer and scheme.
#[actix_rt::test]
async fn writer_tiers_refuse_clients() {
    let server = TestServer::start().await;
    let mut c = ready(&server, "p", "r").await;
    let err = c
        .call_err(
            "set",
            json!({ "run": "r", "path": "prompt://9", "body": "x" }),
        )
        .await;
    assert_eq!((err.code, err.message.as_str()), (-32003, "permission denied: writer \"client\" may not write scheme \"prompt\" (allowed: system, plugin)"));
    assert_eq!(err.data.unwrap()["kind"], json!("permission"));
    let err = c
        .call_err(
            "set",
            json!({ "run": "r", "path": "system://1", "body": "x" }),
        )
        .await;
    assert_eq!(err.code, -32003);
    let err = c
        .call_err(
            "set",
            json!({ "run": "r", "path": "prompt://1", "visibility": "archived" }),
        )
        .await;
    assert_eq!(err.code, -32003, "body-less changes are checked too");
    let err = c
        .call_err(
            "set",
            json!({ "run": "r", "path": "prompt://1", "attributes": { "x": 1 } }),
        )
        .await;
    assert_eq!(err.code, -32003);
    let err = c
        .call_err("rm", json!({ "run": "r", "path": "prompt://1" }))
        .await;
    assert_eq!(err.code, -32003);
    assert_eq!(
        c.call_err(
            "set",
            json!({ "run": "r", "path": "nosuch://x", "body": "x" })
        )
        .await
        .code,
        -32602
    );
    assert_eq!(
        c.call_err(
            "set",
            json!({ "run": "r", "path": "../etc/passwd", "body": "x" })
        )
        .await
        .code,
        -32602
    );
    assert_eq!(
        c.call_err(
            "set",
            json!({ "run": "r", "path": "/etc/passwd", "body": "x" })
        )
        .await
        .code,
        -32602
    );
    server.stop().await;
}

/// get promotes by pattern and body filter; set with pattern changes every match; rm removes matches from the run's view.
#[actix_rt::test]
async fn pattern_operations() {
    let server = TestServer::start().await;
    let mut c = ready(&server, "p", "r").await;
    for (path, body) in [
        ("known://people/ada", "math"),
        ("known://people/alan", "math, codes"),
        ("known://places/paris", "city"),
    ] {
        c.call(
            "set",
            json!({ "run": "r", "path": path, "body": body, "visibility": "summarized" }),
        )
        .await
        .unwrap();
    }
    let got = c
        .call("get", json!({ "run": "r", "path": "known://people/*" }))
        .await
        .unwrap();
    assert_eq!(got, json!({ "ok": true, "count": 2 }));
    assert_eq!(
        entry(&mut c, "r", "known://people/ada").await.unwrap()["visibility"],
        json!("visible")
    );
    assert_eq!(
        entry(&mut c, "r", "known://places/paris").await.unwrap()["visibility"],
        json!("summarized")
    );
    let filtered = c.call("get", json!({ "run": "r", "path": "known://*", "bodyFilter": "codes", "visibility": "archived" })).await.unwrap();
    assert_eq!(filtered["count"], json!(1));
    let bulk = c.call("set", json!({ "run": "r", "path": "known://people/*", "pattern": true, "visibility": "summarized" })).await.unwrap();
    assert_eq!(bulk["count"], json!(2));
    let removed = c
        .call("rm", json!({ "run": "r", "path": "known://people/*" }))
        .await
        .unwrap();
    assert_eq!(
        removed["paths"],
        json!(["known://people/ada", "known://people/alan"])
    );
    assert_eq!(entry(&mut c, "r", "known://people/ada").await, None);
    assert_eq!(
        c.call("rm", json!({ "run": "r", "path": "known://none/*" }))
            .await
            .unwrap()["paths"],
        json!([])
    );
    server.stop().await;
}

/// cp copies, mv moves; mv run://old run://new renames the run.
#[actix_rt::test]
async fn copy_move_rename_and_update() {
    let server = TestServer::start().await;
    let mut c = ready(&server, "p", "r").await;
    c.call(
        "set",
        json!({ "run": "r", "path": "known://a", "body": "A", "attributes": { "summary": "s" } }),
    )
    .await
    .unwrap();
    assert_eq!(
        c.call(
            "cp",
            json!({ "run": "r", "from": "known://a", "to": "known://b" })
        )
        .await
        .unwrap()["path"],
        json!("known://b")
    );
    c.call(
        "mv",
        json!({ "run": "r", "from": "known://a", "to": "known://c", "visibility": "summarized" }),
    )
    .await
    .unwrap();
    assert_eq!(entry(&mut c, "r", "known://a").await, None);
    let moved = entry(&mut c, "r", "known://c").await.unwrap();
    assert_eq!(
        (
            moved["body"].clone(),
            moved["visibility"].clone(),
            moved["attributes"].clone()
        ),
        (json!("A"), json!("summarized"), json!({ "summary": "s" }))
    );
    assert_eq!(
        c.call_err(
            "cp",
            json!({ "run": "r", "from": "known://gone", "to": "known://x" })
        )
        .await
        .code,
        -32004
    );

    let update = c
        .call(
            "update",
            json!({ "run": "r", "body": "Client says done", "status": 200 }),
        )
        .await
        .unwrap();
    assert_eq!(update["path"], json!("update://turn_1_2"));
    assert_eq!(
        c.call_err("update", json!({ "run": "r", "body": "x", "status": 500 }))
            .await
            .code,
        -32602
    );

    c.call(
        "mv",
        json!({ "run": "r", "from": "run://r", "to": "run://renamed" }),
    )
    .await
    .unwrap();
    assert_eq!(
        c.call_err("getRun", json!({ "run": "r" })).await.code,
        -32004
    );
    assert_eq!(
        c.call("getRun", json!({ "run": "renamed" })).await.unwrap()["run"],
        json!("renamed")
    );
    c.call("set", json!({ "path": "run://renamed", "body": "again" }))
        .await
        .unwrap();
    wait_status(&mut c, "renamed", 200).await;
    let other = ready(&server, "p", "taken").await;
    drop(other);
    assert_eq!(
        c.call_err(
            "mv",
            json!({ "run": "renamed", "from": "run://renamed", "to": "run://taken" })
        )
        .await
        .code,
        -32005
    );
    server.stop().await;
}

/// A client of one project can neither read nor write another project's runs and entries.
#[actix_rt::test]
async fn projects_are_isolated() {
    let server = TestServer::start().await;
    let mut a = ready(&server, "alpha", "mine").await;
    a.call(
        "set",
        json!({ "run": "mine", "path": "known://secret", "body": "alpha only" }),
    )
    .await
    .unwrap();
    let mut b = server.project_client("beta").await;
    for (method, params) in [
        ("getEntries", json!({ "run": "mine" })),
        ("getRun", json!({ "run": "mine" })),
        (
            "set",
            json!({ "run": "mine", "path": "known://secret", "body": "overwritten" }),
        ),
        ("get", json!({ "run": "mine", "path": "known://*" })),
        ("rm", json!({ "run": "mine", "path": "known://secret" })),
        ("set", json!({ "path": "run://mine", "state": "cancelled" })),
    ] {
        assert_eq!(
            b.call_err(method, params.clone()).await.code,
            -32004,
            "{method} {params}"
        );
    }
    assert_eq!(
        entry(&mut a, "mine", "known://secret").await.unwrap()["body"],
        json!("alpha only")
    );
    server.stop().await;
}

/// A thousand simultaneous server-named starts get a thousand distinct aliases.
#[actix_rt::test]
async fn thousand_simultaneous_starts_never_collide() {
    let server = TestServer::start().await;
    server
        .provider
        .set_fallback(Reply::content("<update status=\"200\">ok</update>"));
    let mut c = server.project_client("many").await;
    let mut ids = Vec::new();
    for _ in 0..1000 {
        ids.push(
            c.send_request(
                "set",
                json!({ "path": "run://", "body": "hi", "attributes": { "model": "fast" } }),
            )
            .await
            .unwrap(),
        );
    }
    let mut aliases = Vec::new();
    for id in ids {
        aliases.push(
            c.response_for(id).await.unwrap()["alias"]
                .as_str()
                .unwrap()
                .to_owned(),
        );
    }
    aliases.sort();
    aliases.dedup();
    assert_eq!(aliases.len(), 1000);
    let runs = c.call("getRuns", json!({ "limit": 1000 })).await.unwrap();
    assert_eq!(runs.as_array().map(Vec::len), Some(1000));
    server.stop().await;
}

/// getEntries filters by pattern and body filter, pages with limit/offset, and returns bodies only with withBody.
#[actix_rt::test]
async fn get_entries_filters_and_pages() {
    let server = TestServer::start().await;
    let mut c = ready(&server, "p", "r").await;
    for (path, body) in [
        ("known://people/ada", "math"),
        ("known://people/alan", "codes"),
        ("known://places/paris", "city"),
    ] {
        c.call("set", json!({ "run": "r", "path": path, "body": body }))
            .await
            .unwrap();
    }
    let paths = |v: Value| -> Vec<String> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|e| e["path"].as_str().unwrap().to_owned())
            .collect()
    };
    let people = c
        .call(
            "getEntries",
            json!({ "run": "r", "pattern": "known://people/*" }),
        )
        .await
        .unwrap();
    assert_eq!(
        paths(people),
        vec!["known://people/ada", "known://people/alan"]
    );
    let codes = c
        .call(
            "getEntries",
            json!({ "run": "r", "pattern": "known://*", "bodyFilter": "codes" }),
        )
        .await
        .unwrap();
    assert_eq!(paths(codes), vec!["known://people/alan"]);
    let page = c
        .call(
            "getEntries",
            json!({ "run": "r", "scheme": "known", "limit": 1, "offset": 1 }),
        )
        .await
        .unwrap();
    assert_eq!(paths(page.clone()), vec!["known://people/alan"]);
    assert_eq!(page[0].get("body"), None);
    server.stop().await;
}

/// A turn's audit trail is exactly what the model was sent — `system://N` and `user://N` equal
/// the request's messages byte for byte — on every turn of a long loop over a project whose
/// context is mostly the same from turn to turn (stored as deltas, read back whole).
#[actix_rt::test]
async fn the_audit_trail_is_exactly_what_each_turn_sent() {
    let server = TestServer::start().await;
    let root = server.project_root("trail");
    for i in 0..40 {
        std::fs::write(
            std::path::Path::new(&root).join(format!("notes_{i:02}.md")),
            format!("# Note {i}\nThe café on floor {i} serves 🦀 on Fridays.\n").repeat(3),
        )
        .unwrap();
    }
    for turn in 1..=12 {
        let status = if turn == 12 { 200 } else { 102 };
        server.provider.push(Reply::content(format!(
            "<set path=\"known://step_{turn}\">step {turn}: naïve résumé checked</set>\n<update status=\"{status}\">step {turn}</update>"
        )));
    }
    let mut client = server.project_client("trail").await;
    start_run(&mut client, "run://long", "Walk the notes").await;
    wait_status(&mut client, "long", 200).await;

    let requests = server.provider.chat_requests();
    assert_eq!(requests.len(), 12);
    for (i, request) in requests.iter().enumerate() {
        let turn = i + 1;
        for (k, scheme) in ["system", "user"].into_iter().enumerate() {
            let sent = request.body["messages"][k]["content"].clone();
            let kept = entry(&mut client, "long", &format!("{scheme}://{turn}"))
                .await
                .unwrap();
            assert_eq!(kept["body"], sent, "{scheme}://{turn}");
        }
    }
    server.stop().await;
}
