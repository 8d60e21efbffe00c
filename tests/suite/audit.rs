//! The audit: proposals record who resolved them and when, and no
//! secret — a token, a provider key — reaches the log, an error, the RPC log, the database or
//! a notification, even when a provider echoes its key in an error.

use crate::support::process::ServerProcess;
use rummy_testkit::{FakeProvider, Reply, RpcClient};
use serde_json::{json, Value};
use std::process::Stdio;
use std::time::Duration;

const KEY: &str = "sk-live-SECRET-0123456789";
const WAIT: Duration = Duration::from_secs(20);

/// A run with secrets configured: the provider first refuses the call and echoes its key,
/// then proposes an edit that a token's holder accepts. Afterwards the proposal names who
/// accepted it and when, and neither the key nor the token is anywhere: not in the server's
/// log (at debug), its database files, any answer or any notification.
#[actix_rt::test]
async fn proposals_name_their_resolver_and_secrets_go_nowhere() {
    let provider = FakeProvider::start().unwrap();
    provider.push(Reply::status(
        401,
        format!("{{\"error\":{{\"message\":\"Incorrect API key provided: {KEY}\"}}}}"),
    ));
    provider.push(Reply::content(
        "<set path=\"app.txt\"><<<<<<< SEARCH\nv1\n=======\nv2\n>>>>>>> REPLACE</set>\n<update status=\"102\">edited</update>",
    ));
    provider.push(Reply::content("<update status=\"200\">done</update>"));
    let home = tempfile::TempDir::new().unwrap();
    let project = tempfile::TempDir::new().unwrap();
    std::fs::write(project.path().join("app.txt"), "v1\n").unwrap();
    let log_path = home.path().join("server.log");
    let log = std::fs::File::create(&log_path).unwrap();
    let base_url = provider.base_url();
    let mut server = ServerProcess::start(
        home.path(),
        &[
            ("OPENAI_BASE_URL", base_url.as_str()),
            ("OPENAI_API_KEY", KEY),
            ("RUMMY_MODEL_fast", "openai/fake-model"),
            ("RUMMY_LOG", "debug"),
        ],
        Stdio::from(log),
    );
    let url = format!("ws://127.0.0.1:{}/", server.port);
    let mut seen = String::new();

    let mut owner = RpcClient::connect(&url).await.unwrap();
    let made = owner
        .call("token/create", json!({ "user": "dana", "admin": true }))
        .await
        .unwrap();
    let token = made["token"].as_str().unwrap().to_owned();
    let header = format!("Bearer {token}");
    let mut client = RpcClient::connect_with_headers(&url, &[("Authorization", &header)])
        .await
        .unwrap();
    client.set_timeout(WAIT);
    let root = project.path().canonicalize().unwrap().display().to_string();
    seen += &client
        .call(
            "rummy/hello",
            json!({ "name": "audited", "projectRoot": root, "token": token }),
        )
        .await
        .unwrap()
        .to_string();
    let start = json!({ "path": "run://job", "body": "Upgrade", "attributes": { "model": "fast", "mode": "act" } });
    seen += &client.call("set", start).await.unwrap().to_string();
    let failed = client
        .wait_for_notification("run/state", WAIT, |p| p["status"] == json!(500))
        .await
        .unwrap();
    seen += &failed.to_string();
    seen += &client
        .call("set", json!({ "path": "run://job", "body": "Try again" }))
        .await
        .unwrap()
        .to_string();
    let proposed = client
        .next_notification("run/proposal", WAIT)
        .await
        .unwrap();
    let path = proposed["proposed"][0]["path"].as_str().unwrap().to_owned();
    seen += &client
        .call(
            "set",
            json!({ "run": "job", "path": path, "state": "resolved" }),
        )
        .await
        .unwrap()
        .to_string();
    let done = client
        .wait_for_notification("run/state", WAIT, |p| p["status"] == json!(200))
        .await
        .unwrap();
    seen += &done.to_string();
    let run = client
        .call("getRun", json!({ "run": "job" }))
        .await
        .unwrap();
    seen += &run.to_string();
    for note in client.drain_notifications() {
        seen += &note.to_string();
    }

    let listed = client
        .call("getEntries", json!({ "run": "job", "pattern": path }))
        .await
        .unwrap();
    let proposal = &listed[0];
    assert_eq!(proposal["attributes"]["resolvedBy"], json!("dana"));
    assert!(
        proposal["attributes"]["resolvedAt"]
            .as_str()
            .is_some_and(|at| at.ends_with('Z')),
        "{proposal}"
    );
    let error = run["history"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|e| {
            e["path"]
                .as_str()
                .is_some_and(|p| p.starts_with("error://"))
        })
        .cloned()
        .unwrap_or(Value::Null);
    assert!(
        error.to_string().contains("[redacted]"),
        "the provider's echo is kept, scrubbed: {error}"
    );

    server.terminate();
    let mut stored = std::fs::read_to_string(&log_path).unwrap();
    assert!(stored.contains("token created"), "the log is at debug");
    stored += &crate::support::database::all_text(&crate::support::database::of_home(home.path()));
    for (what, secret) in [("the provider key", KEY), ("the token", token.as_str())] {
        assert!(!seen.contains(secret), "{what} reached a client");
        assert!(
            !stored.contains(secret),
            "{what} reached the log or the database"
        );
    }
}
