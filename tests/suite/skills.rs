//! Skill frontmatter through a real server: a skill's `allowedTools` narrow what the model is
//! offered and what dispatch runs, its `paths` become visible, its fields are shown, and an
//! invalid frontmatter is refused naming the field.

use crate::support::{wait_status, TestServer};
use pretty_assertions::assert_eq;
use rummy_testkit::{Reply, RpcClient};
use serde_json::{json, Value};

const DONE: &str = "<update status=\"200\">done</update>";

/// Writes `$RUMMY_HOME/skills/<name>.md`.
fn skill_file(server: &TestServer, name: &str, text: &str) {
    let dir = server.home().join("skills");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(format!("{name}.md")), text).unwrap();
}

/// A client of project `name`, whose root holds `files` (written before the hello scans it).
async fn project_with(server: &TestServer, name: &str, files: &[(&str, &str)]) -> RpcClient {
    let root = std::path::PathBuf::from(server.project_root(name));
    for (path, body) in files {
        let file = root.join(path);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(file, body).unwrap();
    }
    server.project_client(name).await
}

/// The system message of the `index`th model call.
fn system(server: &TestServer, index: usize) -> String {
    server.provider.chat_requests()[index].body["messages"][0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// The "Tools available:" line of a system message.
fn tools_line(system: &str) -> String {
    system
        .lines()
        .find(|l| l.starts_with("Tools available:"))
        .unwrap_or_default()
        .to_owned()
}

/// The run's entries of `scheme`: (path, state, status, body).
async fn results(
    client: &mut RpcClient,
    run: &str,
    scheme: &str,
) -> Vec<(String, String, i64, String)> {
    let list = client
        .call(
            "getEntries",
            json!({ "run": run, "scheme": scheme, "withBody": true }),
        )
        .await
        .unwrap();
    list.as_array()
        .into_iter()
        .flatten()
        .map(|e| {
            (
                e["path"].as_str().unwrap_or_default().to_owned(),
                e["state"].as_str().unwrap_or_default().to_owned(),
                e["status"].as_i64().unwrap_or_default(),
                e["body"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

/// While a skill with `allowedTools` is active, the model is offered only those tools (and
/// `update` and `think`), and a tool it was not offered is refused at dispatch with the reason
/// it reads; once the skill is removed, every tool is offered again.
#[actix_rt::test]
async fn a_skills_allowed_tools_narrow_what_the_model_is_offered_and_can_run() {
    let server = TestServer::start().await;
    skill_file(
        &server,
        "readonly",
        "---\ndescription: Look, do not touch\nallowedTools: [get, env]\n---\nOnly read.\n",
    );
    server.provider.push(Reply::content(DONE));
    server.provider.push(Reply::content(
        "<sh>rm -rf /</sh>\n<set path=\"known://x\">y</set>",
    ));
    server.provider.push(Reply::content(DONE));
    server.provider.push(Reply::content(DONE));
    let mut client = project_with(&server, "sk", &[("a.txt", "a\n")]).await;
    client
        .call("set", json!({ "path": "run://r", "body": "One", "attributes": { "model": "fast", "mode": "act" } }))
        .await
        .unwrap();
    wait_status(&mut client, "r", 200).await;

    client
        .call("skill/add", json!({ "run": "r", "name": "readonly" }))
        .await
        .unwrap();
    client
        .call("set", json!({ "path": "run://r", "body": "Two" }))
        .await
        .unwrap();
    wait_status(&mut client, "r", 200).await;
    let refused = results(&mut client, "r", "sh").await;
    let set = results(&mut client, "r", "set").await;

    client
        .call("skill/remove", json!({ "run": "r", "name": "readonly" }))
        .await
        .unwrap();
    client
        .call("set", json!({ "path": "run://r", "body": "Three" }))
        .await
        .unwrap();
    wait_status(&mut client, "r", 200).await;

    let all = "Tools available: get, env, think, set, cp, mv, rm, sh, update, ask_user";
    assert_eq!(
        (0..4)
            .map(|i| tools_line(&system(&server, i)))
            .collect::<Vec<String>>(),
        vec![
            all.to_owned(),
            "Tools available: get, env, think, update".to_owned(),
            "Tools available: get, env, think, update".to_owned(),
            all.to_owned(),
        ]
    );
    let docs = |i: usize| {
        let text = system(&server, i);
        ["## <get", "## <sh>", "## <set"].map(|d| text.contains(d))
    };
    assert_eq!((docs(0), docs(1)), ([true; 3], [true, false, false]));
    assert_eq!(
        refused
            .iter()
            .map(|(_, state, status, body)| (state.as_str(), *status, body.as_str()))
            .collect::<Vec<_>>(),
        vec![(
            "failed",
            403,
            "Rejected <sh>: the active skills allow only get, env, think, update (allowedTools)"
        )]
    );
    let set_states: Vec<&str> = set.iter().map(|(_, state, _, _)| state.as_str()).collect();
    assert_eq!(
        set_states,
        vec!["failed"],
        "refused, so the rest of its turn is not run: {set:?}"
    );
    server.stop().await;
}

/// A skill's `paths` make the project files they match visible when it is added; `getSkills`
/// shows its frontmatter and `listSkills` what each file says of itself (or why it is invalid).
#[actix_rt::test]
async fn a_skills_paths_become_visible_and_its_frontmatter_is_shown() {
    let server = TestServer::start().await;
    server.provider.set_fallback(Reply::content(DONE));
    skill_file(
        &server,
        "rusty",
        "---\ndescription: Rust help\nwhenToUse: for Rust code\npaths: [\"src/*.rs\"]\nmemoryScope: relevant\n---\nPrefer iterators.\n",
    );
    skill_file(&server, "broken", "---\nmemoryScope: lots\n---\n");
    let mut client = project_with(
        &server,
        "paths",
        &[("src/lib.rs", "pub fn f() {}\n"), ("README.md", "# r\n")],
    )
    .await;
    client
        .call(
            "set",
            json!({ "path": "run://p", "body": "One", "attributes": { "model": "fast" } }),
        )
        .await
        .unwrap();
    wait_status(&mut client, "p", 200).await;
    let visibility = |entries: &Value| -> Vec<(String, String)> {
        entries
            .as_array()
            .into_iter()
            .flatten()
            .map(|e| {
                (
                    e["path"].as_str().unwrap_or_default().to_owned(),
                    e["visibility"].as_str().unwrap_or_default().to_owned(),
                )
            })
            .collect()
    };
    let before = client
        .call("getEntries", json!({ "run": "p", "scheme": "file" }))
        .await
        .unwrap();

    let added = client
        .call("skill/add", json!({ "run": "p", "name": "rusty" }))
        .await
        .unwrap();
    let after = client
        .call("getEntries", json!({ "run": "p", "scheme": "file" }))
        .await
        .unwrap();
    let shown = client
        .call("getSkills", json!({ "run": "p" }))
        .await
        .unwrap();
    let listed = client.call("listSkills", json!({})).await.unwrap();

    assert_eq!(
        (visibility(&before), visibility(&after)),
        (
            vec![
                ("README.md".into(), "summarized".into()),
                ("src/lib.rs".into(), "summarized".into())
            ],
            vec![
                ("README.md".into(), "summarized".into()),
                ("src/lib.rs".into(), "visible".into())
            ],
        )
    );
    assert_eq!(
        added,
        json!({ "ok": true, "skill": "rusty", "path": "skill://rusty" })
    );
    assert_eq!(
        shown,
        json!([{ "name": "rusty", "state": "resolved", "active": true, "description": "Rust help",
                 "whenToUse": "for Rust code", "allowedTools": null, "paths": ["src/*.rs"], "memoryScope": "relevant" }])
    );
    let mut listed = listed.clone();
    // The files' paths, by their names only (the temp home's path varies).
    for item in listed.as_array_mut().into_iter().flatten() {
        let name = item["path"]
            .as_str()
            .and_then(|p| p.rsplit('/').next())
            .unwrap_or_default()
            .to_owned();
        item["path"] = json!(name);
    }
    assert_eq!(
        listed,
        json!([
            { "name": "broken", "path": "broken.md", "description": null, "whenToUse": null,
              "error": "invalid frontmatter field memoryScope: \"lots\" is not a memory scope (none, relevant or session)" },
            { "name": "rusty", "path": "rusty.md", "description": "Rust help", "whenToUse": "for Rust code", "error": null },
        ])
    );
    server.stop().await;
}

/// A skill whose frontmatter is invalid is refused -32602 with the field named, and the run
/// does not get it.
#[actix_rt::test]
async fn invalid_frontmatter_is_refused_naming_the_field() {
    let server = TestServer::start().await;
    server.provider.set_fallback(Reply::content(DONE));
    skill_file(
        &server,
        "bad",
        "---\nallowedTools: [get, grep]\n---\nbody\n",
    );
    let mut client = server.project_client("bad").await;
    client
        .call(
            "set",
            json!({ "path": "run://b", "body": "One", "attributes": { "model": "fast" } }),
        )
        .await
        .unwrap();
    wait_status(&mut client, "b", 200).await;

    let err = client
        .call_err("skill/add", json!({ "run": "b", "name": "bad" }))
        .await;
    let skills = client
        .call("getSkills", json!({ "run": "b" }))
        .await
        .unwrap();

    assert_eq!(
        (err.code, err.message.as_str()),
        (
            -32602,
            "skill \"bad\": invalid frontmatter field allowedTools: \"grep\" is not a tool (the tools are get, search, env, think, set, cp, mv, rm, sh, update, ask_user, call)"
        )
    );
    assert_eq!(skills, json!([]));
    server.stop().await;
}

/// Skills named at a run's start (`attributes.skills`) are the run's before its first turn, so
/// that turn is already built with them; a continuation that names one adds it before its loop;
/// a skill that does not exist refuses the start, and no run is made.
#[actix_rt::test]
async fn skills_named_at_the_start_shape_the_first_turn() {
    let server = TestServer::start().await;
    skill_file(
        &server,
        "readonly",
        "---\ndescription: Look, do not touch\nallowedTools: [get, env]\n---\nOnly read.\n",
    );
    for _ in 0..3 {
        server.provider.push(Reply::content(DONE));
    }
    let mut client = project_with(&server, "sk", &[("a.txt", "a\n")]).await;

    let refused = client
        .call("set", json!({ "path": "run://nope", "body": "One", "attributes": { "model": "fast", "mode": "act", "skills": ["missing"] } }))
        .await;
    client
        .call("set", json!({ "path": "run://r", "body": "One", "attributes": { "model": "fast", "mode": "act", "skills": ["readonly"] } }))
        .await
        .unwrap();
    wait_status(&mut client, "r", 200).await;
    client
        .call("set", json!({ "path": "run://q", "body": "One", "attributes": { "model": "fast", "mode": "act" } }))
        .await
        .unwrap();
    wait_status(&mut client, "q", 200).await;
    client
        .call(
            "set",
            json!({ "path": "run://q", "body": "Two", "attributes": { "skills": ["readonly"] } }),
        )
        .await
        .unwrap();
    wait_status(&mut client, "q", 200).await;
    let runs = client.call("getRuns", json!({})).await.unwrap();

    assert!(
        format!("{refused:?}").contains("skill \\\"missing\\\" not found"),
        "{refused:?}"
    );
    let aliases: Vec<&str> = runs["runs"]
        .as_array()
        .or(runs.as_array())
        .into_iter()
        .flatten()
        .filter_map(|r| r["alias"].as_str())
        .collect();
    assert!(!aliases.contains(&"nope"), "{runs}");
    assert_eq!(
        (
            tools_line(&system(&server, 0)),
            tools_line(&system(&server, 1)),
            tools_line(&system(&server, 2))
        ),
        (
            "Tools available: get, env, think, update".to_owned(),
            "Tools available: get, env, think, set, cp, mv, rm, sh, update, ask_user".to_owned(),
            "Tools available: get, env, think, update".to_owned()
        )
    );
}
