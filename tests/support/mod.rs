//! Test harness: starts `rummy::serve` in-process against the testkit's fake provider, and connects clients.

pub mod database;
pub mod long_run;
pub mod process;
pub mod procs;
pub mod raw;

use rummy::config::{Config, OpenAiConfig};
use rummy::ServerHandle;
use rummy_store::models::ModelSeed;
use rummy_testkit::{FakeProvider, RpcClient};
use serde_json::{json, Value};
use std::time::Duration;
use tempfile::TempDir;

/// How long a test waits for an event before failing: long, so a machine busy with other work
/// (CI, a build beside the tests) does not fail a test that would pass; a passing test never
/// waits it out.
pub const WAIT: Duration = Duration::from_secs(30);

/// A running server with its fake provider and temp home.
pub struct TestServer {
    /// The server.
    pub handle: Option<ServerHandle>,
    /// The fake OpenAI-compatible provider the `fast` model points at.
    pub provider: FakeProvider,
    /// `RUMMY_HOME`, deleted when the test ends.
    _home: TempDir,
    /// `RUMMY_COMMAND_HOMES` (outside `RUMMY_HOME`, as it must be), deleted when the test ends.
    _command_homes: TempDir,
}

/// A configuration with model `fast` → `openai/fake-model` on the fake provider, on the home's
/// database ([`database::of_home`]).
pub fn config(provider: &FakeProvider, home: &TempDir) -> Config {
    let mut config = database::on_home_database(Config::with_home(home.path().to_path_buf()));
    config.port = 0;
    config.models = vec![ModelSeed {
        alias: "fast".into(),
        actual: "openai/fake-model".into(),
        context_length: Some(32_768),
        fallback: None,
    }];
    config.providers.openai = Some(OpenAiConfig {
        base_url: provider.base_url(),
        api_key: Some("sk-test-secret".into()),
    });
    config
}

impl TestServer {
    /// Starts a server with the default test configuration.
    pub async fn start() -> TestServer {
        Self::start_with(|_| {}).await
    }

    /// Starts a server after `adjust` changed the default test configuration.
    pub async fn start_with(adjust: impl FnOnce(&mut Config)) -> TestServer {
        let provider = FakeProvider::start().expect("fake provider starts");
        let home = TempDir::new().expect("temp home");
        let command_homes = TempDir::new().expect("temp command homes");
        let mut config = config(&provider, &home);
        config.shell.sandbox.homes = Some(command_homes.path().to_path_buf());
        adjust(&mut config);
        let handle = rummy::serve(config, std::future::pending())
            .await
            .expect("server starts");
        TestServer {
            handle: Some(handle),
            provider,
            _home: home,
            _command_homes: command_homes,
        }
    }

    /// `RUMMY_HOME` of this server.
    pub fn home(&self) -> &std::path::Path {
        self._home.path()
    }

    /// The database this server uses (its home's, kept across restarts): for a test that
    /// looks under the server, on either backend.
    pub fn database(&self) -> rummy_store::location::Location {
        database::of_home(self.home())
    }

    /// The bound port.
    pub fn port(&self) -> u16 {
        self.handle.as_ref().map_or(0, |h| h.addr().port())
    }

    /// The WebSocket URL.
    pub fn url(&self) -> String {
        self.handle
            .as_ref()
            .map(ServerHandle::ws_url)
            .unwrap_or_default()
    }

    /// A connected client, not yet bound to a project.
    pub async fn client(&self) -> RpcClient {
        RpcClient::connect(&self.url())
            .await
            .expect("client connects")
    }

    /// The root of project `name` for this server's tests: a new empty directory in the temp
    /// home (its real path, as the server stores it), made on first use.
    pub fn project_root(&self, name: &str) -> String {
        let dir = self._home.path().join("projects").join(name);
        std::fs::create_dir_all(&dir).expect("project directory");
        dir.canonicalize()
            .expect("project directory")
            .display()
            .to_string()
    }

    /// A client bound to project `name` (root [`TestServer::project_root`]).
    pub async fn project_client(&self, name: &str) -> RpcClient {
        let mut client = self.client().await;
        client
            .call(
                "rummy/hello",
                json!({ "name": name, "projectRoot": self.project_root(name) }),
            )
            .await
            .expect("hello succeeds");
        client
    }

