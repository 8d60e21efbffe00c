//! The JSON-RPC surface: hello, error codes, discover, models, and project isolation of notifications.

use crate::support::{start_run, wait_status, TestServer, WAIT};
use pretty_assertions::assert_eq;
use rummy_testkit::Reply;
use serde_json::json;
use std::time::Duration;

/// Malformed JSON is answered -32700 with id null and the connection stays usable.
#[actix_rt::test]
async fn malformed_json_keeps_the_connection() {
    let server = TestServer::start().await;
    let mut client = server.client().await;
    client
        .send_text("{\"jsonrpc\": \"2.0\", \"id\": 1, ")
        .await
        .unwrap();
    let answer = client.next_response().await.unwrap();
    assert_eq!(answer["id"], json!(null));
    assert_eq!(answer["error"]["code"], json!(-32700));
    assert_eq!(answer["error"]["data"]["kind"], json!("parse_error"));
    assert_eq!(client.call("ping", json!({})).await.unwrap(), json!({}));
    server.stop().await;
}

/// A message that is JSON but not a request is -32600; a batch is answered per request.
#[actix_rt::test]
async fn invalid_requests_and_batches() {
    let server = TestServer::start().await;
    let mut client = server.client().await;
    client
        .send_text("{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":7}")
        .await
        .unwrap();
    let answer = client.next_response().await.unwrap();
    assert_eq!(
        (answer["id"].clone(), answer["error"]["code"].clone()),
        (json!(5), json!(-32600))
    );
    client
        .send_text("[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"},{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"nope\"}]")
        .await
        .unwrap();
    let batch = client.next_response().await.unwrap();
    assert_eq!(
        batch,
        json!([
            {"jsonrpc":"2.0","id":1,"result":{}},
            {"jsonrpc":"2.0","id":2,"error":{"code":-32601,"message":"method not found: nope","data":{"kind":"method_not_found"}}}
        ])
    );
    server.stop().await;
}

/// Unknown methods are -32601 before and after hello.
#[actix_rt::test]
async fn unknown_method_is_32601() {
    let server = TestServer::start().await;
    let mut client = server.client().await;
    assert_eq!(client.call_err("run/explode", json!({})).await.code, -32601);
    client
        .call(
            "rummy/hello",
            json!({ "name": "demo", "projectRoot": server.project_root("demo") }),
        )
        .await
        .unwrap();
    assert_eq!(client.call_err("run/explode", json!({})).await.code, -32601);
    server.stop().await;
}

/// Before hello only ping, discover, rummy/hello, the server's own lists (getProjects,
/// getModels, getRoutes) and the admin's methods (addModel, removeModel, tokens) are served; the rest is -32000.
#[actix_rt::test]
async fn methods_before_hello_are_32000() {
    let server = TestServer::start().await;
    let mut client = server.client().await;
    assert_eq!(client.call("ping", json!({})).await.unwrap(), json!({}));
    assert!(client.call("discover", json!({})).await.is_ok());
    assert!(client.call("getModels", json!({})).await.is_ok());
    assert!(client.call("getRoutes", json!({})).await.is_ok());
    for method in ["getRuns", "getRun", "getEntries", "set"] {
        let err = client.call_err(method, json!({})).await;
        assert_eq!(err.code, -32000, "{method}");
        assert_eq!(err.data.unwrap()["kind"], json!("not_initialized"));
    }
    server.stop().await;
}

