//! `rummy doctor`, the real binary against a real server and the fake
//! provider: a healthy setup line by line, a token missing or invalid, a provider that is down,
//! a server that cannot be reached; the command sandbox's layers, found, refused and let run
//! unconfined; and `rummy doctor --health`, a container's HEALTHCHECK.

use crate::support::process::ServerProcess;
use crate::support::TestServer;
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

/// The same, run off the async runtime (an in-process server must keep serving meanwhile).
async fn doctor_beside(args: &[&str], vars: &[(&str, &str)]) -> (i32, String) {
    let args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
    let vars: Vec<(String, String)> = vars
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    actix_rt::task::spawn_blocking(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let vars: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        doctor(&args, &vars)
    })
    .await
    .unwrap()
}

/// Doctor's output split in two: the command sandbox's lines (`sandbox …` and `commands`), and
/// the rest.
fn sandbox_lines(out: &str) -> (Vec<String>, String) {
    let (sandbox, rest): (Vec<&str>, Vec<&str>) = out.lines().partition(|l| {
        l.get(5..)
            .is_some_and(|l| l.starts_with("sandbox ") || l.starts_with("commands: "))
    });
    let rest: String = rest.iter().map(|l| format!("{l}\n")).collect();
    (sandbox.into_iter().map(str::to_owned).collect(), rest)
}

/// The sandbox's layers as doctor labels them, in its order.
const LAYER_LABELS: [&str; 7] = [
    "user namespace",
    "file system (Landlock)",
    "private root (mount namespace)",
    "processes (PID namespace)",
    "/proc isolation",
    "network (own namespace)",
    "limits",
];

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
    let without_sandbox = |(code, out): (i32, String)| (code, sandbox_lines(&out).1);
    assert_eq!(
        without_sandbox(doctor(&[], &[("RUMMY_URL", &url)])),
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
        without_sandbox(doctor(&[], &[("RUMMY_URL", &url), ("RUMMY_TOKEN", &token)])),
        (0, checks("valid (admin)"))
    );
    server.terminate();
}

/// The server's answer lists every layer of the command sandbox by name, in order, with which
/// are required, and the mode; doctor prints one line per layer and one for what commands get.
/// On this machine (root, a kernel with Landlock) every required layer is there: they are `ok`,
/// commands run in the sandbox, and the exit code is 0; the limits (a cgroup or not, by machine)
/// are `ok` or a warning.
#[actix_rt::test]
async fn doctor_lists_every_sandbox_layer_and_what_commands_get() {
    let provider = FakeProvider::start().unwrap();
    provider.set_models(json!({ "object": "list", "data": [{ "id": "fake-model" }] }));
    let home = tempfile::TempDir::new().unwrap();
    let mut server = server(home.path(), &provider);
    let url = format!("ws://127.0.0.1:{}/", server.port);

    let mut client = RpcClient::connect(&url).await.unwrap();
    let answer = client.call("server/doctor", json!({})).await.unwrap();
    let sandbox = &answer["sandbox"];
    let layers = sandbox["layers"].as_array().unwrap();
    let fields =
        |key: &str| -> Vec<serde_json::Value> { layers.iter().map(|l| l[key].clone()).collect() };
    assert_eq!(
        (
            sandbox["mode"].clone(),
            sandbox["missing"].clone(),
            fields("name"),
            fields("label"),
            fields("required"),
        ),
        (
            json!("confined"),
            json!(""),
            [
                "userNamespace",
                "landlock",
                "mountNamespace",
                "pidNamespace",
                "proc",
                "network",
                "limits"
            ]
            .map(|n| json!(n))
            .to_vec(),
            LAYER_LABELS.map(|n| json!(n)).to_vec(),
            [false, true, false, true, true, true, false]
                .map(|r| json!(r))
                .to_vec(),
        )
    );
    for layer in layers {
        let name = layer["name"].as_str().unwrap();
        assert!(
            layer["detail"].as_str().is_some_and(|d| !d.is_empty()),
            "{name}: {layer}"
        );
        if name != "limits" {
            assert_eq!(layer["ok"], json!(true), "{name}: {layer}");
        }
    }
    drop(client);

    let (code, out) = doctor(&[], &[("RUMMY_URL", &url)]);
    let (lines, _) = sandbox_lines(&out);
    assert_eq!(code, 0, "{out}");
    let heads: Vec<String> = lines
        .iter()
        .map(|l| l.split(": ").next().unwrap().to_owned())
        .collect();
    let limits = heads[6].clone();
    assert!(
        ["ok   sandbox limits", "warn sandbox limits"].contains(&limits.as_str()),
        "{out}"
    );
    let mut expected: Vec<String> = LAYER_LABELS[..6]
        .iter()
        .map(|label| format!("ok   sandbox {label}"))
        .collect();
    expected.push(limits);
    expected.push("ok   commands".to_owned());
    assert_eq!(heads, expected);
    assert_eq!(
        lines.last().map(String::as_str),
        Some("ok   commands: accepted commands run in the sandbox")
    );
    for (line, layer) in lines.iter().zip(layers) {
        assert!(
            line.ends_with(&format!(": {}", layer["detail"].as_str().unwrap()))
                || line.starts_with("warn "),
            "{line}"
        );
    }
    server.terminate();
}

