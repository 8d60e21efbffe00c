//! Session state end to end, the fake provider scripted as the sidecar model: a loop's end updates `session://state`, the
//! next loop reads it first, a fork starts from its parent's refreshed state, a restart
//! recovers it, an old run is given one silently, a failed update keeps the last one and the
//! run goes on, and a skill's `memoryScope` withholds it.

use crate::support::{wait_status, TestServer};
use pretty_assertions::assert_eq;
use rummy::config::Config;
use rummy_core::session_state::{update_prompt, SessionState};
use rummy_testkit::{Reply, RpcClient};
use serde_json::{json, Value};

const DONE: &str = "<update status=\"200\">done</update>";

/// The sidecar's first update: every section, in another order than the document's.
const FIRST: &str = "## Title\nFind the port\n## Worklog\n- read the config\n## Current state\nthe port is 8080\n## User intent\nknow the port\n## Active files\nconfig.toml\n## Decisions\n## Constraints\n- read only\n## Errors and corrections\n## Next steps\n- find the host\n";
/// Its second: only what changed.
const SECOND: &str = "## Current state\nport and host known\n## Next steps\n- nothing left\n## Worklog\n- read the config\n- found the host\n";

/// The state the sidecar's `replies` make, one after the other, from the empty one.
fn state_after(replies: &[&str]) -> SessionState {
    replies.iter().fold(SessionState::empty(), |s, r| {
        s.updated(r).expect("a valid update")
    })
}

/// Session state on for every run, updated after any loop of one turn or more.
fn on(config: &mut Config) {
    config.session_state.enabled = true;
    config.session_state.thresholds.min_turns = 1;
}