/// Bad params are -32602 and the message names the param.
#[actix_rt::test]
async fn bad_params_name_the_param() {
    let server = TestServer::start().await;
    let mut client = server.client().await;
    let err = client
        .call_err(
            "rummy/hello",
            json!({ "projectRoot": server.project_root("demo") }),
        )
        .await;
    assert_eq!(err.code, -32602);
    assert_eq!(err.message, "invalid params: name: missing field `name`");
    let err = client
        .call_err(
            "rummy/hello",
            json!({ "name": "demo", "projectRoot": "relative/dir" }),
        )
        .await;
    assert_eq!(
        (err.code, err.message.as_str()),
        (
            -32602,
            "invalid params: projectRoot: must be an absolute path"
        )
    );
    client
        .call(
            "rummy/hello",
            json!({ "name": "demo", "projectRoot": server.project_root("demo") }),
        )
        .await
        .unwrap();
    let err = client.call_err("getRun", json!({ "run": 7 })).await;
    assert_eq!(
        (err.code, err.message.as_str()),
        (
            -32602,
            "invalid params: run: invalid type: integer `7`, expected a string"
        )
    );
    let err = client
        .call_err(
            "set",
            json!({ "path": "run://x", "body": "hi", "attributes": {} }),
        )
        .await;
    assert_eq!(
        (err.code, err.message.as_str()),
        (
            -32602,
            "invalid params: attributes.model: required to start a run"
        )
    );
    let err = client.call_err("set", json!({ "path": "run://x", "body": "hi", "attributes": { "model": "fast", "temperature": "hot" } })).await;
    assert_eq!(err.code, -32602);
    assert!(
        err.message
            .starts_with("invalid params: attributes.temperature:"),
        "{}",
        err.message
    );
    server.stop().await;
}

/// An unknown model or run is -32004, saying what to set.
#[actix_rt::test]
async fn unknown_model_and_run_are_32004() {
    let server = TestServer::start_with(|c| {
        c.models.push(rummy_store::models::ModelSeed {
            alias: "local".into(),
            actual: "ollama/llama3".into(),
            context_length: None,
            fallback: None,
        });
    })
    .await;
    let mut client = server.project_client("demo").await;
    let err = client
        .call_err(
            "set",
            json!({ "path": "run://a", "body": "hi", "attributes": { "model": "nope" } }),
        )
        .await;
    assert_eq!(err.code, -32004);
    assert!(err.message.contains("RUMMY_MODEL_nope"), "{}", err.message);
    let err = client
        .call_err(
            "set",
            json!({ "path": "run://a", "body": "hi", "attributes": { "model": "local" } }),
        )
        .await;
    assert_eq!(err.code, -32004);
    assert!(
        err.message.contains("provider \"ollama\""),
        "{}",
        err.message
    );
    assert_eq!(
        client
            .call_err("getRun", json!({ "run": "missing" }))
            .await
            .code,
        -32004
    );
    assert_eq!(
        client
            .call_err(
                "set",
                json!({ "path": "run://missing", "state": "cancelled" })
            )
            .await
            .code,
        -32004
    );
    server.stop().await;
}

/// A hello with another MAJOR protocol version is -32002; one naming an existing project with another root is -32005.
#[actix_rt::test]
async fn hello_refuses_mismatch_and_moved_projects() {
    let server = TestServer::start().await;
    let mut client = server.client().await;
    let err = client
        .call_err(
            "rummy/hello",
            json!({ "name": "demo", "projectRoot": server.project_root("demo"), "clientVersion": "1.4.0" }),
        )
        .await;
    assert_eq!(err.code, -32002);
    let ok = client
        .call(
            "rummy/hello",
            json!({ "name": "demo", "projectRoot": server.project_root("demo"), "clientVersion": "2.1.0" }),
        )
        .await
        .unwrap();
    assert_eq!(ok["protocolVersion"], json!("2.1.0"));
    assert_eq!(ok["projectRoot"], json!(server.project_root("demo")));
    assert!(ok["projectId"].is_i64());
    let elsewhere = server.project_root("elsewhere");
    let err = client
        .call_err(
            "rummy/hello",
            json!({ "name": "demo", "projectRoot": elsewhere }),
        )
        .await;
    assert_eq!(err.code, -32005);
    // The answer does not say where the project lives.
    assert_eq!(
        err.message,
        "project \"demo\" already exists with another root; a project does not move (pick another name)"
    );
    server.stop().await;
}

