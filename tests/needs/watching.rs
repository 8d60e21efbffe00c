//! Scenarios of the browser test (`browser.rs`, in its one Chromium session) where a person
//! watches work the page does not do itself: a command a CLI runs and streams, and a run's
//! summary the sidecar writes.

use crate::browser::wait_status;
use crate::support::long_run::{answer, prompt, SIDE_MODEL};
use crate::support::TestServer;
use crate::webdriver::{Browser, BROWSER_WAIT};
use pretty_assertions::assert_eq;
use rummy::config::ShellRunner;
use rummy_store::models::ModelSeed;
use rummy_testkit::{Gate, Reply, RpcClient};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Waits until the first element matching `css` reads exactly `text`.
async fn wait_for_exact(page: &Browser, css: &str, text: &str) {
    page.wait_until(
        &format!("{css} to read exactly {text:?}"),
        "const el = document.querySelector(arguments[0]); return !!el && el.textContent === arguments[1];",
        json!([css, text]),
    )
    .await;
}

/// With `RUMMY_COMMAND_RUNNER=client` the page offers no accept for a command (it runs nothing;
/// the `a` key does nothing), the CLI accepts and runs it, and the page watches: each chunk it
/// streams shows as it comes — before the next is sent, stdout and stderr apart — then its exit
/// code, and the run goes on to its next turn, whose model read the output.
pub(crate) async fn output_a_cli_streams_shows_as_it_comes(page: &Browser) {
    let server = TestServer::start_with(|c| c.shell.runner = ShellRunner::Client).await;
    page.start_afresh().await;
    server.provider.push(Reply::content(
        "Running the tests.\n<sh>make test</sh>\n<update status=\"102\">testing</update>",
    ));
    server.provider.push(Reply::content(
        "<update status=\"200\">test b fails: an unused variable</update>",
    ));
    // The CLI: it started the run, and runs what is accepted.
    let mut cli = server.project_client("cli").await;
    cli.call(
        "set",
        json!({ "path": "run://build", "body": "Run the tests", "attributes": { "model": "fast", "mode": "act" } }),
    )
    .await
    .unwrap();
    let proposed = cli
        .next_notification("run/proposal", BROWSER_WAIT)
        .await
        .unwrap()["proposed"][0]
        .clone();
    let path = proposed["path"].as_str().unwrap().to_owned();

    page.goto(&format!("http://127.0.0.1:{}/#/cli/build", server.port()))
        .await;
    page.wait_for_text(".proposal[data-kind=\"sh\"] .runner", "Run by a client")
        .await;
    // The page runs nothing: it offers no accept for a command a client runs, and `a` does
    // nothing; the CLI accepts it, and runs it.
    assert!(page
        .find(".proposal[data-kind=\"sh\"] button.accept")
        .await
        .is_none());
    page.press("a").await;
    page.wait_for(".proposal[data-kind=\"sh\"] button.reject")
        .await;
    cli.call(
        "set",
        json!({ "run": "build", "path": path, "state": "resolved" }),
    )
    .await
    .unwrap();
    let term = ".with-term .term";
    wait_for_exact(page, term, "waiting for the client running it…").await;

    // What the page shows after each chunk: stdout, then stderr, each as far as it came.
    let chunks = [
        (1, "compiling rummy\n"),
        (2, "warning: unused variable `x`\n"),
        (1, "test a ... ok\ntest b ... FAILED\n"),
    ];
    let (mut out, mut err) = (String::new(), String::new());
    for (i, (channel, chunk)) in chunks.into_iter().enumerate() {
        cli.call(
            "stream",
            json!({ "run": "build", "path": path, "channel": channel, "chunk": chunk }),
        )
        .await
        .unwrap();
        let shown = if channel == 1 { &mut out } else { &mut err };
        shown.push_str(chunk);
        wait_for_exact(page, term, &format!("{out}{err}")).await;
        page.wait_for(".with-term .term[data-live=\"1\"]").await;
        if i == 1 {
            page.wait_for_text(".with-term .term .err", "warning: unused variable")
                .await;
            page.screenshot("client-command-streaming").await;
        }
    }
    cli.call(
        "stream/completed",
        json!({ "run": "build", "path": path, "exitCode": 1, "duration": "3.2s" }),
    )
    .await
    .unwrap();
    page.wait_for(".with-term .term[data-live=\"0\"]").await;
    page.wait_for_text(".with-term details.cmd .exit[data-tone=\"bad\"]", "exit 1")
        .await;
    wait_for_exact(page, term, &format!("{out}{err}")).await;
    wait_status(page, 200).await;
    page.wait_for("section.turn[data-turn=\"2\"]").await;
    page.wait_for_text("#runs", "test b fails").await;
    page.screenshot("client-command-done").await;
    let read = server
        .provider
        .chat_requests()
        .last()
        .map(|r| r.raw_body.contains("test b ... FAILED"));
    assert_eq!(read, Some(true), "the model never read the output");
    assert_eq!(page.console_errors().await, Vec::<String>::new());
    cli.close().await;
    server.stop().await;
}