    /// Stops the server and starts it again on the same home and fake provider, after
    /// `adjust` changed the default test configuration: a restart.
    pub async fn restart_with(&mut self, adjust: impl FnOnce(&mut Config)) {
        if let Some(handle) = self.handle.take() {
            handle.stop().await;
        }
        let mut config = config(&self.provider, &self._home);
        config.shell.sandbox.homes = Some(self._command_homes.path().to_path_buf());
        adjust(&mut config);
        // The stopped server's lock is an flock on a close-on-exec file, but a process another
        // test forks at that moment holds a copy of it until its exec: this process's own lock
        // may so outlive the stop by a moment. Another process's lock is never waited for.
        let mut tries = 0;
        let handle = loop {
            match rummy::serve(config.clone(), std::future::pending()).await {
                Err(rummy::ServeError::Locked(held))
                    if held.pid == std::process::id() && tries < 50 =>
                {
                    tries += 1;
                    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                }
                started => break started.expect("server restarts"),
            }
        };
        self.handle = Some(handle);
    }

    /// Stops the server.
    pub async fn stop(mut self) {
        if let Some(handle) = self.handle.take() {
            handle.stop().await;
        }
    }
}

/// Starts a run and answers its alias.
pub async fn start_run(client: &mut RpcClient, path: &str, prompt: &str) -> String {
    let result = client
        .call(
            "set",
            json!({ "path": path, "body": prompt, "attributes": { "model": "fast" } }),
        )
        .await
        .expect("run starts");
    assert_eq!(result["ok"], json!(true));
    result["alias"].as_str().expect("alias").to_owned()
}

/// The run's entries of `scheme` (`file` for bare paths), with bodies, as `getEntries` lists them.
pub async fn scheme_entries(client: &mut RpcClient, run: &str, scheme: &str) -> Vec<Value> {
    let list = client
        .call(
            "getEntries",
            json!({ "run": run, "scheme": scheme, "withBody": true }),
        )
        .await
        .unwrap();
    list.as_array().expect("a list").clone()
}

/// One entry of the run by exact path, with its body.
pub async fn entry(client: &mut RpcClient, run: &str, path: &str) -> Option<Value> {
    let scheme = path.split_once("://").map_or("file", |(scheme, _)| scheme);
    scheme_entries(client, run, scheme)
        .await
        .into_iter()
        .find(|e| e["path"] == json!(path))
}

/// Accepts the proposal at `path` of `run` (`set {state: "resolved"}`); the call's result.
pub async fn accept(client: &mut RpcClient, run: &str, path: &str) -> Value {
    client
        .call(
            "set",
            json!({ "run": run, "path": path, "state": "resolved" }),
        )
        .await
        .unwrap_or_else(|e| panic!("accepting {path} of {run}: {e:?}"))
}

/// Every `run/state` from now up to and including the first with `status`, in order.
pub async fn states_until(client: &mut RpcClient, status: i64) -> Vec<Value> {
    let mut states = Vec::new();
    loop {
        let state = client
            .next_notification("run/state", WAIT)
            .await
            .expect("run/state arrives");
        let done = state["status"] == json!(status);
        states.push(state);
        if done {
            return states;
        }
    }
}

/// Waits for the `run/state` of `run` with the given status.
pub async fn wait_status(client: &mut RpcClient, run: &str, status: i64) -> Value {
    let run = run.to_owned();
    client
        .wait_for_notification("run/state", WAIT, move |p| {
            p["run"] == json!(run) && p["status"] == json!(status)
        })
        .await
        .unwrap_or_else(|e| panic!("no run/state with status {status}: {e:?}"))
}

/// The user message's `<prompt>` element without its budget figures
/// (`tokensFree`, `tokenUsage`), which move with every change to the docs.
pub fn prompt_element(user_message: &str) -> String {
    let start = user_message
        .rfind("<prompt")
        .expect("the user message ends with <prompt>");
    let mut element = user_message[start..].to_owned();
    for attribute in [" tokensFree=\"", " tokenUsage=\""] {
        if let Some(at) = element.find(attribute) {
            let value_end = element[at + attribute.len()..]
                .find('"')
                .map(|end| at + attribute.len() + end + 1)
                .expect("a closed attribute");
            element.replace_range(at..value_end, "");
        }
    }
    element
}
