//! The hostile-input corpus: every case in
//! `tests/fixtures/hostile/corpus.json` — malformed and oversized frames, deep nesting, invalid
//! UTF-8, batches, path escapes, symlinks out of the root, another project's names, expired and
//! revoked tokens, hostile origins — gets exactly the answer the corpus names, while another
//! client of the same server keeps being served.
//!
//! `RUMMY_CORPUS_RECORD=1 cargo test --test all hostile -- --nocapture` prints what each case
//! gets instead of checking it, to write a new case's expectation.

use crate::support::raw::{frame_with, header, Frame, RawSocket};
use crate::support::{TestServer, WAIT};
use rummy_testkit::{Reply, RpcClient};
use serde::Deserialize;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

/// One hostile input and the answer it must get.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    /// What it is.
    name: String,
    /// `open` (no tokens) or `team` (tokens exist; `{ops}`, `{alice}`, `{revoked}`,
    /// `{expired}` in headers and params stand for them).
    #[serde(default = "open")]
    server: String,
    /// Say `rummy/hello` to this project first (`corpus` has a run `r`, `other` a run
    /// `theirs`, each answered once).
    hello: Option<String>,
    /// The upgrade's `Authorization` on the `team` server (default `Bearer {ops}`); `none`
    /// sends none.
    auth: Option<String>,
    /// What to send.
    send: Send,
    /// What must come back.
    expect: Value,
}

fn open() -> String {
    "open".to_owned()
}

/// What a case sends.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
enum Send {
    /// One text frame.
    Text(String),
    /// One text frame: `prefix`, `unit` × `times`, `close` × `times`, `suffix`.
    Repeat {
        prefix: String,
        unit: String,
        times: usize,
        #[serde(default)]
        close: String,
        suffix: String,
    },
    /// One text frame whose payload is these bytes (hex), UTF-8 or not.
    Bytes(String),
    /// One frame with every header bit chosen.
    Frame {
        fin: bool,
        rsv: u8,
        opcode: u8,
        masked: bool,
        payload: String,
    },
    /// Only a frame header announcing `len` bytes.
    Header { opcode: u8, len: u64 },
    /// The upgrade itself, with these headers.
    Upgrade(Vec<(String, String)>),
    /// A JSON-RPC call with id 1.
    Call { method: String, params: Value },
}

/// What the corpus's placeholders stand for: `{corpus}` and `{other}` (the projects' roots),
/// and on the `team` server its tokens.
struct Team {
    tokens: BTreeMap<&'static str, String>,
}

fn fill(text: &str, team: Option<&Team>) -> String {
    let mut out = text.to_owned();
    if let Some(team) = team {
        for (name, value) in &team.tokens {
            out = out.replace(&format!("{{{name}}}"), value);
        }
    }
    out
}

/// `value` with what the placeholders stand for put back as placeholders (answers that name
/// a project's root, which differs from run to run).
fn unfill(value: Value, team: Option<&Team>) -> Value {
    let mut text = value.to_string();
    for (name, value) in team.map(|t| &t.tokens).into_iter().flatten() {
        text = text.replace(value.as_str(), &format!("{{{name}}}"));
    }
    serde_json::from_str(&text).unwrap_or(Value::Null)
}

/// The outcome of a case, in the corpus's words.
async fn run_case(server: &TestServer, case: &Case, team: Option<&Team>) -> Value {
    if let Send::Upgrade(headers) = &case.send {
        let headers: Vec<(String, String)> = headers
            .iter()
            .map(|(n, v)| (n.clone(), fill(v, team)))
            .collect();
        let refs: Vec<(&str, &str)> = headers
            .iter()
            .map(|(n, v)| (n.as_str(), v.as_str()))
            .collect();
        return match RawSocket::connect_with(server.port(), &refs).await {
            Ok(_) => json!({ "upgraded": true }),
            Err((status, body)) => json!({ "http": status, "body": body }),
        };
    }
    let auth = match (&case.server[..], case.auth.as_deref()) {
        ("team", None) => Some(fill("Bearer {ops}", team)),
        (_, Some("none") | None) => None,
        (_, Some(auth)) => Some(fill(auth, team)),
    };
    let headers: Vec<(&str, &str)> = auth.iter().map(|a| ("Authorization", a.as_str())).collect();
    let mut raw = RawSocket::connect_with(server.port(), &headers)
        .await
        .unwrap();
    if let Some(project) = &case.hello {
        raw.send_text(&json!({"jsonrpc": "2.0", "id": 0, "method": "rummy/hello", "params": {"name": project}}).to_string())
            .await;
        let answer: Value = serde_json::from_str(&raw.next_text().await).unwrap();
        assert!(answer.get("result").is_some(), "hello: {answer}");
    }
    match &case.send {
        Send::Text(text) => raw.send_text(&fill(text, team)).await,
        Send::Repeat {
            prefix,
            unit,
            times,
            close,
            suffix,
        } => {
            let text = format!(
                "{prefix}{}{}{suffix}",
                unit.repeat(*times),
                close.repeat(*times)
            );
            raw.send_text(&text).await
        }
        Send::Bytes(hex) => raw.send_frame(0x1, &decode_hex(hex)).await,
        Send::Frame {
            fin,
            rsv,
            opcode,
            masked,
            payload,
        } => {
            raw.send_bytes(&frame_with(
                *fin,
                *rsv,
                *opcode,
                *masked,
                payload.as_bytes(),
            ))
            .await
        }
        Send::Header { opcode, len } => raw.send_bytes(&header(*opcode, *len, [9, 9, 9, 9])).await,
        Send::Call { method, params } => {
            let params: Value = serde_json::from_str(&fill(&params.to_string(), team)).unwrap();
            raw.send_text(
                &json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).to_string(),
            )
            .await
        }
        Send::Upgrade(_) => unreachable!("answered above"),
    }
    loop {
        match tokio::time::timeout(WAIT, raw.next_frame()).await {
            Ok(Some(Frame::Text(text))) => {
                let answer: Value = serde_json::from_str(&text).unwrap_or(Value::String(text));
                if answer.get("method").is_some() && answer.get("id").is_none() {
                    continue; // a notification
                }
                return outcome(answer);
            }
            Ok(Some(Frame::Close(code, _))) => return json!({ "close": code }),
            Ok(Some(Frame::Ping | Frame::Other(_))) => continue,
            Ok(None) => return json!({ "hangUp": true }),
            Err(_) => return json!({ "silence": true }),
        }
    }
}

