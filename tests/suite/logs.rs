//! The server's log, read from the real binary's stderr: JSON lines with
//! `RUMMY_LOG_FORMAT=json` — the start-up summary, a turn's span tree, RPC spans naming the user
//! and the method, proposals raised and resolved, file writes, a failed loop at WARN — and text
//! without colour codes when stderr is a file, with a warning for a malformed base URL.

use crate::support::process::ServerProcess;
use pretty_assertions::assert_eq;
use rummy_testkit::{FakeProvider, Reply, RpcClient};
use serde_json::{json, Value};
use std::process::Stdio;
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(20);

/// The first line whose `message` is `message`, or a panic showing the log.
fn line<'a>(lines: &'a [Value], message: &str, log: &str) -> &'a Value {
    lines
        .iter()
        .find(|l| l["message"] == json!(message))
        .unwrap_or_else(|| panic!("no {message:?} line in\n{log}"))
}

/// The names of a line's spans, outermost first.
fn span_names(line: &Value) -> Vec<&str> {
    line["spans"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| s["name"].as_str())
        .collect()
}

/// With `RUMMY_LOG_FORMAT=json` every line is a JSON object with a timestamp, level, target and
/// message; the start-up summary names the version, database, address, providers and models
/// (never a key); a proposal raised in a turn carries the turn's span (project, run, loop,
/// turn) inside dispatch; its resolution names who resolved it; a call's events carry the RPC
/// span with the method and the user; the file written is logged, and a loop the provider failed is a WARN line with the error.
#[actix_rt::test]
async fn json_lines_carry_the_summary_spans_and_events() {
    const KEY: &str = "sk-live-SECRET-0123456789";
    let provider = FakeProvider::start().unwrap();
    provider.push(Reply::status(500, "{\"error\":{\"message\":\"down\"}}"));
    provider.push(Reply::content(
        "<set path=\"app.txt\"><<<<<<< SEARCH\nv1\n=======\nv2\n>>>>>>> REPLACE</set>\n<update status=\"102\">edited</update>",
    ));
    provider.push(Reply::content("<update status=\"200\">done</update>"));
    let home = tempfile::TempDir::new().unwrap();
    let project = tempfile::TempDir::new().unwrap();
    std::fs::write(project.path().join("app.txt"), "v1\n").unwrap();
    let log_path = home.path().join("server.log");
    let base_url = provider.base_url();
    let mut server = ServerProcess::start(
        home.path(),
        &[
            ("OPENAI_BASE_URL", base_url.as_str()),
            ("OPENAI_API_KEY", KEY),
            ("RUMMY_MODEL_fast", "openai/fake-model"),
            ("RUMMY_RETRIES", "0"),
            ("RUMMY_LOG_FORMAT", "json"),
        ],
        Stdio::from(std::fs::File::create(&log_path).unwrap()),
    );
    let url = format!("ws://127.0.0.1:{}/", server.port);
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
    client
        .call("token/create", json!({ "user": "eve" }))
        .await
        .unwrap();
    let root = project.path().canonicalize().unwrap().display().to_string();
    client
        .call(
            "rummy/hello",
            json!({ "name": "logged", "projectRoot": root }),
        )
        .await
        .unwrap();
    let start = json!({ "path": "run://job", "body": "Upgrade", "attributes": { "model": "fast", "mode": "act" } });
    client.call("set", start).await.unwrap();
    client
        .wait_for_notification("run/state", WAIT, |p| p["status"] == json!(500))
        .await
        .unwrap();
    client
        .call("set", json!({ "path": "run://job", "body": "Try again" }))
        .await
        .unwrap();
    let proposed = client
        .next_notification("run/proposal", WAIT)
        .await
        .unwrap();
    let path = proposed["proposed"][0]["path"].as_str().unwrap().to_owned();
    client
        .call(
            "set",
            json!({ "run": "job", "path": path, "state": "resolved" }),
        )
        .await
        .unwrap();
    client
        .wait_for_notification("run/state", WAIT, |p| p["status"] == json!(200))
        .await
        .unwrap();
    server.terminate();

    let log = std::fs::read_to_string(&log_path).unwrap();
    assert!(!log.contains(KEY), "no key in the log:\n{log}");
    let lines: Vec<Value> = log
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    for l in &lines {
        for field in ["timestamp", "level", "target", "message"] {
            assert!(l[field].is_string(), "{field} in {l}");
        }
    }
    let started = line(&lines, "rummy started", &log);
    assert_eq!(
        (
            &started["level"],
            &started["version"],
            &started["backend"],
            &started["database"],
            &started["providers"],
            &started["models"],
        ),
        (
            &json!("INFO"),
            &json!(env!("CARGO_PKG_VERSION")),
            &json!(crate::support::database::of_home(home.path()).backend()),
            &json!(crate::support::database::of_home(home.path()).display()),
            &json!(format!("openai={base_url}")),
            &json!("fast=openai/fake-model"),
        )
    );
    assert_eq!(started["bind"], json!(format!("127.0.0.1:{}", server.port)));

    // The fake provider does not say the model's context length: one warning, not one a loop.
    let unknown: Vec<&Value> = lines
        .iter()
        .filter(|l| {
            l["message"]
                .as_str()
                .is_some_and(|m| m.starts_with("context length unknown"))
        })
        .collect();
    assert_eq!(
        unknown
            .iter()
            .map(|l| (&l["level"], &l["model"]))
            .collect::<Vec<_>>(),
        vec![(&json!("WARN"), &json!("fast"))],
        "{log}"
    );

    let failed = line(&lines, "loop failed", &log);
    assert_eq!(
        (&failed["level"], &failed["loop_status"]),
        (&json!("WARN"), &json!(500))
    );
    assert!(
        failed["error"].as_str().is_some_and(|e| e.contains("500")),
        "{failed}"
    );

    let raised = line(&lines, "proposal raised", &log);
    assert_eq!(
        (span_names(raised), &raised["path"], &raised["kind"]),
        (vec!["turn", "dispatch"], &json!(path), &json!("edit"))
    );
    let turn = &raised["spans"][0];
    assert_eq!(
        (
            &turn["project"],
            &turn["run"],
            &turn["loop_id"],
            &turn["turn"]
        ),
        (&json!(1), &json!("job"), &json!(2), &json!(2))
    );

    let resolved = line(&lines, "proposal resolved", &log);
    assert_eq!(
        (&resolved["path"], &resolved["state"], &resolved["by"]),
        (&json!(path), &json!("resolved"), &json!("dana"))
    );
    let created = lines
        .iter()
        .find(|l| l["message"] == json!("token created") && l["user"] == json!("eve"))
        .unwrap_or_else(|| panic!("no token created for eve in\n{log}"));
    let rpc = &created["spans"][0];
    assert_eq!(
        (span_names(created), &rpc["method"], &rpc["user"]),
        (vec!["rpc"], &json!("token/create"), &json!("dana"))
    );
    let written = line(&lines, "file written", &log);
    assert_eq!(
        (&written["file"], &written["created"]),
        (&json!("app.txt"), &json!(false))
    );
}

/// Logged to a file, the text log has no colour codes; it starts with the summary and warns
/// about a base URL that cannot work, saying which variable to fix.
#[actix_rt::test]
async fn a_text_log_in_a_file_is_plain_and_warns_about_a_malformed_base_url() {
    let home = tempfile::TempDir::new().unwrap();
    let log_path = home.path().join("server.log");
    let mut server = ServerProcess::start(
        home.path(),
        &[
            ("OPENAI_BASE_URL", "localhost:8080"),
            ("RUMMY_MODEL_fast", "openai/m"),
        ],
        Stdio::from(std::fs::File::create(&log_path).unwrap()),
    );
    server.terminate();
    let log = std::fs::read_to_string(&log_path).unwrap();
    assert!(!log.contains('\u{1b}'), "no escape codes:\n{log}");
    assert!(log.contains(" INFO "), "{log}");
    assert!(
        log.contains("rummy started") && log.contains("providers=openai=localhost:8080"),
        "{log}"
    );
    assert!(
        log.lines().any(|l| l.contains(" WARN ") && l.ends_with("openai base URL \"localhost:8080\" looks malformed: it must start with http:// or https://; fix OPENAI_BASE_URL")),
        "{log}"
    );
}
