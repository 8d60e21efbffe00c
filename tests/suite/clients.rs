//! What a client needs of the protocol: hello as a barrier, opening a project by name, `getProjects`, runs that keep their mode, strict params, `stopReason`, the `known://` size gate for clients, the model's `set … preview`, and a `discover` that lists what is accepted.

use crate::support::{accept, entry, start_run, wait_status, TestServer, WAIT};
use pretty_assertions::assert_eq;
use rummy_testkit::{Reply, RpcClient};
use serde_json::{json, Value};

const DONE: &str = "<update status=\"200\">done</update>";

/// `result` of a response, or panics with the response.
fn result(response: &Value) -> Value {
    response
        .get("result")
        .cloned()
        .unwrap_or_else(|| panic!("not a result: {response}"))
}

/// Calls sent right after a hello, without waiting for its answer, are handled once it has
/// completed (hello is answered first; they start in order and run concurrently): `getRuns`
/// gets the new project's runs, not -32000.
#[actix_rt::test]
async fn calls_sent_right_after_hello_wait_for_it() {
    let server = TestServer::start().await;
    let mut client = server.client().await;
    let root = server.project_root("barrier");
    let hello = client
        .send_request(
            "rummy/hello",
            json!({ "name": "barrier", "projectRoot": root }),
        )
        .await
        .unwrap();
    let runs = client.send_request("getRuns", json!({})).await.unwrap();
    let models = client.send_request("getModels", json!({})).await.unwrap();
    let first = client.next_response().await.unwrap();
    assert_eq!(first["id"], json!(hello), "hello is answered first");
    assert_eq!(result(&first)["projectRoot"], json!(root));
    assert_eq!(client.response_for(runs).await.unwrap(), json!([]));
    assert_eq!(
        client.response_for(models).await.unwrap(),
        json!([{ "alias": "fast", "actual": "openai/fake-model", "contextLength": 32768, "fallback": null, "configured": true }])
    );
    server.stop().await;
}

/// In a batch, the calls after a hello run once it has completed; a call before it was sent
/// before it and is refused as before.
#[actix_rt::test]
async fn a_hello_in_a_batch_is_a_barrier_for_the_calls_after_it() {
    let server = TestServer::start().await;
    let mut client = server.client().await;
    let root = server.project_root("batch");
    let call = |id: u64, method: &str, params: Value| json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params });
    let batch = json!([
        call(1, "getRuns", json!({})),
        call(
            2,
            "rummy/hello",
            json!({ "name": "batch", "projectRoot": root })
        ),
        call(3, "getRuns", json!({})),
        call(4, "ping", json!({})),
    ]);
    client.send_text(&batch.to_string()).await.unwrap();
    let answer = client.next_response().await.unwrap();
    let ids: Vec<Value> = answer
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["id"].clone())
        .collect();
    assert_eq!(ids, vec![json!(1), json!(2), json!(3), json!(4)]);
    assert_eq!(answer[0]["error"]["code"], json!(-32000));
    assert_eq!(answer[1]["result"]["projectRoot"], json!(root));
    assert_eq!(answer[2]["result"], json!([]));
    assert_eq!(answer[3]["result"], json!({}));
    server.stop().await;
}