/// A server whose sandbox helper cannot start has every layer missing and runs no command:
/// each required layer is a red line with what to do, the optional ones yellow, the commands
/// line red saying how to run them unconfined, and the exit code 1. Once an admin lets
/// commands run unconfined (`RUMMY_UNSANDBOXED_COMMANDS=1`) the same layers are yellow, the
/// commands line says UNCONFINED, and the exit code is 0.
#[actix_rt::test]
async fn a_missing_sandbox_layer_is_red_until_commands_may_run_unconfined() {
    let helper = "/nonexistent/rummy";
    let why =
        format!("cannot start the sandbox helper {helper}: No such file or directory (os error 2)");
    let ns = "let the server make mount, PID, IPC, UTS and network namespaces (under systemd RestrictNamespaces= naming them and SystemCallFilter= with @mount; in a container seccomp and AppArmor profiles that allow unshare and mount)";
    let layer_lines = |required: &str| {
        vec![
            format!("warn sandbox user namespace: {why}: allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1 and kernel.apparmor_restrict_unprivileged_userns=0 where they exist; under systemd RestrictNamespaces= naming user; in a container seccomp and AppArmor profiles that allow them)"),
            format!("{required} sandbox file system (Landlock): {why}: run a kernel with Landlock (5.13 or later, landlock in its lsm= list) and let the server call it (under systemd SystemCallFilter= naming the landlock_* calls; in a container a seccomp profile that allows them)"),
            format!("warn sandbox private root (mount namespace): {why}: {ns}"),
            format!("{required} sandbox processes (PID namespace): {why}: {ns}"),
            format!("{required} sandbox /proc isolation: {why}: let the server mount a /proc of its own (under systemd no ProtectKernelTunables= or ProtectKernelLogs=; in Docker security_opt systempaths=unconfined)"),
            format!("{required} sandbox network (own namespace): {why}: {ns}"),
            format!("warn sandbox limits: {why}: give the server a writable pids cgroup (/sys/fs/cgroup/rummy-commands on cgroup v2) or run it as a user other than root, whose processes RLIMIT_NPROC counts"),
        ]
    };

    let mut server = TestServer::start_with(|c| {
        c.shell.sandbox.helper = Some(helper.into());
    })
    .await;
    server
        .provider
        .set_models(json!({ "object": "list", "data": [{ "id": "fake-model" }] }));
    let url = server.url();
    let (code, out) = doctor_beside(&[], &[("RUMMY_URL", &url)]).await;
    let mut expected = layer_lines("FAIL");
    expected.push("FAIL commands: the server runs no accepted command itself (a client runner still may): give it the missing layers, or set RUMMY_UNSANDBOXED_COMMANDS=1 to run commands unconfined".to_owned());
    assert_eq!((code, sandbox_lines(&out).0), (1, expected), "{out}");
    let mut client = server.client().await;
    let answer = client.call("server/doctor", json!({})).await.unwrap();
    assert_eq!(
        (
            answer["sandbox"]["mode"].clone(),
            answer["sandbox"]["missing"].clone()
        ),
        (
            json!("refused"),
            json!(format!(
                "file system (Landlock), processes (PID namespace), /proc isolation, \
                 network (own namespace): {why}"
            ))
        )
    );
    drop(client);

    server
        .restart_with(|c| {
            c.shell.sandbox.helper = Some(helper.into());
            c.shell.sandbox.unsandboxed = true;
        })
        .await;
    let url = server.url();
    let (code, out) = doctor_beside(&[], &[("RUMMY_URL", &url)]).await;
    let mut expected = layer_lines("warn");
    expected.push("warn commands: accepted commands run UNCONFINED (RUMMY_UNSANDBOXED_COMMANDS=1): give the server the missing layers to confine them".to_owned());
    assert_eq!((code, sandbox_lines(&out).0), (0, expected), "{out}");
    server.stop().await;
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
    let rest = sandbox_lines(&out).1;
    let lines: Vec<&str> = rest.lines().collect();
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
