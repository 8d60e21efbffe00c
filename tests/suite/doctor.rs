//! `rummy doctor` (issue 31 item 5), the real binary against a real server and the fake
//! provider: a healthy setup line by line, a token missing or invalid, a provider that is down,
//! a server that cannot be reached; and `rummy doctor --health`, a container's HEALTHCHECK.

use crate::support::process::ServerProcess;
use pretty_assertions::assert_eq;
use rummy_testkit::{FakeProvider, RpcClient};
use serde_json::json;
use std::path::Path;
use std::process::{Command, Stdio};

/// `rummy doctor ARGS` with only `vars` in its environment: its exit code and stdout.
fn doctor(args: &[&str], vars: &[(&str, &str)]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_rummy"))
        .arg("doctor")
        .args(args)
        .env_clear()
        .envs(vars.iter().copied())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

/// A server process on `home` with model `fast` on the fake provider, its context length set.
fn server(home: &Path, provider: &FakeProvider) -> ServerProcess {
    ServerProcess::start(
        home,
        &[
            ("OPENAI_BASE_URL", provider.base_url().as_str()),
            ("OPENAI_API_KEY", "sk-doctor-secret-key"),
            ("RUMMY_MODEL_fast", "openai/fake-model"),
            ("RUMMY_CONTEXT_fast", "32768"),
        ],
        Stdio::null(),
    )
}

/// On a server open to this machine every line is ok and the exit code 0; once a token exists,
/// doctor without one says the token is needed (exit 1), and with an admin's all is ok again.
#[actix_rt::test]
async fn a_healthy_setup_is_ok_line_by_line_and_the_token_is_checked() {
    let provider = FakeProvider::start().unwrap();
    provider.set_models(json!({ "object": "list", "data": [{ "id": "fake-model" }] }));
    let home = tempfile::TempDir::new().unwrap();
    let mut server = server(home.path(), &provider);
    let url = format!("ws://127.0.0.1:{}/", server.port);
    let db = crate::support::database::of_home(home.path()).display();
    let base = provider.base_url();
    let checks = |token_line: &str| {
        format!(
            "ok   server: reachable at {url}\n\
             ok   token: {token_line}\n\
             ok   version: rummy {}\n\
             ok   database: {db} takes writes\n\
             ok   provider openai ({base}): answers: 1 models listed\n\
             ok   model fast (openai/fake-model): context length 32768\n",
            env!("CARGO_PKG_VERSION")
        )
    };
    assert_eq!(
        doctor(&[], &[("RUMMY_URL", &url)]),
        (0, checks("none needed: the server is open to this machine"))
    );

    let mut owner = RpcClient::connect(&url).await.unwrap();
    let made = owner
        .call("token/create", json!({ "user": "ops", "admin": true }))
        .await
        .unwrap();
    let token = made["token"].as_str().unwrap().to_owned();
    let header = format!("Bearer {token}");
    let mut admin = RpcClient::connect_with_headers(&url, &[("Authorization", &header)])
        .await
        .unwrap();
    let member = admin
        .call(
            "token/create",
            json!({ "user": "alice", "projects": ["web"] }),
        )
        .await
        .unwrap();
    let member = member["token"].as_str().unwrap().to_owned();
    drop((owner, admin));
    assert_eq!(
        doctor(&[], &[("RUMMY_URL", &url)]),
        (1, format!("ok   server: reachable at {url}\nFAIL token: this server needs a token: set RUMMY_TOKEN to an admin token (rummy token create --user NAME --admin, on its machine)\n"))
    );
    assert_eq!(
        doctor(&[], &[("RUMMY_URL", &url), ("RUMMY_TOKEN", &member)]),
        (1, format!("ok   server: reachable at {url}\nFAIL token: valid, but not an admin's: the server's own checks need an admin token in RUMMY_TOKEN\n"))
    );
    assert_eq!(
        doctor(&[], &[("RUMMY_URL", &url), ("RUMMY_TOKEN", "rmy_not_a_token")]),
        (1, format!("ok   server: reachable at {url}\nFAIL token: refused (unknown, revoked or expired): set RUMMY_TOKEN to a token of this server (rummy token create --user NAME --admin, on its machine)\n"))
    );
    assert_eq!(
        doctor(&[], &[("RUMMY_URL", &url), ("RUMMY_TOKEN", &token)]),
        (0, checks("valid (admin)"))
    );
    server.terminate();
}

/// A provider that is down is a red line saying what to check, and so are a model whose
/// provider is not configured and one whose context length nobody knows; the exit code is 1.
/// The key appears nowhere.
#[actix_rt::test]
async fn a_provider_that_is_down_is_a_red_line() {
    let mut provider = FakeProvider::start().unwrap();
    let home = tempfile::TempDir::new().unwrap();
    let base = provider.base_url();
    let mut server = ServerProcess::start(
        home.path(),
        &[
            ("OPENAI_BASE_URL", base.as_str()),
            ("OPENAI_API_KEY", "sk-doctor-secret-key"),
            ("RUMMY_MODEL_fast", "openai/fake-model"),
            ("RUMMY_CONTEXT_fast", "32768"),
            ("RUMMY_MODEL_local", "ollama/qwen"),
            ("RUMMY_MODEL_slow", "openai/other-model"),
        ],
        Stdio::null(),
    );
    provider.stop();
    let url = format!("ws://127.0.0.1:{}/", server.port);
    let (code, out) = doctor(&[], &[("RUMMY_URL", &url)]);
    assert_eq!(code, 1, "{out}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 8, "{out}");
    assert!(
        lines[4].starts_with(&format!("FAIL provider openai ({base}): does not answer: "))
            && lines[4].ends_with(&format!(
                "; check that it runs at {base} and that its key is right"
            )),
        "{out}"
    );
    assert_eq!(
        &lines[5..],
        [
            "ok   model fast (openai/fake-model): context length 32768",
            "FAIL model local (ollama/qwen): provider \"ollama\" for model \"local\" is not configured: set OLLAMA_BASE_URL",
            "FAIL model slow (openai/other-model): context length unknown: the provider does not say; set RUMMY_CONTEXT_slow=<tokens>",
        ]
    );
    assert!(!out.contains("sk-doctor-secret-key"), "{out}");
    server.terminate();
}

/// Nothing listening: the server line is red with what to do, exit 3.
#[test]
fn an_unreachable_server_is_a_red_line() {
    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("ws://127.0.0.1:{}/", free.local_addr().unwrap().port());
    drop(free);
    let (code, out) = doctor(&[], &[("RUMMY_URL", &url)]);
    assert_eq!(code, 3, "{out}");
    assert!(
        out.starts_with(&format!("FAIL server: cannot reach {url} ("))
            && out
                .ends_with("): start it with `rummy serve`, or point RUMMY_URL (or --url) at it\n"),
        "{out}"
    );
}

/// `--health` reads the server's own settings (its home, PORT) and asks /health on loopback
/// without a token: one line and 0 while it serves; 1 once it is gone.
#[actix_rt::test]
async fn health_is_one_line_and_its_exit_code() {
    let provider = FakeProvider::start().unwrap();
    let home = tempfile::TempDir::new().unwrap();
    let mut server = server(home.path(), &provider);
    let port = server.port.to_string();
    let home_str = home.path().display().to_string();
    let vars = [("RUMMY_HOME", home_str.as_str()), ("PORT", port.as_str())];
    assert_eq!(
        doctor(&["--health"], &vars),
        (
            0,
            format!(
                "healthy: rummy {}, database writable, providers: openai (http://127.0.0.1:{port}/health)\n",
                env!("CARGO_PKG_VERSION")
            )
        )
    );
    server.terminate();
    let (code, out) = doctor(&["--health"], &vars);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.starts_with(&format!("unhealthy: http://127.0.0.1:{port}/health: "))
            && out.lines().count() == 1,
        "{out}"
    );
}