/// discover lists every served method with its params, and the notifications.
#[actix_rt::test]
async fn discover_lists_the_routing_table() {
    let server = TestServer::start().await;
    let mut client = server.client().await;
    let catalogue = client.call("discover", json!({})).await.unwrap();
    let mut methods: Vec<&str> = catalogue["methods"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    methods.sort_unstable();
    assert_eq!(
        methods,
        vec![
            "addModel",
            "cp",
            "discover",
            "file/constraint",
            "file/drop",
            "get",
            "getBody",
            "getConstraints",
            "getEntries",
            "getModels",
            "getProjects",
            "getRoutes",
            "getRun",
            "getRuns",
            "getSkills",
            "listPersonas",
            "listSkills",
            "mv",
            "persona/set",
            "ping",
            "project/set",
            "removeModel",
            "rm",
            "route/check",
            "rummy/hello",
            "server/doctor",
            "set",
            "skill/add",
            "skill/remove",
            "stream",
            "stream/aborted",
            "stream/cancel",
            "stream/completed",
            "token/create",
            "token/list",
            "token/revoke",
            "tool/result",
            "tools/offer",
            "update",
        ]
    );
    assert_eq!(
        catalogue["methods"]["rummy/hello"]["params"]["projectRoot"]["required"],
        json!(false)
    );
    let mut notifications: Vec<&str> = catalogue["notifications"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    notifications.sort_unstable();
    assert_eq!(
        notifications,
        vec![
            "run/progress",
            "run/proposal",
            "run/state",
            "stream/cancelled",
            "tool/call",
            "ui/notify",
            "ui/render"
        ]
    );
    server.stop().await;
}

/// Models are listed as bare arrays, added, replaced and removed.
#[actix_rt::test]
async fn models_can_be_added_and_removed() {
    let server = TestServer::start().await;
    let mut client = server.project_client("demo").await;
    let added = client
        .call(
            "addModel",
            json!({ "alias": "big", "actual": "openai/big-model", "contextLength": 200000 }),
        )
        .await
        .unwrap();
    assert_eq!(added["alias"], json!("big"));
    let models = client.call("getModels", json!({})).await.unwrap();
    assert_eq!(
        models,
        json!([
            { "alias": "big", "actual": "openai/big-model", "contextLength": 200000, "fallback": null, "configured": false },
            { "alias": "fast", "actual": "openai/fake-model", "contextLength": 32768, "fallback": null, "configured": true }
        ])
    );
    let page = client
        .call("getModels", json!({ "limit": 1, "offset": 1 }))
        .await
        .unwrap();
    assert_eq!(page[0]["alias"], json!("fast"));
    let err = client
        .call_err(
            "addModel",
            json!({ "alias": "bad", "actual": "no-provider" }),
        )
        .await;
    assert_eq!(
        (err.code, err.message.as_str()),
        (
            -32602,
            "invalid params: actual: expected <provider>/<model>"
        )
    );
    client
        .call("removeModel", json!({ "alias": "big" }))
        .await
        .unwrap();
    assert_eq!(
        client
            .call("getModels", json!({}))
            .await
            .unwrap()
            .as_array()
            .map(Vec::len),
        Some(1)
    );
    assert_eq!(
        client
            .call_err("removeModel", json!({ "alias": "big" }))
            .await
            .code,
        -32004
    );
    server.stop().await;
}

/// Notifications reach every session of the run's project and no session of another project; runs are not visible across projects.
#[actix_rt::test]
async fn notifications_stay_in_their_project() {
    let server = TestServer::start().await;
    server
        .provider
        .push(Reply::content("<update status=\"200\">done</update>"));
    let mut a1 = server.project_client("alpha").await;
    let mut a2 = server.project_client("alpha").await;
    let mut b = server.project_client("beta").await;
    let alias = start_run(&mut a1, "run://shared", "Go").await;
    wait_status(&mut a1, &alias, 200).await;
    wait_status(&mut a2, &alias, 200).await;
    assert!(
        b.expect_no_notification("run/state", Duration::from_millis(300))
            .await
    );
    assert!(
        b.expect_no_notification("run/progress", Duration::from_millis(10))
            .await
    );
    assert_eq!(
        b.call_err("getRun", json!({ "run": alias })).await.code,
        -32004
    );
    assert_eq!(b.call("getRuns", json!({})).await.unwrap(), json!([]));
    let _ = WAIT;
    server.stop().await;
}

/// A call the store cannot answer within `RUMMY_RPC_TIMEOUT` (here: another connection holds
/// the lock its write needs — SQLite's write lock, PostgreSQL's on the runs table) is answered
/// -32603 naming the method and the limit, the connection stays usable, and the write it
/// queued still happens once the lock is free.
#[actix_rt::test]
async fn a_call_past_the_rpc_timeout_gets_an_error_and_its_write_still_lands() {
    use diesel::connection::SimpleConnection;
    let server = TestServer::start_with(|c| c.limits.rpc_timeout_ms = 300).await;
    server
        .provider
        .push(Reply::content("<update status=\"200\">done</update>"));
    let mut client = server.project_client("demo").await;
    let mut holder = crate::support::database::connect(&server.database());
    holder
        .batch_execute(match holder {
            rummy_store::db::Db::Sqlite(_) => "BEGIN IMMEDIATE",
            // Reads go on; the new run's insert waits.
            rummy_store::db::Db::Pg(_) => "BEGIN; LOCK TABLE runs IN EXCLUSIVE MODE",
        })
        .unwrap();

    let err = client
        .call_err(
            "set",
            json!({ "path": "run://late", "body": "Go", "attributes": { "model": "fast" } }),
        )
        .await;
    assert_eq!(
        (err.code, err.message.as_str()),
        (
            -32603,
            "RPC 'set' timed out after 300 ms; what it started may still take effect"
        )
    );

    holder.batch_execute("ROLLBACK").unwrap();
    drop(holder);
    let pong = client.call("ping", json!({})).await.unwrap();
    assert_eq!(pong, json!({}));
    wait_status(&mut client, "late", 200).await;
    client.close().await;
    server.stop().await;
}

/// A client that stops reading its connection is closed (1013, saying how to catch up) once
/// its unread notifications pass `RUMMY_MAX_BACKLOG_BYTES`, instead of the server keeping
/// every notification for it; clients that read get everything and the run completes.
#[actix_rt::test]
async fn a_client_that_stops_reading_is_closed_not_buffered_for() {
    const LIMIT: usize = 512 * 1024;
    let server = TestServer::start_with(|c| {
        c.limits.max_backlog_bytes = LIMIT;
        c.limits.max_entry_tokens = 4096;
        // Room for every turn's record of what it did.
        for model in &mut c.models {
            model.context_length = Some(1_000_000);
        }
    })
    .await;
    // Sixty turns rewriting five 2,250-token facts: some 10 MB of run/state pushes (more than
    // the kernel buffers for a stalled loopback socket), none near the limit.
    let fact = "x".repeat(4500);
    for step in 0..60 {
        let facts: String = (0..5)
            .map(|i| format!("<set path=\"known://f{i}\">{step} {fact}</set>"))
            .collect();
        server.provider.push(Reply::content(format!(
            "{facts}<update status=\"102\">step {step}</update>"
        )));
    }
    server.provider.push(Reply::content(
        "<update status=\"200\">all written</update>",
    ));
    let mut stalled = rummy_testkit::RpcClient::connect_with_receive_buffer(&server.url(), 4096)
        .await
        .unwrap();
    stalled
        .call(
            "rummy/hello",
            json!({ "name": "demo", "projectRoot": server.project_root("demo") }),
        )
        .await
        .unwrap();
    let mut reader = server.project_client("demo").await;
    let alias = start_run(&mut reader, "run://big", "Write it all down").await;
    let done = wait_status(&mut reader, &alias, 200).await;
    assert_eq!(done["summary"], json!("all written"));

    let (code, reason) = stalled.close_reason(WAIT).await.expect("a close frame");
    assert_eq!(code, 1013);
    assert!(
        reason.ends_with(
            "bytes of notifications unread: reconnect, then getRun sinceSeq replays them"
        ),
        "{reason}"
    );
    let unread: usize = reason.split(' ').next().unwrap().parse().unwrap();
    assert!(unread > 0, "{unread} bytes were waiting");
    server.stop().await;
}