/// `getProjects` (allowed before hello) lists the projects; `rummy/hello {name}` without a root
/// opens an existing one, and names no project that does not exist (-32004).
#[actix_rt::test]
async fn a_project_is_opened_by_name_and_listed() {
    let server = TestServer::start().await;
    let mut client = server.client().await;
    assert_eq!(
        client.call("getProjects", json!({})).await.unwrap(),
        json!([])
    );
    let err = client
        .call_err("rummy/hello", json!({ "name": "alpha" }))
        .await;
    assert_eq!(
        (err.code, err.message.as_str()),
        (
            -32004,
            "project \"alpha\" not found: give projectRoot to create it (getProjects lists the projects)"
        )
    );
    let root = server.project_root("alpha");
    let created = client
        .call(
            "rummy/hello",
            json!({ "name": "alpha", "projectRoot": root }),
        )
        .await
        .unwrap();

    let mut other = server.client().await;
    let mut listed = other.call("getProjects", json!({})).await.unwrap();
    let created_at = listed[0]["createdAt"].take();
    let period_start = listed[0]["periodStart"].take();
    assert_eq!(
        listed,
        json!([{ "name": "alpha", "projectId": created["projectId"], "projectRoot": root, "createdAt": null,
                 "costCeiling": null, "period": "month", "periodStart": null, "spent": 0.0,
                 "commandNetwork": null, "webDomains": null }])
    );
    assert!(
        created_at.as_str().is_some_and(|t| t.ends_with('Z')),
        "{created_at}"
    );
    assert!(
        period_start
            .as_str()
            .is_some_and(|t| t.ends_with("-01T00:00:00.000Z")),
        "{period_start}"
    );
    let opened = other
        .call("rummy/hello", json!({ "name": "alpha" }))
        .await
        .unwrap();
    assert_eq!(opened, created);
    assert_eq!(other.call("getRuns", json!({})).await.unwrap(), json!([]));
    server.stop().await;
}

/// The mode of run `alias`'s prompt at turn `turn` (what that loop ran in).
async fn prompt_mode(client: &mut RpcClient, alias: &str, turn: u32) -> Value {
    let prompt = entry(client, alias, &format!("prompt://{turn}"))
        .await
        .unwrap_or_else(|| panic!("prompt://{turn}"));
    prompt["attributes"]["mode"].clone()
}

/// Sends `body` to run `alias` (a continuation) with `attributes`, and waits for its loop's end.
async fn continue_run(client: &mut RpcClient, alias: &str, body: &str, attributes: Value) {
    let mut params = json!({ "path": format!("run://{alias}"), "body": body });
    if !attributes.is_null() {
        params["attributes"] = attributes;
    }
    client.call("set", params).await.unwrap();
    wait_status(client, alias, 200).await;
}

/// A run keeps its mode: continuing an act run without a mode stays act; a continuation or a
/// configure that names a mode changes it for the loops after it too.
#[actix_rt::test]
async fn a_run_keeps_its_mode_until_a_continuation_or_configure_changes_it() {
    let server = TestServer::start().await;
    for _ in 0..5 {
        server.provider.push(Reply::content(DONE));
    }
    let mut client = server.project_client("modes").await;
    client
        .call(
            "set",
            json!({ "path": "run://m", "body": "one", "attributes": { "model": "fast", "mode": "act" } }),
        )
        .await
        .unwrap();
    wait_status(&mut client, "m", 200).await;
    continue_run(&mut client, "m", "two", Value::Null).await;
    continue_run(&mut client, "m", "three", json!({ "mode": "ask" })).await;
    continue_run(&mut client, "m", "four", Value::Null).await;
    client
        .call(
            "set",
            json!({ "path": "run://m", "attributes": { "mode": "act" } }),
        )
        .await
        .unwrap();
    continue_run(&mut client, "m", "five", Value::Null).await;
    let mut modes = Vec::new();
    for turn in 1..=5 {
        modes.push(prompt_mode(&mut client, "m", turn).await);
    }
    assert_eq!(
        modes,
        vec![
            json!("act"),
            json!("act"),
            json!("ask"),
            json!("ask"),
            json!("act")
        ]
    );
    let run = client.call("getRun", json!({ "run": "m" })).await.unwrap();
    assert_eq!(run["mode"], json!("act"));
    server.stop().await;
}

