//! The web page in a real browser: headless Chromium over WebDriver, real
//! clicks and keys against the real server and the fake provider. Screenshots are kept in
//! `target/browser-artifacts/`.

use crate::notices::notices_show_as_toasts;
use crate::parts::{browser, Need};
use crate::shapes::a_proposal_of_an_unexpected_shape_shows_as_text;
use crate::support::{TestServer, WAIT};
use crate::watching::{output_a_cli_streams_shows_as_it_comes, the_summary_shows_beside_the_run};
use crate::webdriver::{Browser, BROWSER_WAIT};
use pretty_assertions::assert_eq;
use rummy_testkit::{Gate, Reply, RpcClient};
use serde_json::{json, Value};
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The browser's test: it needs Chromium and its WebDriver.
pub fn register(suites: &mut crate::Suites, need: &Need) {
    suites.add_async(
        "browser::the_page_in_a_real_browser",
        need,
        the_page_in_a_real_browser,
    );
}

/// The web page in one headless Chromium session, scenario after scenario, each against a
/// server of its own (so its own origin and storage): starting the browser is the heaviest
/// thing the suite does, and one session at a time keeps a 2-core machine free for the rest.
async fn the_page_in_a_real_browser() {
    let (chromium, driver) = browser().expect("a browser");
    let page = Browser::start(&chromium, &driver, 1440, 900).await;
    // The long run first: its memory is measured in a renderer no other page has used.
    a_long_run_opens_quickly(&page).await;
    a_person_works_runs(&page).await;
    output_a_cli_streams_shows_as_it_comes(&page).await;
    the_session_state_shows_beside_the_run(&page).await;
    the_summary_shows_beside_the_run(&page).await;
    a_call_of_an_editors_tool_is_accepted_on_the_page(&page).await;
    a_proposal_of_an_unexpected_shape_shows_as_text(&page).await;
    notices_show_as_toasts(&page).await;
    page.quit().await;
}