/// Every message of every chat request the provider got: (system, user).
fn requests(server: &TestServer) -> Vec<(String, String)> {
    server
        .provider
        .chat_requests()
        .iter()
        .map(|r| {
            let text = |i: usize| {
                r.body["messages"][i]["content"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned()
            };
            (text(0), text(1))
        })
        .collect()
}

/// Which requests were side tasks updating the session state (`S`) and which were turns (`T`).
fn kinds(server: &TestServer) -> String {
    requests(server)
        .iter()
        .map(|(system, _)| if system == update_prompt() { 'S' } else { 'T' })
        .collect()
}

/// The run's `session://state` body, if it has one.
async fn stored(client: &mut RpcClient, run: &str) -> Option<String> {
    let list = client
        .call(
            "getEntries",
            json!({ "run": run, "scheme": "session", "withBody": true }),
        )
        .await
        .unwrap();
    list.as_array()?
        .iter()
        .find(|e| e["path"] == json!("session://state"))
        .and_then(|e| e["body"].as_str().map(str::to_owned))
}

/// The `<session …>` element of a system message, if it has one.
fn session_element(system: &str) -> Option<String> {
    let start = system.find("<session ")?;
    let end = system[start..].find("</session>")? + start + "</session>".len();
    Some(system[start..end].to_owned())
}

/// The element a run whose state is `state`, last updated at turn `turn`, is shown.
fn element(state: &SessionState, turn: Option<i32>) -> String {
    let turn = turn.map(|t| format!(" turn=\"{t}\"")).unwrap_or_default();
    format!(
        "<session path=\"session://state\"{turn}>\n{}\n\n{}</session>",
        rummy_core::session_state::intro(),
        state.render()
    )
}

/// Starts (or continues) run `run` with `body` and waits for its loop to end 200.
async fn prompt(client: &mut RpcClient, run: &str, body: &str, attributes: Value) {
    client
        .call(
            "set",
            json!({ "path": format!("run://{run}"), "body": body, "attributes": attributes }),
        )
        .await
        .unwrap();
    wait_status(client, run, 200).await;
}

/// A loop's end updates the state through the sidecar (given the state and what the loop
/// did); the next loop is shown it first in its system message, and its end updates it again
/// from there — the follow-up keeps what the update left out.
#[actix_rt::test]
async fn a_loop_updates_the_state_and_the_next_loop_reads_it_first() {
    let server = TestServer::start_with(on).await;
    for reply in [DONE, FIRST, DONE, SECOND] {
        server.provider.push(Reply::content(reply));
    }
    let mut client = server.project_client("s").await;

    prompt(
        &mut client,
        "s",
        "Find the port",
        json!({ "model": "fast" }),
    )
    .await;
    let after_first = stored(&mut client, "s").await;
    prompt(&mut client, "s", "And the host?", json!({})).await;
    let after_second = stored(&mut client, "s").await;

    let sent = requests(&server);
    assert_eq!(kinds(&server), "TSTS");
    assert_eq!(after_first, Some(state_after(&[FIRST]).render()));
    assert_eq!(after_second, Some(state_after(&[FIRST, SECOND]).render()));
    // The first loop starts from the empty state, made when it began; the second from the update.
    assert_eq!(
        session_element(&sent[0].0),
        Some(element(&SessionState::empty(), None))
    );
    assert_eq!(
        session_element(&sent[2].0),
        Some(element(&state_after(&[FIRST]), Some(1)))
    );
    assert!(
        sent[2].0.find("<session ").unwrap_or(usize::MAX)
            < sent[2].0.find("<knowns>").unwrap_or(usize::MAX),
        "the state comes before the knowns: {}",
        sent[2].0
    );
    let first_input = &sent[1].1;
    assert!(
        first_input.starts_with(&format!(
            "Current session state:\n\n{}",
            SessionState::empty().render()
        )),
        "{first_input}"
    );
    assert!(
        first_input.contains("turn 1 prompt: Find the port"),
        "{first_input}"
    );
    assert!(first_input.contains("turn 1 update"), "{first_input}");
    let second_input = &sent[3].1;
    assert!(
        second_input.contains(&state_after(&[FIRST]).render()),
        "{second_input}"
    );
    assert!(
        second_input.contains("turn 2 prompt: And the host?"),
        "{second_input}"
    );
    assert!(
        !second_input.contains("turn 1 prompt"),
        "only what happened since: {second_input}"
    );
    server.stop().await;
}

/// Below the thresholds (3 turns or 10 commands by default) a loop's end asks nothing; off
/// (the default), a run has no session state at all and is shown none.
#[actix_rt::test]
async fn below_the_thresholds_or_off_nothing_is_asked() {
    let server = TestServer::start_with(|c| c.session_state.enabled = true).await;
    server.provider.set_fallback(Reply::content(DONE));
    let mut client = server.project_client("t").await;
    prompt(&mut client, "short", "Hi", json!({ "model": "fast" })).await;
    prompt(
        &mut client,
        "off",
        "Hi",
        json!({ "model": "fast", "sessionState": false }),
    )
    .await;

    assert_eq!(kinds(&server), "TT");
    assert_eq!(
        stored(&mut client, "short").await,
        Some(SessionState::empty().render())
    );
    assert_eq!(stored(&mut client, "off").await, None);
    let sent = requests(&server);
    assert!(session_element(&sent[0].0).is_some());
    assert_eq!(session_element(&sent[1].0), None);
    server.stop().await;

    let default = TestServer::start().await;
    default.provider.set_fallback(Reply::content(DONE));
    let mut client = default.project_client("t").await;
    prompt(&mut client, "plain", "Hi", json!({ "model": "fast" })).await;
    assert_eq!(kinds(&default), "T");
    assert_eq!(stored(&mut client, "plain").await, None);
    default.stop().await;
}

/// A failed update — an answer without the headings, a provider error — keeps the last stored
/// state, and the run goes on: every loop still ends 200, and the next one is shown the state
/// that stayed.
#[actix_rt::test]
async fn a_failed_update_keeps_the_last_state_and_the_run_goes_on() {
    let server = TestServer::start_with(on).await;
    for reply in [
        Reply::content(DONE),
        Reply::content(FIRST),
        Reply::content(DONE),
        Reply::content("Sorry, I cannot help with that."),
        Reply::content(DONE),
        Reply::status(400, json!({"error": {"message": "bad request"}})),
        Reply::content(DONE),
        Reply::content(SECOND),
    ] {
        server.provider.push(reply);
    }
    let mut client = server.project_client("f").await;
    prompt(
        &mut client,
        "f",
        "Find the port",
        json!({ "model": "fast" }),
    )
    .await;
    prompt(&mut client, "f", "Again", json!({})).await;
    let after_unreadable = stored(&mut client, "f").await;
    prompt(&mut client, "f", "Once more", json!({})).await;
    let after_error = stored(&mut client, "f").await;
    client
        .call(
            "set",
            json!({ "path": "run://f", "body": "Last", "attributes": {} }),
        )
        .await
        .unwrap();
    wait_status(&mut client, "f", 200).await;

    let kept = state_after(&[FIRST]).render();
    assert_eq!(kinds(&server), "TSTSTSTS");
    assert_eq!(
        (after_unreadable, after_error),
        (Some(kept.clone()), Some(kept))
    );
    assert_eq!(
        session_element(&requests(&server)[6].0),
        Some(element(&state_after(&[FIRST]), Some(1)))
    );
    let run = client.call("getRun", json!({ "run": "f" })).await.unwrap();
    let errors = run["history"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|h| {
            h["path"]
                .as_str()
                .is_some_and(|p| p.starts_with("error://"))
        })
        .count();
    assert_eq!((run["status"].clone(), errors), (json!(200), 0));
    // The update after the last loop covers everything since the one that worked.
    assert!(requests(&server)[7].1.contains("turn 2 prompt: Again"));
    assert_eq!(
        stored(&mut client, "f").await,
        Some(state_after(&[FIRST, SECOND]).render())
    );
    server.stop().await;
}

/// A run older than session state — started while it was off — is given the empty state
/// silently when it is turned on (its next loop's start), and kept from then on; when that
/// first update fails, the empty state stays.
#[actix_rt::test]
async fn an_old_run_is_given_its_state_silently() {
    let server = TestServer::start_with(|c| c.session_state.thresholds.min_turns = 1).await;
    for reply in [DONE, DONE, "no headings here", DONE, FIRST] {
        server.provider.push(Reply::content(reply));
    }
    let mut client = server.project_client("o").await;
    prompt(&mut client, "old", "Hi", json!({ "model": "fast" })).await;
    let before = stored(&mut client, "old").await;
    prompt(&mut client, "old", "Again", json!({ "sessionState": true })).await;
    let repaired = stored(&mut client, "old").await;
    prompt(&mut client, "old", "Third", json!({})).await;

    assert_eq!(kinds(&server), "TTSTS");
    assert_eq!(
        (before, repaired),
        (None, Some(SessionState::empty().render()))
    );
    assert_eq!(
        stored(&mut client, "old").await,
        Some(state_after(&[FIRST]).render())
    );
    server.stop().await;
}

/// A fork refreshes its parent's state first — whatever the thresholds — and the fork starts
/// from it: its first system message shows the parent's updated state.
#[actix_rt::test]
async fn a_fork_starts_from_its_parents_refreshed_state() {
    let server = TestServer::start_with(|c| c.session_state.enabled = true).await;
    for reply in [DONE, FIRST, DONE] {
        server.provider.push(Reply::content(reply));
    }
    let mut client = server.project_client("k").await;
    prompt(
        &mut client,
        "parent",
        "Find the port",
        json!({ "model": "fast" }),
    )
    .await;
    let before_fork = stored(&mut client, "parent").await;
    prompt(&mut client, "child", "Go on", json!({ "fork": "parent" })).await;

    let refreshed = state_after(&[FIRST]);
    assert_eq!(kinds(&server), "TST");
    assert_eq!(before_fork, Some(SessionState::empty().render()));
    assert_eq!(
        stored(&mut client, "parent").await,
        Some(refreshed.render())
    );
    assert_eq!(
        session_element(&requests(&server)[2].0),
        Some(element(&refreshed, Some(1)))
    );
    server.stop().await;
}

/// A server restarted mid-task recovers the run's work from its session state: the run's next
/// loop is shown the state it had, first.
#[actix_rt::test]
async fn a_restart_recovers_the_state_first() {
    let mut server = TestServer::start_with(on).await;
    for reply in [DONE, FIRST, DONE, SECOND] {
        server.provider.push(Reply::content(reply));
    }
    let mut client = server.project_client("r").await;
    prompt(
        &mut client,
        "r",
        "Find the port",
        json!({ "model": "fast" }),
    )
    .await;

    server.restart_with(on).await;
    let mut client = server.project_client("r").await;
    prompt(&mut client, "r", "Where were we?", json!({})).await;

    assert_eq!(kinds(&server), "TSTS");
    assert_eq!(
        session_element(&requests(&server)[2].0),
        Some(element(&state_after(&[FIRST]), Some(1)))
    );
    server.stop().await;
}

/// While a skill with `memoryScope: none` (or `relevant`) is active, the run is shown no
/// session state and its loops update none.
#[actix_rt::test]
async fn a_skill_can_withhold_session_state() {
    let server = TestServer::start_with(on).await;
    let skills = server.home().join("skills");
    std::fs::create_dir_all(&skills).unwrap();
    std::fs::write(
        skills.join("focus.md"),
        "---\nmemoryScope: relevant\n---\nStay on task.\n",
    )
    .unwrap();
    for reply in [DONE, FIRST, DONE] {
        server.provider.push(Reply::content(reply));
    }
    let mut client = server.project_client("w").await;
    prompt(
        &mut client,
        "w",
        "Find the port",
        json!({ "model": "fast" }),
    )
    .await;
    client
        .call("skill/add", json!({ "run": "w", "name": "focus" }))
        .await
        .unwrap();
    prompt(&mut client, "w", "Go on", json!({})).await;

    assert_eq!(kinds(&server), "TST");
    assert_eq!(session_element(&requests(&server)[2].0), None);
    assert_eq!(
        stored(&mut client, "w").await,
        Some(state_after(&[FIRST]).render())
    );
    server.stop().await;
}

/// Before a summarisation folds a run's history away, the session state is refreshed first —
/// whatever the thresholds — within the summary's time limit: the state side task comes just
/// before the summary's, and the next turn is shown both the state and the summary.
#[actix_rt::test]
async fn the_state_is_refreshed_before_a_summary() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let server = TestServer::start_with(|c| {
        c.session_state.enabled = true;
        c.session_state.thresholds.min_turns = 1_000;
        c.session_state.thresholds.min_commands = 1_000;
        c.summary.enabled = true;
    })
    .await;
    let long = |n: usize, what: &str| {
        format!(
            "{what} {n}: {}",
            format!("part {n} of the system. ").repeat(50)
        )
    };
    let turns = AtomicUsize::new(0);
    server.provider.set_responder(move |body| {
        let system = body["messages"][0]["content"].as_str().unwrap_or_default();
        if system == update_prompt() {
            Reply::content(FIRST)
        } else if !system.contains("Tools available:") {
            // A summary's side task: its system message is no turn's instructions.
            Reply::content("Earlier: parts were asked about and answered.")
        } else {
            let n = turns.fetch_add(1, Ordering::SeqCst);
            Reply::content(format!(
                "<update status=\"200\">{}</update>",
                long(n, "Answer")
            ))
        }
    });
    let mut client = server.project_client("c").await;
    let mut loops = 0;
    let summary_asked = |server: &TestServer| {
        requests(server)
            .iter()
            .any(|(system, _)| !system.contains("Tools available:") && system != update_prompt())
    };
    while !summary_asked(&server) {
        assert!(loops < 30, "no summary in 30 loops");
        let attributes = if loops == 0 {
            json!({ "model": "fast", "contextLimit": 8192 })
        } else {
            json!({})
        };
        prompt(&mut client, "c", &long(loops, "Question"), attributes).await;
        loops += 1;
    }
    prompt(&mut client, "c", "And now?", json!({})).await;

    let sent = requests(&server);
    let side: Vec<char> = sent
        .iter()
        .filter(|(system, _)| !system.contains("Tools available:"))
        .map(|(system, _)| if system == update_prompt() { 'S' } else { 'Y' })
        .collect();
    assert_eq!(side.first().copied(), Some('S'), "{side:?}");
    assert_eq!(side.get(1).copied(), Some('Y'), "{side:?}");
    let last = &sent.last().unwrap().0;
    assert!(last.contains("<session path=\"session://state\""), "{last}");
    assert!(last.contains(&state_after(&[FIRST]).render()), "{last}");
    assert!(last.contains("<summary path=\"summary://run\""), "{last}");
    server.stop().await;
}