/// A params object with a field its method does not know is refused -32602 naming the field,
/// for every method; on `run://` the attributes are checked too, while the attributes of an
/// ordinary entry stay free-form.
#[actix_rt::test]
async fn unknown_fields_are_refused_naming_the_field() {
    let server = TestServer::start().await;
    server.provider.push(Reply::content(DONE));
    let mut client = server.client().await;
    let err = client.call_err("ping", json!({ "verbose": true })).await;
    assert_eq!(
        (
            err.code,
            err.message.as_str(),
            err.data.unwrap()["param"].clone()
        ),
        (
            -32602,
            "invalid params: verbose: unknown field `verbose`, there are no fields",
            json!("verbose")
        )
    );
    let err = client
        .call_err(
            "rummy/hello",
            json!({ "name": "strict", "projectroot": "/tmp" }),
        )
        .await;
    assert_eq!(
        err.message,
        "invalid params: projectroot: unknown field `projectroot`, expected one of `name`, `projectRoot`, `configPath`, `clientVersion`, `token`"
    );
    let mut client = server.project_client("strict").await;
    let err = client
        .call_err("getRuns", json!({ "limit": 5, "ofset": 1 }))
        .await;
    assert_eq!(
        err.message,
        "invalid params: ofset: unknown field `ofset`, expected `limit` or `offset`"
    );
    let err = client
        .call_err(
            "set",
            json!({ "path": "run://s", "body": "hi", "attributes": { "model": "fast", "modle": "x" } }),
        )
        .await;
    assert_eq!(
        (err.code, err.data.unwrap()["param"].clone()),
        (-32602, json!("attributes.modle"))
    );
    let err = client
        .call_err(
            "set",
            json!({ "path": "run://s", "body": "hi", "append": true, "attributes": { "model": "fast" } }),
        )
        .await;
    assert_eq!(
        err.message,
        "invalid params: append: not used on run:// paths (a run is started, continued, configured or cancelled)"
    );
    start_run(&mut client, "run://s", "hi").await;
    wait_status(&mut client, "s", 200).await;
    let err = client
        .call_err(
            "set",
            json!({ "path": "run://s", "body": "more", "attributes": { "inject": true, "mode": "act" } }),
        )
        .await;
    assert_eq!(
        (err.code, err.data.unwrap()["param"].clone()),
        (-32602, json!("attributes.mode"))
    );
    let written = client
        .call(
            "set",
            json!({ "run": "s", "path": "known://note", "body": "x", "attributes": { "anything": 1 } }),
        )
        .await
        .unwrap();
    assert_eq!(written, json!({ "ok": true, "path": "known://note" }));
    server.stop().await;
}

/// A failing command reported with the older `exit_code` spelling is recorded as failing; reported
/// with a misspelled field it is refused, and nothing is recorded (never exit 0). (The client
/// runs the command here: `RUMMY_COMMAND_RUNNER=client`.)
#[actix_rt::test]
async fn stream_completed_reads_exit_code_and_refuses_misspellings() {
    let server = TestServer::start_with(|c| {
        c.shell.runner = rummy::config::ShellRunner::Client;
    })
    .await;
    server.provider.push(Reply::content(
        "<sh>false</sh>\n<update status=\"102\">running</update>",
    ));
    server.provider.push(Reply::content(DONE));
    let mut client = server.project_client("streams").await;
    client
        .call(
            "set",
            json!({ "path": "run://sh", "body": "run it", "attributes": { "model": "fast", "mode": "act" } }),
        )
        .await
        .unwrap();
    let proposed = client
        .next_notification("run/proposal", WAIT)
        .await
        .unwrap();
    let path = proposed["proposed"][0]["path"].as_str().unwrap().to_owned();
    accept(&mut client, "sh", &path).await;
    let err = client
        .call_err(
            "stream/completed",
            json!({ "run": "sh", "path": path, "exitcode": 1 }),
        )
        .await;
    assert_eq!(
        (err.code, err.message.as_str()),
        (
            -32602,
            "invalid params: exitcode: unknown field `exitcode`, expected one of `run`, `path`, `exitCode`, `exit_code`, `duration`"
        )
    );
    let stdout = entry(&mut client, "sh", &format!("{path}_1"))
        .await
        .unwrap();
    assert_eq!(stdout["state"], json!("streaming"));
    client
        .call(
            "stream/completed",
            json!({ "run": "sh", "path": path, "exit_code": 3 }),
        )
        .await
        .unwrap();
    let stdout = entry(&mut client, "sh", &format!("{path}_1"))
        .await
        .unwrap();
    assert_eq!(
        (stdout["state"].clone(), stdout["outcome"].clone()),
        (json!("failed"), json!("exit:3"))
    );
    server.stop().await;
}