/// An answer as the corpus writes it: an error's id, code and message; a result as it is; a
/// batch as the list of those.
fn outcome(answer: Value) -> Value {
    match answer {
        Value::Array(items) => Value::Array(items.into_iter().map(outcome).collect()),
        Value::Object(ref map) if map.contains_key("error") => json!({
            "id": answer["id"],
            "code": answer["error"]["code"],
            "message": answer["error"]["message"],
        }),
        Value::Object(ref map) if map.contains_key("result") => {
            json!({ "id": answer["id"], "result": answer["result"] })
        }
        other => json!({ "unexpected": other }),
    }
}

fn decode_hex(hex: &str) -> Vec<u8> {
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
        .collect()
}

/// A server for the corpus: project `corpus` (with a symlink `escape` → /etc and a run `r`)
/// and project `other` (with a run `theirs`); `team` adds tokens.
async fn corpus_server(team: bool) -> (TestServer, Option<Team>) {
    let server = TestServer::start().await;
    server
        .provider
        .set_fallback(Reply::content("<update status=\"200\">ok</update>"));
    let mut owner = server.client().await;
    let mut tokens = BTreeMap::new();
    for (project, run) in [("other", "theirs"), ("corpus", "r")] {
        let root = server.project_root(project);
        tokens.insert(project, root.clone());
        let _ = std::os::unix::fs::symlink("/etc", PathBuf::from(&root).join("escape"));
        owner
            .call(
                "rummy/hello",
                json!({ "name": project, "projectRoot": root }),
            )
            .await
            .unwrap();
        owner
            .call("set", json!({ "path": format!("run://{run}"), "body": "hi", "attributes": { "model": "fast" } }))
            .await
            .unwrap();
        crate::support::wait_status(&mut owner, run, 200).await;
    }
    if !team {
        return (server, Some(Team { tokens }));
    }
    // The owner makes the admin token (its connection then closes: a token exists); the admin
    // makes the rest.
    let mut maker = owner;
    for (name, admin, projects) in [
        ("ops", true, json!([])),
        ("alice", false, json!(["other"])),
        ("revoked", false, json!(["corpus"])),
    ] {
        let made = maker
            .call(
                "token/create",
                json!({ "user": name, "admin": admin, "projects": projects }),
            )
            .await
            .unwrap();
        tokens.insert(name, made["token"].as_str().unwrap().to_owned());
        if name == "ops" {
            maker = RpcClient::connect_with_headers(
                &server.url(),
                &[("Authorization", &format!("Bearer {}", tokens["ops"]))],
            )
            .await
            .unwrap();
        }
    }
    maker
        .call("token/revoke", json!({ "token": tokens["revoked"][..14] }))
        .await
        .unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    let mut conn = rummy_store::database::open(&server.database()).unwrap();
    let expired = rummy_store::tokens::NewToken {
        user: "expired".into(),
        admin: false,
        projects: vec!["corpus".into()],
        expires_at: Some(rummy_provider::time::Millis(now - 1)),
    };
    let (text, _) = rummy_store::tokens::create(
        &mut conn,
        &expired,
        &[3; 32],
        rummy_provider::time::Millis(now - 10),
    )
    .unwrap();
    tokens.insert("expired", text);
    (server, Some(Team { tokens }))
}

/// Every case of the corpus gets exactly its answer, and a bystander is served throughout.
#[actix_rt::test]
async fn every_hostile_input_gets_its_exact_answer() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/hostile/corpus.json");
    let cases: Vec<Case> = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let record = std::env::var_os("RUMMY_CORPUS_RECORD").is_some();
    let mut failures = Vec::new();
    for kind in ["open", "team"] {
        let (server, team) = corpus_server(kind == "team").await;
        let mut bystander = match team.as_ref().and_then(|t| t.tokens.get("ops")) {
            Some(ops) => {
                let auth = format!("Bearer {ops}");
                RpcClient::connect_with_headers(&server.url(), &[("Authorization", &auth)])
                    .await
                    .unwrap()
            }
            None => server.client().await,
        };
        bystander
            .call("rummy/hello", json!({ "name": "corpus" }))
            .await
            .unwrap();
        for case in cases.iter().filter(|c| c.server == kind) {
            let got = unfill(run_case(&server, case, team.as_ref()).await, team.as_ref());
            if record {
                eprintln!("{}\n  {}", case.name, got);
            } else if got != case.expect {
                failures.push(format!(
                    "{}:\n  expected {}\n  got      {}",
                    case.name, case.expect, got
                ));
            }
            let pong =
                tokio::time::timeout(Duration::from_secs(5), bystander.call("getRuns", json!({})))
                    .await;
            assert!(
                matches!(pong, Ok(Ok(_))),
                "the bystander was not served after {}",
                case.name
            );
        }
        server.stop().await;
    }
    eprintln!("hostile corpus: {} cases", cases.len());
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