/// The summary the sidecar writes.
const SUMMARY: &str =
    "## Earlier\nThe person asked about the system part by part.\n- every part does its job well\n";

/// Whether the sidecar model was asked anything yet.
fn side_asked(server: &TestServer) -> bool {
    server
        .provider
        .chat_requests()
        .iter()
        .any(|r| r.body["model"] == json!(SIDE_MODEL))
}

/// Continues run `alias` loop after loop until a turn asks the sidecar for a summary (and
/// waits for it: its reply is held); at most 30 loops.
async fn continue_until_summarising(server: &TestServer, client: &mut RpcClient, alias: &str) {
    for n in 1..=30 {
        let before = client
            .call("getRun", json!({ "run": alias, "limit": 0 }))
            .await
            .unwrap()["turn"]
            .as_i64()
            .unwrap_or(0);
        client
            .call(
                "set",
                json!({ "path": format!("run://{alias}"), "body": prompt(n) }),
            )
            .await
            .unwrap();
        let deadline = Instant::now() + BROWSER_WAIT;
        loop {
            if side_asked(server) {
                return;
            }
            let run: Value = client
                .call("getRun", json!({ "run": alias, "limit": 0 }))
                .await
                .unwrap();
            if run["status"] == json!(200) && run["turn"].as_i64().unwrap_or(0) > before {
                break;
            }
            assert!(Instant::now() < deadline, "loop {n} never ended: {run}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    panic!("no summary asked for in 30 loops");
}

/// A run that summarises what leaves its context: while a turn waits for the sidecar's summary
/// the page says so as the run's activity (`run/progress` `sidecar`); then the summary shows
/// beside the run — not in the timeline — and the loop goes on to its end.
pub(crate) async fn the_summary_shows_beside_the_run(page: &Browser) {
    let server = TestServer::start_with(|c| {
        c.models.push(ModelSeed {
            alias: "side".into(),
            actual: format!("openai/{SIDE_MODEL}"),
            context_length: Some(32_768),
            fallback: None,
        });
        c.sidecar.model = Some("side".into());
        // The summary's reply is held until the page showed the wait: past this it would fall back.
        c.sidecar.timeout_ms = 600_000;
    })
    .await;
    let gate = Gate::new();
    let held = gate.clone();
    let turns = AtomicUsize::new(0);
    server.provider.set_responder(move |body| {
        if body["model"] == json!(SIDE_MODEL) {
            Reply::content(SUMMARY).held(&held)
        } else {
            Reply::content(answer(turns.fetch_add(1, Ordering::SeqCst)))
        }
    });
    page.start_afresh().await;
    let mut client = server.project_client("sums").await;
    client
        .call(
            "set",
            json!({ "path": "run://s", "body": prompt(0), "attributes": { "model": "fast", "contextLimit": 8192, "summarize": true } }),
        )
        .await
        .unwrap();
    crate::support::wait_status(&mut client, "s", 200).await;

    page.goto(&format!("http://127.0.0.1:{}/#/sums/s", server.port()))
        .await;
    wait_status(page, 200).await;
    continue_until_summarising(&server, &mut client, "s").await;
    page.wait_for_text(
        "#progress[data-status=\"sidecar\"]",
        "sidecar — summarising what leaves the context",
    )
    .await;
    page.screenshot("sidecar-waiting").await;

    gate.open();
    page.wait_for_text(
        "#summary",
        "The person asked about the system part by part.",
    )
    .await;
    page.wait_for_text("#summary", "every part does its job well")
        .await;
    wait_status(page, 200).await;
    wait_for_exact(page, "#progress", "").await;
    let in_timeline = page
        .run(
            "return document.querySelectorAll('#timeline [data-path^=\"summary://\"]').length;",
            json!([]),
        )
        .await;
    assert_eq!(in_timeline, json!(0), "the summary is shown as a command");
    page.screenshot("summary").await;
    assert_eq!(page.console_errors().await, Vec::<String>::new());
    client.close().await;
    server.stop().await;
}