/// A loop that reaches RUMMY_MAX_TURNS ends 200 with `stopReason: "max_turns"` in its last
/// `run/state` and in `getRun`; a concluded loop says `"concluded"`; while a loop runs the
/// reason is null.
#[actix_rt::test]
async fn a_loop_at_the_turn_limit_says_max_turns() {
    let server = TestServer::start_with(|c| c.limits.max_turns = 2).await;
    for n in 1..=2 {
        server.provider.push(Reply::content(format!(
            "<update status=\"102\">step {n}</update>"
        )));
    }
    server.provider.push(Reply::content(DONE));
    let mut client = server.project_client("limits").await;
    start_run(&mut client, "run://l", "Keep going").await;
    let running = client
        .wait_for_notification("run/state", WAIT, |p| p["status"] == json!(102))
        .await
        .unwrap();
    assert_eq!(running["stopReason"], Value::Null);
    let last = wait_status(&mut client, "l", 200).await;
    assert_eq!(last["stopReason"], json!("max_turns"));
    let run = client.call("getRun", json!({ "run": "l" })).await.unwrap();
    assert_eq!(
        (run["status"].clone(), run["stopReason"].clone()),
        (json!(200), json!("max_turns"))
    );
    client
        .call("set", json!({ "path": "run://l", "body": "Finish" }))
        .await
        .unwrap();
    let last = wait_status(&mut client, "l", 200).await;
    assert_eq!(last["stopReason"], json!("concluded"));
    let run = client.call("getRun", json!({ "run": "l" })).await.unwrap();
    assert_eq!(run["stopReason"], json!("concluded"));
    server.stop().await;
}

/// A client's write to `known://` passes the model's size gate: a body (or an append) over
/// RUMMY_MAX_ENTRY_TOKENS is refused -32007 with the message that asks to split it, and
/// nothing is written.
#[actix_rt::test]
async fn a_clients_known_write_passes_the_size_gate() {
    let server = TestServer::start().await;
    server.provider.push(Reply::content(DONE));
    let mut client = server.project_client("gate").await;
    start_run(&mut client, "run://g", "hi").await;
    wait_status(&mut client, "g", 200).await;
    let big = "x".repeat(1100);
    let err = client
        .call_err(
            "set",
            json!({ "run": "g", "path": "known://big", "body": big }),
        )
        .await;
    assert_eq!(
        (err.code, err.message.as_str(), err.data.unwrap()),
        (
            -32007,
            "known://big too large (550 tokens, max 512). Split it into several known:// entries, one topic each, linked by path.",
            json!({ "kind": "too_large", "tokens": 550, "limit": 512 })
        )
    );
    assert_eq!(entry(&mut client, "g", "known://big").await, None);
    client
        .call(
            "set",
            json!({ "run": "g", "path": "known://small", "body": "small" }),
        )
        .await
        .unwrap();
    let err = client
        .call_err(
            "set",
            json!({ "run": "g", "path": "known://small", "body": big, "append": true }),
        )
        .await;
    assert_eq!(err.code, -32007);
    let small = entry(&mut client, "g", "known://small").await.unwrap();
    assert_eq!(small["body"], json!("small"));
    server.stop().await;
}