/// Waits until `path` holds `content` on disk.
async fn wait_for_file(path: &Path, content: &str) {
    let deadline = Instant::now() + BROWSER_WAIT;
    while std::fs::read_to_string(path).ok().as_deref() != Some(content) {
        assert!(
            Instant::now() < deadline,
            "{} never held {content:?}",
            path.display()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Waits until the open run's view says `status`.
pub(crate) async fn wait_status(page: &Browser, status: i64) {
    page.wait_for(&format!("#run[data-status=\"{status}\"]"))
        .await;
}

/// The value of the series `name` (labels included) on the server's `/metrics`, read from
/// loopback.
async fn series(server: &TestServer, name: &str) -> f64 {
    let text = reqwest::get(format!("http://127.0.0.1:{}/metrics", server.port()))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no {name} in\n{text}"))
}

/// The WebSocket messages the server has received.
const MESSAGES_IN: &str = "rummy_websocket_messages_total{direction=\"in\"}";

/// Waits until the server holds no connection.
async fn wait_no_connection(server: &TestServer) {
    let deadline = Instant::now() + WAIT;
    while series(server, "rummy_websocket_connections").await != 0.0 {
        assert!(Instant::now() < deadline, "connections stay open");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A client of the server with `token`.
async fn with_token(server: &TestServer, token: &str) -> RpcClient {
    RpcClient::connect_with_headers(
        &server.url(),
        &[("Authorization", &format!("Bearer {token}"))],
    )
    .await
    .unwrap()
}

/// A person signs in with a token, starts a run in act mode, watches it stream, accepts an
/// edit by keyboard (the file changes on disk), rejects one with a reason (the file stays and
/// the model reads the reason), accepts a command and watches its output stream, injects into
/// and cancels a running run, and — after the server restarts on the
/// same port — sees what happened while the page was away, without reloading; then forks.
async fn a_person_works_runs(page: &Browser) {
    let mut server = TestServer::start().await;
    let root = server.project_root("team");
    std::fs::write(format!("{root}/b.txt"), "old\n").unwrap();
    std::fs::write(format!("{root}/c.txt"), "keep\n").unwrap();
    let mut owner = server.project_client("team").await;
    let made = owner
        .call("token/create", json!({ "user": "ops", "admin": true }))
        .await
        .unwrap();
    let token = made["token"].as_str().unwrap().to_owned();
    owner.close().await;

    let provider = &server.provider;
    provider.push(
        Reply::content(
            "I will read b.txt first, then change it.\n<get path=\"b.txt\"/>\n<set path=\"unknown://style\">Which style does the team use?</set>\n<update status=\"102\">reading</update>",
        )
        .chunk_delay(Duration::from_millis(30)),
    );
    provider.push(Reply::content(
        "<set path=\"b.txt\"><<<<<<< SEARCH\nold\n=======\nnew\n>>>>>>> REPLACE</set>\n<update status=\"102\">edited b</update>",
    ));
    provider.push(Reply::content(
        "<set path=\"c.txt\"><<<<<<< SEARCH\nkeep\n=======\ngone\n>>>>>>> REPLACE</set>\n<update status=\"102\">edited c</update>",
    ));
    provider.push(Reply::content(
        "Now a build, to be sure.\n<sh>printf 'step 1\\n'; sleep 1; printf 'step 2\\n'; echo 'a warning' >&2</sh>\n<update status=\"102\">building</update>",
    ));
    provider.push(Reply::content(
        "<update status=\"200\">b.txt now says new</update>",
    ));

    page.start_afresh().await;
    let base = format!("http://127.0.0.1:{}/", server.port());
    wait_no_connection(&server).await;
    let heard = series(&server, MESSAGES_IN).await;
    page.goto(&base).await;
    page.wait_for("#sign-in #token").await;
    page.screenshot("sign-in").await;
    // The page asks for the token before it connects: nothing reaches the server without one.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        (
            series(&server, "rummy_websocket_connections").await,
            series(&server, MESSAGES_IN).await
        ),
        (0.0, heard)
    );
    page.type_into("#token", &token).await;
    page.click("#sign-in button[type=submit]").await;
    page.wait_for(".chip[aria-current=\"true\"]").await;
    page.wait_for_text("#conn", "live").await;

    // Start a run from the page.
    page.click("#new-run").await;
    page.click("#mode option[value=act]").await;
    page.type_into("#alias", "edit").await;
    page.type_into("#new-prompt", "Change b.txt to say new")
        .await;
    page.click("#start").await;
    page.wait_for("#run[data-run=\"edit\"]").await;
    page.wait_for_text(".reply[data-turn=\"1\"]", "I will read b.txt first")
        .await;
    page.wait_for_text("#unknowns", "Which style does the team use?")
        .await;

    // Accept the first edit with the keyboard: the file changes on disk.
    page.wait_for(".proposal[data-kind=\"edit\"]").await;
    page.wait_until(
        "the tab's title to count the proposal",
        "return document.title === '(1) edit · rummy';",
        json!([]),
    )
    .await;
    page.wait_for_text(".proposal .diff", "+new").await;
    page.screenshot("proposal-unified").await;
    page.click(".proposal .seg button:nth-child(2)").await;
    page.wait_for(".diff[data-mode=\"split\"]").await;
    page.screenshot("proposal-side-by-side").await;
    page.press("a").await;
    wait_for_file(&Path::new(&root).join("b.txt"), "new\n").await;

    // Reject the second with a reason, typed after `r`.
    page.wait_for_text(".proposal .diff", "gone").await;
    page.press("r").await;
    page.type_into(".proposal input.reason", "keep c.txt as it is\u{E007}")
        .await;

    // Accept a command with a click: its output streams into the page, stderr apart.
    page.wait_for(".proposal[data-kind=\"sh\"]").await;
    page.screenshot("proposal-command").await;
    page.click(".proposal[data-kind=\"sh\"] .accept").await;
    page.wait_for_text(".with-term .term", "step 1").await;
    page.screenshot("command-streaming").await;
    page.wait_for_text(".with-term .term", "step 2").await;
    page.wait_for_text(".with-term .term .err", "a warning")
        .await;
    wait_status(page, 200).await;
    page.wait_for_text("#runs", "b.txt now says new").await;
    page.screenshot("run-done").await;
    assert_eq!(
        std::fs::read_to_string(Path::new(&root).join("c.txt")).unwrap(),
        "keep\n"
    );
    let told = provider.chat_requests();
    assert!(
        told.iter()
            .any(|r| r.raw_body.contains("keep c.txt as it is")),
        "the model never read the reason"
    );

    // Cancel a run while its model call hangs.
    let gate = Gate::new();
    provider.push(Reply::content("<update status=\"200\">too late</update>").held(&gate));
    page.click("#new-run").await;
    page.type_into("#alias", "slow").await;
    page.type_into("#new-prompt", "Take your time").await;
    page.click("#start").await;
    page.wait_for("#run[data-run=\"slow\"]").await;
    wait_status(page, 102).await;
    page.type_into("#prompt", "Mind the tests").await;
    page.click("#send").await;
    page.wait_for_text(".toast", "Injected").await;
    page.click("#cancel").await;
    wait_status(page, 499).await;
    gate.open();

    // Up to here nothing went wrong in the page: no script error, nothing the policy refused.
    assert_eq!(page.console_errors().await, Vec::<String>::new());

    // The server restarts on the same port; meanwhile another client goes on with the run.
    page.click("a[data-run=\"edit\"]").await;
    wait_status(page, 200).await;
    let port = server.port();
    server.restart_with(|c| c.port = port).await;
    provider_after_restart(&server);
    let mut other = with_token(&server, &token).await;
    other
        .call("rummy/hello", json!({ "name": "team", "token": token }))
        .await
        .unwrap();
    other
        .call(
            "set",
            json!({ "path": "run://edit", "body": "And after the restart?" }),
        )
        .await
        .unwrap();
    crate::support::wait_status(&mut other, "edit", 200).await;
    page.wait_for_text("#conn", "live").await;
    page.wait_for_text("#timeline", "And after the restart?")
        .await;
    page.wait_for_text("#runs", "still here").await;
    page.screenshot("after-restart").await;

    // Fork the run from the page: the fork starts with the parent's entries and runs.
    server.provider.push(Reply::content(
        "<update status=\"200\">forked and done</update>",
    ));
    page.click("#fork").await;
    page.type_into("#fork-prompt", "Try another way").await;
    page.click("#fork-form button[type=submit]").await;
    page.wait_for("#run[data-run=\"edit_fork\"]").await;
    wait_status(page, 200).await;
    page.wait_for_text("#runs", "forked and done").await;

    // The dark theme, for the record.
    page.press("t").await;
    page.wait_until(
        "the theme to change",
        "return !!document.documentElement.dataset.theme;",
        json!([]),
    )
    .await;
    page.screenshot("run-dark").await;
    server.stop().await;
}

fn provider_after_restart(server: &TestServer) {
    server
        .provider
        .push(Reply::content("<update status=\"200\">still here</update>"));
}

/// The model's reply for turn `turn` of the long run: two facts (each a `known://` entry and
/// its `set://` log), and a status that goes on until turn 200: with the prompt, 1,001 entries.
fn long_turn(turn: usize) -> String {
    let facts: String = (0..2)
        .map(|i| format!("<set path=\"known://t{turn}/f{i}\">fact {i} of turn {turn}</set>"))
        .collect();
    let status = if turn >= 200 { 200 } else { 102 };
    format!(
        "Turn {turn}: noting two facts.\n{facts}<update status=\"{status}\">turn {turn}</update>"
    )
}

/// A run of 1,000 entries and 200 turns opens fast: the page asks for its newest page of
/// history (`getRun {limit: 200}`), not all of it. Prints the time to the run's first paint,
/// the tab's JS heap and DOM size, and what paging saves on the wire.
async fn a_long_run_opens_quickly(page: &Browser) {
    let server = TestServer::start_with(|c| {
        c.limits.max_turns = 250;
        c.models[0].context_length = Some(1_000_000);
    })
    .await;
    let turn = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&turn);
    server.provider.set_responder(move |_| {
        Reply::content(long_turn(counter.fetch_add(1, Ordering::SeqCst) + 1))
    });
    let mut client = server.project_client("long").await;
    client
        .call(
            "set",
            json!({ "path": "run://long", "body": "Take many notes", "attributes": { "model": "fast" } }),
        )
        .await
        .unwrap();
    client
        .wait_for_notification("run/state", Duration::from_secs(600), |p| {
            p["run"] == json!("long") && p["status"] != json!(102) && p["status"] != json!(100)
        })
        .await
        .unwrap();
    let whole = client
        .call("getRun", json!({ "run": "long" }))
        .await
        .unwrap();
    let paged = client
        .call("getRun", json!({ "run": "long", "limit": 200 }))
        .await
        .unwrap();
    let entries = whole["history"].as_array().map_or(0, Vec::len);
    assert_eq!(
        (
            whole["status"].clone(),
            whole["turn"].clone(),
            paged["historyTotal"].clone()
        ),
        (json!(200), json!(200), json!(entries))
    );
    assert_eq!(entries, 1001);

    page.console_errors().await;
    page.goto(&format!("http://127.0.0.1:{}/#/long/long", server.port()))
        .await;
    page.wait_until(
        "the run's first paint",
        "return performance.getEntriesByName('rummy:run-painted').length > 0;",
        json!([]),
    )
    .await;
    page.wait_for_text("#timeline", "Turn 200").await;
    let measured = page
        .run(
            "const paint = performance.getEntriesByName('rummy:run-painted')[0].startTime;\
             const fcp = (performance.getEntriesByName('first-contentful-paint')[0] || {}).startTime || 0;\
             if (window.gc) gc(); const heap = performance.memory ? performance.memory.usedJSHeapSize : 0;\
             return {paint, fcp, heap, nodes: document.getElementsByTagName('*').length};",
            json!([]),
        )
        .await;
    page.screenshot("long-run").await;
    // Another loop's turn arrives: what drawing its pushes costs with 200 turns on the page.
    client
        .call("set", json!({ "path": "run://long", "body": "One more" }))
        .await
        .unwrap();
    page.wait_for_text("#timeline", "Turn 201").await;
    page.wait_for("#run[data-status=\"200\"]").await;
    let redraw = page
        .run(
            "return performance.getEntriesByName('rummy:draw', 'measure')[0].duration;",
            json!([]),
        )
        .await;
    assert_eq!(page.console_errors().await, Vec::<String>::new());
    // Reaching back a page shows earlier turns.
    let shown = page
        .run(
            "return document.querySelectorAll('section.turn').length;",
            json!([]),
        )
        .await;
    page.click("#older").await;
    page.wait_until(
        "an earlier page",
        "return document.querySelectorAll('section.turn').length > arguments[0];",
        json!([shown]),
    )
    .await;
    let after = page
        .run(
            "if (window.gc) gc(); return {heap: performance.memory ? performance.memory.usedJSHeapSize : 0, nodes: document.getElementsByTagName('*').length};",
            json!([]),
        )
        .await;
    let mb = |v: &Value| v.as_f64().unwrap_or(0.0) / 1_048_576.0;
    // Straight to stderr, so `cargo test` shows the figures without --nocapture.
    let _ = writeln!(
        std::io::stderr(),
        "web page, run of {entries} entries and 200 turns: first paint of the run {:.0} ms after navigation (first contentful paint {:.0} ms); drawing a push {:.1} ms; tab JS heap {:.1} MB, {} DOM nodes (one earlier page loaded: {:.1} MB, {} nodes); getRun {{limit: 200}} {} KB vs the whole history {} KB",
        measured["paint"].as_f64().unwrap_or(0.0),
        measured["fcp"].as_f64().unwrap_or(0.0),
        redraw.as_f64().unwrap_or(0.0),
        mb(&measured["heap"]),
        measured["nodes"],
        mb(&after["heap"]),
        after["nodes"],
        paged.to_string().len() / 1024,
        whole.to_string().len() / 1024,
    );
    assert!(measured["paint"].as_f64().unwrap_or(f64::MAX) < WAIT.as_millis() as f64);
    server.stop().await;
}

/// A run that keeps a session state shows it beside its timeline once its loop has ended (the
/// sidecar wrote it), read with `getEntries` since it is no entry of the run's history page;
/// continued from the page, the model asks a question the page answers, and the loop's end
/// brings the new state in live. On a narrow screen the panels stack.
/// A call of a tool an editor offers shows on the page as the tool and its arguments; accepted
/// there, the editor (not the page) calls it, and its answer shows as it arrives.
async fn a_call_of_an_editors_tool_is_accepted_on_the_page(page: &Browser) {
    let server = TestServer::start().await;
    server.provider.push(Reply::content(
        "<call server=\"everything\" tool=\"echo\">{\"message\": \"hi from the page\"}</call>\n<update status=\"102\">calling</update>",
    ));
    server
        .provider
        .push(Reply::content("<update status=\"200\">echoed</update>"));
    let mut editor = server.project_client("tools").await;
    let tools = json!([{ "server": "everything", "name": "echo", "description": "Echoes back the input.",
        "inputSchema": {"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"]} }]);
    editor
        .call("tools/offer", json!({ "run": "c", "tools": tools }))
        .await
        .unwrap();
    editor
        .call(
            "set",
            json!({ "path": "run://c", "body": "Echo something", "attributes": { "model": "fast", "mode": "act" } }),
        )
        .await
        .unwrap();
    page.goto(&format!("http://127.0.0.1:{}/#/tools/c", server.port()))
        .await;
    page.wait_for_text(".proposal[data-kind=\"call\"]", "everything/echo")
        .await;
    page.wait_for_text(".proposal[data-kind=\"call\"]", "hi from the page")
        .await;
    page.screenshot("proposal-call").await;
    page.click(".proposal[data-kind=\"call\"] .accept").await;
    let call = editor.next_notification("tool/call", WAIT).await.unwrap();
    editor
        .call(
            "tool/result",
            json!({ "run": "c", "path": call["path"], "content": "Echo: hi from the page" }),
        )
        .await
        .unwrap();
    page.wait_for_text("pre.term", "Echo: hi from the page")
        .await;
    wait_status(page, 200).await;
    server.stop().await;
}

async fn the_session_state_shows_beside_the_run(page: &Browser) {
    let server = TestServer::start_with(|c| {
        c.session_state.enabled = true;
        c.session_state.thresholds.min_turns = 1;
    })
    .await;
    server
        .provider
        .push(Reply::content("<update status=\"200\">noted</update>"));
    server.provider.push(Reply::content(
        "## Title\nShip the web page\n## Current state\nthe page is served and tested\n## Next steps\n- screenshots in the README\n",
    ));
    let mut client = server.project_client("memo").await;
    client
        .call(
            "set",
            json!({ "path": "run://m", "body": "Remember this", "attributes": { "model": "fast" } }),
        )
        .await
        .unwrap();
    crate::support::wait_status(&mut client, "m", 200).await;

    page.goto(&format!("http://127.0.0.1:{}/#/memo/m", server.port()))
        .await;
    page.wait_for_text("#session", "the page is served and tested")
        .await;
    page.wait_for_text("#session", "screenshots in the README")
        .await;
    page.screenshot("session-state").await;

    // Continued from the page, the model asks a question; the page answers it, and the loop's
    // end brings the new state in live.
    server.provider.push(Reply::content(
        "<ask_user question=\"Which database?\">PostgreSQL; SQLite</ask_user>\n<update status=\"102\">asking</update>",
    ));
    server.provider.push(Reply::content(
        "<update status=\"200\">SQLite it is</update>",
    ));
    server.provider.push(Reply::content(
        "## Current state\nthe team chose SQLite\n## Next steps\n- write the schema\n",
    ));
    page.type_into("#prompt", "Pick a database").await;
    page.click("#send").await;
    page.wait_for_text(".proposal[data-kind=\"ask_user\"]", "Which database?")
        .await;
    page.wait_for_text(".proposal[data-kind=\"ask_user\"]", "PostgreSQL, SQLite")
        .await;
    page.type_into(".proposal input.reason", "SQLite\u{E007}")
        .await;
    page.wait_for_text("#session", "the team chose SQLite")
        .await;
    wait_status(page, 200).await;
    let asked = crate::support::scheme_entries(&mut client, "m", "ask_user").await;
    let answers: Vec<Value> = asked
        .iter()
        .map(|e| e["attributes"]["answer"].clone())
        .collect();
    assert_eq!(answers, vec![json!("SQLite")]);

    // On a narrow screen the panels stack, and the run is still all there.
    page.resize(760, 1000).await;
    page.wait_until(
        "the panels to stack",
        "const nav = document.querySelector('.nav').getBoundingClientRect();\
         const run = document.querySelector('#run').getBoundingClientRect();\
         return run.top >= nav.bottom - 1;",
        json!([]),
    )
    .await;
    page.screenshot("narrow").await;
    page.resize(1440, 900).await;
    server.stop().await;
}
