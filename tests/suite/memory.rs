//! Project memory, history and recall end to end: what a run remembers comes back before a later run's prompt when it is
//! relevant, and only then; memory is superseded, never overwritten; every finished loop leaves
//! one history line; none of it makes the project's other runs read their context again; and a
//! question asked for the whole project is seen, and closed, by all its runs.

use crate::support::long_run::SIDE_MODEL;
use crate::support::{start_run, wait_status, TestServer};
use diesel::RunQueryDsl;
use pretty_assertions::assert_eq;
use rummy_testkit::{Reply, RpcClient};
use serde_json::{json, Value};

/// The user message of the `n`th chat request the fake provider received.
fn user_message(server: &TestServer, n: usize) -> String {
    server.provider.chat_requests()[n].body["messages"][1]["content"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// Runs `alias` with `prompt` (optionally with more run attributes) to its end.
async fn run_to_end(client: &mut RpcClient, alias: &str, prompt: &str, attributes: Value) {
    let mut attrs = json!({ "model": "fast" });
    if let (Some(into), Some(more)) = (attrs.as_object_mut(), attributes.as_object()) {
        into.extend(more.clone());
    }
    let answer = client
        .call(
            "set",
            json!({ "path": format!("run://{alias}"), "body": prompt, "attributes": attrs }),
        )
        .await
        .unwrap();
    assert_eq!(answer["ok"], json!(true), "{answer}");
    wait_status(client, alias, 200).await;
}

/// A run that stores a memory, then one whose prompt is about it.
async fn remembered_then_asked(
    server: &TestServer,
    client: &mut RpcClient,
    prompt: &str,
    attributes: Value,
) {
    server.provider.push(Reply::content(
        "<set path=\"memory://deploy/host\" summary=\"deploy,host\">Production runs on prod-3 behind nginx.</set>\n<update status=\"200\">Noted.</update>",
    ));
    server
        .provider
        .push(Reply::content("<update status=\"200\">prod-3</update>"));
    run_to_end(client, "a", "Remember where production runs.", json!({})).await;
    run_to_end(client, "b", prompt, attributes).await;
}

const RECALLED_MEMORY: &str =
    "<memory path=\"memory://deploy/host\">Production runs on prod-3 behind nginx.</memory>";

/// A memory one run wrote comes back in a later run whose prompt is about it: one block in the
/// user message, just before the prompt, naming its source path; `getRun` says what was
/// injected and why, and the loop's `recall://1` is in the run's history (archived once the
/// loop ended). The first run, with nothing remembered yet, got no block.
#[actix_rt::test]
async fn a_later_run_recalls_what_an_earlier_one_remembered() {
    let server = TestServer::start().await;
    let mut client = server.project_client("mem").await;
    remembered_then_asked(
        &server,
        &mut client,
        "Which host runs production behind nginx?",
        json!({}),
    )
    .await;
    assert!(!user_message(&server, 0).contains("<recall>"));
    let user = user_message(&server, 1);
    let (recall, prompt) = (user.find("<recall>\n"), user.rfind("<prompt"));
    assert!(recall.is_some() && recall < prompt, "{user}");
    let block = &user[recall.unwrap_or(0)..prompt.unwrap_or(0)];
    assert!(block.contains(RECALLED_MEMORY), "{block}");
    assert!(block.ends_with("</recall>\n"), "{block}");

    let run = client.call("getRun", json!({ "run": "b" })).await.unwrap();
    let recall = &run["recall"];
    assert_eq!(recall["path"], json!("recall://1"));
    assert_eq!(recall["loop"], json!(1));
    assert_eq!(
        recall["terms"],
        json!(["host", "runs", "production", "behind", "nginx"])
    );
    let memory = recall["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["path"] == json!("memory://deploy/host"))
        .cloned()
        .expect("the memory was recalled");
    assert_eq!(memory["source"], json!("memory"));
    assert_eq!(
        memory["matched"],
        json!(["host", "runs", "production", "behind", "nginx"])
    );
    let entry = run["history"]
        .as_array()
        .unwrap()
        .iter()
        .find(|h| h["path"] == json!("recall://1"))
        .cloned()
        .expect("the recall is history");
    assert_eq!(
        (
            &entry["tool"],
            &entry["visibility"],
            &entry["attributes"]["items"]
        ),
        (&json!("recall"), &json!("archived"), &recall["items"])
    );
    server.stop().await;
}

/// A prompt about something else recalls nothing: no block, no `recall://` entry, `recall`
/// null in `getRun`.
#[actix_rt::test]
async fn an_unrelated_prompt_gets_no_recall() {
    let server = TestServer::start().await;
    let mut client = server.project_client("mem").await;
    remembered_then_asked(
        &server,
        &mut client,
        "Write a haiku about autumn leaves.",
        json!({}),
    )
    .await;
    assert!(!user_message(&server, 1).contains("<recall>"));
    let run = client.call("getRun", json!({ "run": "b" })).await.unwrap();
    assert_eq!(run["recall"], Value::Null);
    let recalls = client
        .call("getEntries", json!({ "run": "b", "scheme": "recall" }))
        .await
        .unwrap();
    assert_eq!(recalls, json!([]));
    server.stop().await;
}

/// A project that remembers nothing yet runs as before: its first run gets no block and ends
/// as it would without recall. The next run asking the same recalls the first one's history
/// line, and nothing else.
#[actix_rt::test]
async fn recall_is_quiet_in_a_project_with_no_memory() {
    let server = TestServer::start().await;
    let mut client = server.project_client("empty").await;
    for alias in ["x", "y"] {
        server.provider.push(Reply::content(
            "<update status=\"200\">I do not know.</update>",
        ));
        run_to_end(&mut client, alias, "Which host runs production?", json!({})).await;
    }
    assert!(!user_message(&server, 0).contains("<recall>"));
    let first = client.call("getRun", json!({ "run": "x" })).await.unwrap();
    assert_eq!(
        (first["status"].clone(), first["recall"].clone()),
        (json!(200), Value::Null)
    );
    let second = client.call("getRun", json!({ "run": "y" })).await.unwrap();
    let sources: Vec<(Value, Value)> = second["recall"]["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| (i["source"].clone(), i["path"].clone()))
        .collect();
    assert_eq!(sources.len(), 1, "{sources:?}");
    assert_eq!(sources[0].0, json!("history"));
    assert!(user_message(&server, 1).contains(
        "\"Which host runs production?\" → concluded: I do not know.</history>\n</recall>"
    ));
    server.stop().await;
}

/// Recall is off for a run started with `recall: false`, and on a server with `RUMMY_RECALL=0`
/// unless a run asks for it with `recall: true`.
#[actix_rt::test]
async fn recall_is_switched_by_the_setting_and_the_run_attribute() {
    let on = TestServer::start().await;
    let mut client = on.project_client("mem").await;
    remembered_then_asked(
        &on,
        &mut client,
        "Which host runs production behind nginx?",
        json!({ "recall": false }),
    )
    .await;
    assert!(!user_message(&on, 1).contains("<recall>"));
    on.stop().await;

    let off = TestServer::start_with(|c| c.recall.enabled = false).await;
    let mut client = off.project_client("mem").await;
    remembered_then_asked(
        &off,
        &mut client,
        "Which host runs production behind nginx?",
        json!({}),
    )
    .await;
    assert!(!user_message(&off, 1).contains("<recall>"));
    off.provider
        .push(Reply::content("<update status=\"200\">prod-3</update>"));
    run_to_end(
        &mut client,
        "c",
        "Which host runs production behind nginx?",
        json!({ "recall": true }),
    )
    .await;
    assert!(user_message(&off, 2).contains(RECALLED_MEMORY));
    off.stop().await;
}

/// While a skill whose `memoryScope` is `none` is active, a run's loops recall nothing — the
/// same prompt in another run of the project does recall the memory.
#[actix_rt::test]
async fn a_skill_with_memory_scope_none_turns_recall_off() {
    let server = TestServer::start().await;
    let skills = server.home().join("skills");
    std::fs::create_dir_all(&skills).unwrap();
    std::fs::write(
        skills.join("blinkers.md"),
        "---\nmemoryScope: none\n---\nLook only at what you are given.\n",
    )
    .unwrap();
    let mut client = server.project_client("mem").await;
    server.provider.push(Reply::content(
        "<set path=\"memory://deploy/host\" summary=\"deploy,host\">Production runs on prod-3 behind nginx.</set>\n<update status=\"200\">Noted.</update>",
    ));
    run_to_end(
        &mut client,
        "a",
        "Remember where production runs.",
        json!({}),
    )
    .await;
    server
        .provider
        .push(Reply::content("<update status=\"200\">Hello.</update>"));
    run_to_end(&mut client, "b", "Say hello.", json!({})).await;
    client
        .call("skill/add", json!({ "run": "b", "name": "blinkers" }))
        .await
        .unwrap();
    for _ in 0..2 {
        server
            .provider
            .push(Reply::content("<update status=\"200\">prod-3</update>"));
    }

    let asked = "Which host runs production behind nginx?";
    run_to_end(&mut client, "b", asked, json!({})).await;
    run_to_end(&mut client, "c", asked, json!({})).await;

    assert!(
        !user_message(&server, 2).contains("<recall>"),
        "{}",
        user_message(&server, 2)
    );
    assert!(user_message(&server, 3).contains(RECALLED_MEMORY));
    server.stop().await;
}

/// A memory written again with other content is superseded: `getEntries` lists the current
/// version and the old one, archived, with `supersededBy` and its validity; each version keeps
/// who wrote it (the model in run `a`, then a client on run `b`); the same content again
/// changes nothing.
#[actix_rt::test]
async fn a_superseded_memory_is_kept_archived() {
    let server = TestServer::start().await;
    let mut client = server.project_client("mem").await;
    remembered_then_asked(&server, &mut client, "Anything new?", json!({})).await;
    for _ in 0..2 {
        let answer = client
            .call(
                "set",
                json!({ "run": "b", "path": "memory://deploy/host", "body": "Production moved to prod-4." }),
            )
            .await
            .unwrap();
        assert_eq!(
            answer,
            json!({ "ok": true, "path": "memory://deploy/host" })
        );
    }
    let listed = client
        .call(
            "getEntries",
            json!({ "run": "b", "scheme": "memory", "withBody": true }),
        )
        .await
        .unwrap();
    let seen: Vec<(Value, Value, Value, Value, Value, Value, Value)> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let a = &e["attributes"];
            (
                e["path"].clone(),
                e["body"].clone(),
                e["visibility"].clone(),
                a["run"].clone(),
                a["writer"].clone(),
                a["version"].clone(),
                a["supersededBy"].clone(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        vec![
            (
                json!("memory://deploy/host"),
                json!("Production moved to prod-4."),
                json!("visible"),
                json!("b"),
                json!("client"),
                json!(2),
                Value::Null
            ),
            (
                json!("memory://deploy/host@1"),
                json!("Production runs on prod-3 behind nginx."),
                json!("archived"),
                json!("a"),
                json!("model"),
                json!(1),
                json!({ "path": "memory://deploy/host", "version": 2 })
            ),
        ]
    );
    let old = &listed[1]["attributes"];
    assert!(
        old["validFrom"].is_string() && old["validTo"].is_string(),
        "{old}"
    );
    assert_eq!(
        listed[0]["attributes"]["supersedes"],
        json!("memory://deploy/host@1")
    );
    // A memory has no state or visibility to change: the client is told so.
    let refused = client
        .call(
            "set",
            json!({ "run": "b", "path": "memory://deploy/host", "visibility": "archived" }),
        )
        .await
        .unwrap_err();
    assert_eq!(refused.code(), Some(-32602), "{refused:?}");
    server.stop().await;
}

/// With recall off on the server (`RUMMY_RECALL=0`) memory costs a loop nothing: a loop leaves
/// no history line and its facts are not indexed — unless its run turns recall on, whose loops
/// the project keeps.
#[actix_rt::test]
async fn with_recall_off_only_runs_that_recall_are_kept() {
    let server = TestServer::start_with(|c| c.recall.enabled = false).await;
    let mut client = server.project_client("quiet").await;
    for _ in 0..2 {
        server.provider.push(Reply::content(
            "<set path=\"known://db/engine\">The billing database is postgres 16.</set>\n<update status=\"200\">Noted.</update>",
        ));
    }
    server
        .provider
        .push(Reply::content("<update status=\"200\">Done.</update>"));
    run_to_end(
        &mut client,
        "off",
        "Look at the billing database",
        json!({}),
    )
    .await;
    run_to_end(
        &mut client,
        "on",
        "Look at the billing database again",
        json!({ "recall": true }),
    )
    .await;
    let history = client
        .call("getEntries", json!({ "run": "on", "scheme": "history" }))
        .await
        .unwrap();
    let runs: Vec<Value> = history
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["attributes"]["run"].clone())
        .collect();
    assert_eq!(runs, vec![json!("on")]);
    run_to_end(
        &mut client,
        "asks",
        "Which engine runs the billing database?",
        json!({ "recall": true }),
    )
    .await;
    let asks = client
        .call("getRun", json!({ "run": "asks" }))
        .await
        .unwrap();
    let recalled: Vec<(Value, Value)> = asks["recall"]["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["source"] == json!("known"))
        .map(|i| (i["path"].clone(), i["run"].clone()))
        .collect();
    assert_eq!(recalled, vec![(json!("known://db/engine"), json!("on"))]);
    server.stop().await;
}

/// Every finished loop leaves one history line of the project — run, loop, prompt gist and
/// outcome — at `history://<date>/<run>/<loop>`, never a line rewritten.
#[actix_rt::test]
async fn each_finished_loop_leaves_one_history_line() {
    let server = TestServer::start().await;
    let mut client = server.project_client("hist").await;
    server.provider.push(Reply::content(
        "<update status=\"200\">First answer.</update>",
    ));
    server.provider.push(Reply::content(
        "<update status=\"200\">Second answer.</update>",
    ));
    start_run(&mut client, "run://h", "First question").await;
    wait_status(&mut client, "h", 200).await;
    let answer = client
        .call(
            "set",
            json!({ "path": "run://h", "body": "Second   question\nin two lines" }),
        )
        .await
        .unwrap();
    assert_eq!(answer["ok"], json!(true));
    wait_status(&mut client, "h", 200).await;
    let history = client
        .call(
            "getEntries",
            json!({ "run": "h", "scheme": "history", "withBody": true }),
        )
        .await
        .unwrap();
    let lines: Vec<(bool, Value, Value)> = history
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let path = e["path"].as_str().unwrap_or_default();
            let n = e["attributes"]["loop"].as_i64().unwrap_or(0);
            (
                path.starts_with("history://") && path.ends_with(&format!("/h/{n}")),
                e["body"].clone(),
                e["attributes"]["stopReason"].clone(),
            )
        })
        .collect();
    assert_eq!(
        lines,
        vec![
            (
                true,
                json!("h loop 1 (ask): \"First question\" → concluded: First answer."),
                json!("concluded")
            ),
            (
                true,
                json!(
                    "h loop 2 (ask): \"Second question in two lines\" → concluded: Second answer."
                ),
                json!("concluded")
            ),
        ]
    );
    server.stop().await;
}

/// The project's context clocks: what makes a run read its whole context again.
fn clocks(server: &TestServer) -> Vec<(String, i64)> {
    #[derive(diesel::QueryableByName, Debug)]
    struct Clock {
        #[diesel(sql_type = diesel::sql_types::Text)]
        name: String,
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        version: i64,
    }
    let mut db = crate::support::database::connect(&server.database());
    diesel::sql_query("SELECT name, version FROM context_clocks ORDER BY name")
        .load::<Clock>(&mut db)
        .unwrap()
        .into_iter()
        .map(|c| (c.name, c.version))
        .collect()
}

/// Memory and history writes — a client's memory, a model's memory, a loop's history line —
/// leave the project's context clock where it was, and give no run a view: the project's other
/// runs go on with the context rows they hold instead of reading it all again.
#[actix_rt::test]
async fn memory_and_history_writes_make_no_other_run_reread() {
    let server = TestServer::start().await;
    let mut client = server.project_client("quiet").await;
    std::fs::write(
        format!("{}/notes.txt", server.project_root("quiet")),
        "notes\n",
    )
    .unwrap();
    server
        .provider
        .push(Reply::content("<update status=\"200\">ok</update>"));
    run_to_end(&mut client, "other", "Read the notes", json!({})).await;
    let before = clocks(&server);
    assert!(
        before.iter().any(|(name, _)| name.starts_with("project:")),
        "{before:?}"
    );
    client
        .call(
            "set",
            json!({ "run": "other", "path": "memory://style", "body": "Tabs, not spaces." }),
        )
        .await
        .unwrap();
    server.provider.push(Reply::content(
        "<set path=\"memory://deploy/host\">prod-3</set>\n<update status=\"200\">Noted.</update>",
    ));
    run_to_end(
        &mut client,
        "writer",
        "Remember that production is prod-3",
        json!({ "noRepo": true }),
    )
    .await;
    assert_eq!(clocks(&server), before);
    let views = client
        .call("getEntries", json!({ "run": "other" }))
        .await
        .unwrap();
    let paths: Vec<&str> = views
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["path"].as_str())
        .filter(|p| p.starts_with("memory://") || p.starts_with("history://"))
        .collect();
    assert_eq!(paths, Vec::<&str>::new());
    server.stop().await;
}

/// The system message of the `n`th chat request the fake provider received.
fn system_message(server: &TestServer, n: usize) -> String {
    server.provider.chat_requests()[n].body["messages"][0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// The open questions `getRun` lists for `run`: (path, body, shared).
async fn open_questions(client: &mut RpcClient, run: &str) -> Vec<(Value, Value, Value)> {
    let state = client.call("getRun", json!({ "run": run })).await.unwrap();
    state["unknowns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| (u["path"].clone(), u["body"].clone(), u["shared"].clone()))
        .collect()
}

/// A question the model asks with `shared` is seen by the project's other runs in their
/// `<unknowns>` (and by clients, marked shared); the `known://` another run writes with
/// `answers` closes it for every run, recording the answer and who gave it.
#[actix_rt::test]
async fn a_shared_question_is_seen_and_closed_across_runs() {
    let server = TestServer::start().await;
    let mut client = server.project_client("team").await;
    server.provider.push(Reply::content(
        "<set path=\"unknown://deploy/target\" shared>Which host runs production?</set>\n<update status=\"200\">Asked the project.</update>",
    ));
    server.provider.push(Reply::content(
        "<set path=\"known://deploy/target\" answers=\"unknown://deploy/target\">prod-3</set>\n<update status=\"200\">prod-3</update>",
    ));
    server
        .provider
        .push(Reply::content("<update status=\"200\">Thanks.</update>"));
    run_to_end(
        &mut client,
        "a",
        "What do we need to know about deploys?",
        json!({ "recall": false }),
    )
    .await;
    let question = (
        json!("unknown://deploy/target"),
        json!("Which host runs production?"),
        json!(true),
    );
    assert_eq!(
        open_questions(&mut client, "a").await,
        vec![question.clone()]
    );
    run_to_end(
        &mut client,
        "b",
        "Tell me about the servers.",
        json!({ "recall": false }),
    )
    .await;
    let seen = system_message(&server, 1);
    assert!(
        seen.contains("<unknown path=\"unknown://deploy/target\" turn=\"0\" shared=\"true\"")
            && seen.contains(">Which host runs production?</unknown>"),
        "{seen}"
    );
    assert_eq!(open_questions(&mut client, "a").await, vec![]);
    assert_eq!(open_questions(&mut client, "b").await, vec![]);
    let asked = client
        .call(
            "getEntries",
            json!({ "run": "a", "scheme": "unknown", "withBody": true }),
        )
        .await
        .unwrap();
    let closed = &asked[0];
    assert_eq!(
        (
            &closed["visibility"],
            &closed["attributes"]["askedBy"]["run"],
            &closed["attributes"]["closedBy"]["path"],
            &closed["attributes"]["closedBy"]["run"],
        ),
        (
            &json!("archived"),
            &json!("a"),
            &json!("known://deploy/target"),
            &json!("b")
        )
    );
    let answer = client
        .call(
            "getEntries",
            json!({ "run": "b", "scheme": "known", "withBody": true }),
        )
        .await
        .unwrap();
    assert_eq!(
        answer[0]["attributes"]["answers"],
        json!("unknown://deploy/target")
    );
    // The asking run's next loop no longer shows the question.
    let answer = client
        .call(
            "set",
            json!({ "path": "run://a", "body": "Anything open?" }),
        )
        .await
        .unwrap();
    assert_eq!(answer["ok"], json!(true));
    wait_status(&mut client, "a", 200).await;
    assert!(!system_message(&server, 2).contains("<unknown path=\"unknown://deploy/target\""));
    server.stop().await;
}

/// A client asks a shared question with `attributes.shared` and answers it with
/// `attributes.answers`: an idle run of the project sees it from its next loop, and the answer
/// closes it for every run.
#[actix_rt::test]
async fn a_client_asks_and_answers_a_shared_question() {
    let server = TestServer::start().await;
    let mut client = server.project_client("team").await;
    for reply in ["Ready.", "Noted.", "Done."] {
        server.provider.push(Reply::content(format!(
            "<update status=\"200\">{reply}</update>"
        )));
    }
    run_to_end(&mut client, "a", "Hello", json!({ "recall": false })).await;
    run_to_end(&mut client, "b", "Hello too", json!({ "recall": false })).await;
    let asked = client
        .call(
            "set",
            json!({ "run": "a", "path": "unknown://db", "body": "Which database do we use?", "attributes": { "shared": true } }),
        )
        .await
        .unwrap();
    assert_eq!(asked, json!({ "ok": true, "path": "unknown://db" }));
    let continued = client
        .call("set", json!({ "path": "run://b", "body": "Go on" }))
        .await
        .unwrap();
    assert_eq!(continued["ok"], json!(true));
    wait_status(&mut client, "b", 200).await;
    assert!(system_message(&server, 2).contains(">Which database do we use?</unknown>"));
    assert_eq!(
        open_questions(&mut client, "b").await,
        vec![(
            json!("unknown://db"),
            json!("Which database do we use?"),
            json!(true)
        )]
    );
    client
        .call(
            "set",
            json!({ "run": "b", "path": "known://db", "body": "Postgres 16.", "attributes": { "answers": "unknown://db" } }),
        )
        .await
        .unwrap();
    assert_eq!(open_questions(&mut client, "a").await, vec![]);
    assert_eq!(open_questions(&mut client, "b").await, vec![]);
    let refused = client
        .call(
            "set",
            json!({ "run": "a", "path": "unknown://q", "body": "Why?", "attributes": { "shared": true, "askedBy": "me" } }),
        )
        .await
        .unwrap_err();
    assert_eq!(refused.code(), Some(-32602), "{refused:?}");
    server.stop().await;
}

/// A server whose side tasks go to model `side`, scripted: a side task answers `side(its user
/// message)`, a turn answers `turn(its user message)`.
async fn sidecar_server(
    side: impl Fn(&str) -> String + Send + Sync + 'static,
    turn: impl Fn(&str) -> String + Send + Sync + 'static,
) -> TestServer {
    let server = TestServer::start_with(|c| {
        c.models.push(rummy_store::models::ModelSeed {
            alias: "side".into(),
            actual: format!("openai/{SIDE_MODEL}"),
            context_length: Some(32_768),
            fallback: None,
        });
        c.sidecar.model = Some("side".into());
    })
    .await;
    server.provider.set_responder(move |body| {
        let user = body["messages"][1]["content"].as_str().unwrap_or_default();
        if body["model"] == json!(SIDE_MODEL) {
            Reply::content(side(user))
        } else {
            Reply::content(turn(user))
        }
    });
    server
}

/// The side tasks' requests so far: (system message, user message).
fn side_requests(server: &TestServer) -> Vec<(String, String)> {
    server
        .provider
        .chat_requests()
        .into_iter()
        .filter(|r| r.body["model"] == json!(SIDE_MODEL))
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

/// The turn replies of [`sidecar_server`]: the first loop stores two memories, every later one
/// concludes.
fn remembering_turn(user: &str) -> String {
    if user.contains("Remember the deploy") {
        "<set path=\"memory://deploy/host\">Production runs on prod-3 behind nginx.</set>\n<set path=\"memory://deploy/proxy\">The nginx proxy of production is configured in deploy/nginx.conf.</set>\n<update status=\"200\">Noted.</update>".into()
    } else {
        "<update status=\"200\">Done.</update>".into()
    }
}

/// The number the sidecar was shown a note of `path` under, in a re-ranking's input.
fn note_number(input: &str, path: &str) -> Option<String> {
    input.lines().find_map(|line| {
        let (number, rest) = line.strip_prefix('[')?.split_once("] ")?;
        rest.starts_with(path).then(|| number.to_owned())
    })
}

/// With `recallRerank`, the sidecar reads the prompt and the lexical candidates and keeps what
/// helps: here only the proxy's memory, though both matched; `recall.reranked` says so and the
/// first turn's telemetry holds the side task. A ranking that cannot be read leaves the lexical
/// choice; without `recallRerank` the sidecar is not asked.
#[actix_rt::test]
async fn the_sidecar_reranks_the_recall_when_asked() {
    let server = sidecar_server(
        |input| match (
            input.starts_with("Prompt:\nWhich proxy"),
            note_number(input, "memory://deploy/proxy"),
        ) {
            (true, Some(n)) => format!("[{n}]"),
            _ => "no idea".into(),
        },
        remembering_turn,
    )
    .await;
    let mut client = server.project_client("rank").await;
    run_to_end(&mut client, "a", "Remember the deploy", json!({})).await;
    let question = "Which proxy serves production nginx?";
    run_to_end(&mut client, "b", question, json!({ "recallRerank": true })).await;
    let sides = side_requests(&server);
    assert_eq!(sides.len(), 1);
    assert!(
        sides[0]
            .0
            .starts_with("You choose what an agent should be reminded of"),
        "{}",
        sides[0].0
    );
    assert!(
        sides[0]
            .1
            .starts_with(&format!("Prompt:\n{question}\n\nNotes:")),
        "{}",
        sides[0].1
    );
    let run = client
        .call("getRun", json!({ "run": "b", "sinceSeq": 0 }))
        .await
        .unwrap();
    let recalled: Vec<&Value> = run["recall"]["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| &i["path"])
        .collect();
    assert_eq!(recalled, vec![&json!("memory://deploy/proxy")]);
    assert_eq!(run["recall"]["reranked"], json!(true));
    let tasks: Vec<Value> = run["missed"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|n| n["params"]["telemetry"]["sidecar"].as_array())
        .flatten()
        .map(|s| json!([s["task"], s["outcome"]]))
        .collect();
    assert_eq!(tasks, vec![json!(["rerank", "ok"])]);

    run_to_end(
        &mut client,
        "c",
        "Which host runs production behind nginx?",
        json!({ "recallRerank": true }),
    )
    .await;
    let run = client.call("getRun", json!({ "run": "c" })).await.unwrap();
    let mut recalled: Vec<Value> = run["recall"]["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["path"].clone())
        .collect();
    recalled.retain(|p| p.as_str().is_some_and(|p| p.starts_with("memory://")));
    recalled.sort_by_key(Value::to_string);
    assert_eq!(
        recalled,
        vec![
            json!("memory://deploy/host"),
            json!("memory://deploy/proxy")
        ]
    );
    assert_eq!(run["recall"]["reranked"], json!(false));
    run_to_end(
        &mut client,
        "d",
        "Which host runs production behind nginx?",
        json!({}),
    )
    .await;
    assert_eq!(side_requests(&server).len(), 2);
    server.stop().await;
}

/// With `consolidate`, a loop that concludes has the sidecar turn the run's facts into project
/// memories before its end is recorded: added (or superseding) at once, by the server for the
/// run. An answer that cannot be read writes nothing; a run that does not ask makes no call.
#[actix_rt::test]
async fn consolidation_turns_a_loops_facts_into_memories() {
    let server = sidecar_server(
        |input| {
            if input.contains("known://deploy/host: Production runs on prod-4.") {
                "```json\n{\"memories\": [{\"action\": \"update\", \"path\": \"memory://deploy/host\", \"content\": \"Production runs on prod-4 since the move.\", \"summary\": \"deploy,host\"}]}\n```".into()
            } else {
                "I would rather not.".into()
            }
        },
        |user| {
            if user.contains("Find the host") || user.contains("Find the port") {
                let (path, body) = if user.contains("host") {
                    ("known://deploy/host", "Production runs on prod-4.")
                } else {
                    ("known://deploy/port", "It listens on 8080.")
                };
                format!("<set path=\"{path}\">{body}</set>\n<update status=\"200\">Found.</update>")
            } else {
                "<update status=\"200\">Done.</update>".into()
            }
        },
    )
    .await;
    let mut client = server.project_client("keep").await;
    run_to_end(&mut client, "plain", "Find the host", json!({})).await;
    assert_eq!(side_requests(&server).len(), 0);
    run_to_end(
        &mut client,
        "a",
        "Find the host",
        json!({ "consolidate": true, "recall": false }),
    )
    .await;
    let sides = side_requests(&server);
    assert_eq!(sides.len(), 1);
    assert!(sides[0]
        .0
        .starts_with("You keep the long-term memory of a software project."));
    assert!(sides[0].1.starts_with("The task the run finished:\nFind the host\n\nIts facts:\n- known://deploy/host: Production runs on prod-4."), "{}", sides[0].1);
    let memories = client
        .call(
            "getEntries",
            json!({ "run": "a", "scheme": "memory", "withBody": true }),
        )
        .await
        .unwrap();
    let seen: Vec<(Value, Value, Value, Value)> = memories
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["path"].clone(),
                m["body"].clone(),
                m["attributes"]["run"].clone(),
                m["attributes"]["writer"].clone(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        vec![(
            json!("memory://deploy/host"),
            json!("Production runs on prod-4 since the move."),
            json!("a"),
            json!("plugin")
        )]
    );
    run_to_end(
        &mut client,
        "b",
        "Find the port",
        json!({ "consolidate": true, "recall": false }),
    )
    .await;
    assert_eq!(side_requests(&server).len(), 2);
    let memories = client
        .call("getEntries", json!({ "run": "b", "scheme": "memory" }))
        .await
        .unwrap();
    assert_eq!(memories.as_array().map(Vec::len), Some(1), "{memories}");
    server.stop().await;
}

/// Another run's facts are recalled once its loop ended (its finishing write indexes them), with
/// the run named; a fact a client writes is recallable at once.
#[actix_rt::test]
async fn another_runs_facts_are_recalled() {
    let server = TestServer::start().await;
    let mut client = server.project_client("facts").await;
    server.provider.push(Reply::content(
        "<set path=\"known://db/engine\">The billing database is postgres 16.</set>\n<update status=\"200\">Noted.</update>",
    ));
    for _ in 0..2 {
        server
            .provider
            .push(Reply::content("<update status=\"200\">Done.</update>"));
    }
    run_to_end(&mut client, "a", "Look at the database", json!({})).await;
    client
        .call(
            "set",
            json!({ "run": "a", "path": "known://db/replica", "body": "The billing replica is read-only." }),
        )
        .await
        .unwrap();
    run_to_end(
        &mut client,
        "b",
        "Which engine runs the billing database?",
        json!({}),
    )
    .await;
    run_to_end(
        &mut client,
        "c",
        "Can the billing replica take writes?",
        json!({}),
    )
    .await;
    let recalled = |run: Value| -> Vec<(Value, Value, Value)> {
        run["recall"]["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| (i["source"].clone(), i["path"].clone(), i["run"].clone()))
            .collect()
    };
    let b = client.call("getRun", json!({ "run": "b" })).await.unwrap();
    assert!(
        recalled(b.clone()).contains(&(json!("known"), json!("known://db/engine"), json!("a"))),
        "{b}"
    );
    let c = client.call("getRun", json!({ "run": "c" })).await.unwrap();
    assert!(
        recalled(c.clone()).contains(&(json!("known"), json!("known://db/replica"), json!("a"))),
        "{c}"
    );
    server.stop().await;
}

/// Consolidation may clean up: a memory that only held a task's passing state is removed — it
/// leaves its path and recall, its text kept archived with who removed it and why — while the
/// run's clients see the side task in `run/progress` (`sidecar`, `consolidate`).
#[actix_rt::test]
async fn consolidation_removes_a_memory_of_passing_state_and_keeps_its_text() {
    let server = sidecar_server(
        |input| {
            if input.contains("memory://wip/billing") {
                "{\"memories\": [{\"action\": \"remove\", \"path\": \"memory://wip/billing\", \"reason\": \"the move is done\"}]}".into()
            } else {
                "{\"memories\": []}".into()
            }
        },
        |user| {
            if user.contains("Move the billing tables") && !user.contains("Where are") {
                "<set path=\"memory://wip/billing\">Currently moving the billing tables to the ledger schema.</set>\n<set path=\"known://billing/schema\">The billing tables live in the ledger schema.</set>\n<update status=\"200\">Moved.</update>".into()
            } else {
                "<update status=\"200\">Done.</update>".into()
            }
        },
    )
    .await;
    let mut client = server.project_client("tidy").await;
    run_to_end(
        &mut client,
        "a",
        "Move the billing tables",
        json!({ "consolidate": true, "recall": false }),
    )
    .await;
    let sides = side_requests(&server);
    assert_eq!(sides.len(), 1);
    assert!(
        sides[0].1.contains(
            "- memory://wip/billing: Currently moving the billing tables to the ledger schema."
        ),
        "{}",
        sides[0].1
    );
    let shown: Vec<(Value, Value)> = client
        .drain_notifications()
        .into_iter()
        .filter(|n| {
            n["method"] == json!("run/progress") && n["params"]["status"] == json!("sidecar")
        })
        .map(|n| (n["params"]["run"].clone(), n["params"]["detail"].clone()))
        .collect();
    assert_eq!(shown, vec![(json!("a"), json!("consolidate"))]);

    let memories = client
        .call(
            "getEntries",
            json!({ "run": "a", "scheme": "memory", "withBody": true, "visibility": "archived" }),
        )
        .await
        .unwrap();
    let seen: Vec<(Value, Value, Value, Value)> = memories
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["path"].clone(),
                m["body"].clone(),
                m["attributes"]["removedBy"]["run"].clone(),
                m["attributes"]["removedBecause"].clone(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        vec![(
            json!("memory://wip/billing@1"),
            json!("Currently moving the billing tables to the ledger schema."),
            json!("a"),
            json!("the move is done")
        )]
    );
    let current = client
        .call(
            "getEntries",
            json!({ "run": "a", "scheme": "memory", "visibility": "visible" }),
        )
        .await
        .unwrap();
    assert_eq!(current, json!([]));
    run_to_end(&mut client, "b", "Where are the billing tables?", json!({})).await;
    let b = client.call("getRun", json!({ "run": "b" })).await.unwrap();
    let recalled: Vec<Value> = b["recall"]["items"]
        .as_array()
        .map(|items| items.iter().map(|i| i["path"].clone()).collect())
        .unwrap_or_default();
    assert!(!recalled.contains(&json!("memory://wip/billing")), "{b}");
    assert!(recalled.contains(&json!("known://billing/schema")), "{b}");
    server.stop().await;
}