/// The model's `<set … preview>` shows the diff as a result it reads, and changes nothing: the
/// entry is not written and no proposal is made for a file.
#[actix_rt::test]
async fn the_models_set_preview_changes_nothing() {
    let server = TestServer::start().await;
    server.provider.push(Reply::content(
        "<set path=\"known://port\" preview>The port is 8080.</set>\n<set path=\"notes.md\" preview>new notes</set>\n<update status=\"200\">previewed</update>",
    ));
    let mut client = server.project_client("preview").await;
    client
        .call(
            "set",
            json!({ "path": "run://p", "body": "Preview", "attributes": { "model": "fast", "mode": "act" } }),
        )
        .await
        .unwrap();
    wait_status(&mut client, "p", 200).await;
    assert_eq!(entry(&mut client, "p", "known://port").await, None);
    let only = rummy_core::tools::set::preview::NOTHING_CHANGED;
    let known = entry(&mut client, "p", "set://turn_1/known%3A%2F%2Fport")
        .await
        .unwrap();
    let patch = rummy_text::hedberg::unified_diff("known://port", "", "The port is 8080.");
    assert_eq!(
        (known["state"].clone(), known["body"].clone()),
        (
            json!("resolved"),
            json!(format!(
                "# PREVIEW set known://port 0→9 tokens\n{}\n{only}",
                patch.trim_end()
            ))
        )
    );
    let file = entry(&mut client, "p", "set://turn_1/notes.md")
        .await
        .unwrap();
    assert_eq!(file["state"], json!("resolved"));
    let root = server.project_root("preview");
    assert!(!std::path::Path::new(&root).join("notes.md").exists());
    server.stop().await;
}

/// `discover` lists what is accepted: getEntries' pattern and bodyFilter, getProjects (before
/// hello), the `exit_code` alias, every notification's payload with the run/progress
/// statuses, the run statuses, the stop reasons and the error codes.
#[actix_rt::test]
async fn discover_lists_what_is_accepted() {
    let server = TestServer::start().await;
    let mut client = server.client().await;
    let catalogue = client.call("discover", json!({})).await.unwrap();
    let methods = &catalogue["methods"];
    let names = |v: &Value| -> Vec<String> { v.as_object().unwrap().keys().cloned().collect() };
    let mut entries = names(&methods["getEntries"]["params"]);
    entries.sort_unstable();
    assert_eq!(
        entries,
        vec![
            "bodyFilter",
            "limit",
            "offset",
            "pattern",
            "run",
            "scheme",
            "state",
            "visibility",
            "withBody"
        ]
    );
    assert_eq!(methods["getProjects"]["requiresHello"], json!(false));
    assert_eq!(
        methods["stream/completed"]["params"]["exitCode"]["aliases"],
        json!(["exit_code"])
    );
    assert_eq!(
        catalogue["notifications"]["run/progress"]["payload"]["status"]["values"],
        json!([
            "queued",
            "thinking",
            "processing",
            "retrying",
            "rerouted",
            "streaming",
            "sidecar"
        ])
    );
    let mut state = names(&catalogue["notifications"]["run/state"]["payload"]);
    state.sort_unstable();
    assert_eq!(
        state,
        vec![
            "history",
            "historyOmitted",
            "queued",
            "route",
            "run",
            "seq",
            "status",
            "stopReason",
            "summary",
            "telemetry",
            "turn",
            "unknowns"
        ]
    );
    let mut statuses = names(&catalogue["runStatuses"]);
    statuses.sort_unstable();
    assert_eq!(
        statuses,
        vec!["100", "102", "200", "202", "413", "499", "500", "508"]
    );
    let mut reasons = names(&catalogue["stopReasons"]);
    reasons.sort_unstable();
    assert_eq!(
        reasons,
        vec![
            "abandoned",
            "cancelled",
            "concluded",
            "context_full",
            "failed",
            "interrupted",
            "max_turns"
        ]
    );
    assert_eq!(catalogue["errors"]["-32007"], json!("too_large"));
    server.stop().await;
}
