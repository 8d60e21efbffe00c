//! Crash recovery with the real binary: a run waiting on a proposal survives `kill -9` and completes after the restart, on the model its loop was routed to.

use crate::support::accept;
use crate::support::process::ServerProcess;
use rummy_testkit::{FakeProvider, Reply, RpcClient};
use serde_json::{json, Value};
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(20);

fn spawn(home: &Path, provider: &FakeProvider) -> (ServerProcess, u16) {
    spawn_with(home, provider, &[])
}

fn spawn_with(home: &Path, provider: &FakeProvider, vars: &[(&str, &str)]) -> (ServerProcess, u16) {
    let base_url = provider.base_url();
    let mut all = vec![
        ("OPENAI_BASE_URL", base_url.as_str()),
        ("RUMMY_MODEL_fast", "openai/fake-model"),
    ];
    all.extend_from_slice(vars);
    let server = ServerProcess::start(home, &all, Stdio::null());
    let port = server.port;
    (server, port)
}

async fn connect(port: u16, root: &Path) -> RpcClient {
    crate::support::process::project_client(port, "crash", root, WAIT).await
}

/// On a server spawned with `vars`, starts run `crash` with `body` and `attributes`, waits
/// for its proposal, and kills the server (-9); the proposal's path.
async fn crash_at_proposal(
    home: &Path,
    project: &Path,
    provider: &FakeProvider,
    vars: &[(&str, &str)],
    body: &str,
    attributes: Value,
) -> String {
    let (first, port) = spawn_with(home, provider, vars);
    let mut client = connect(port, project).await;
    client
        .call(
            "set",
            json!({ "path": "run://crash", "body": body, "attributes": attributes }),
        )
        .await
        .unwrap();
    let proposed = client
        .next_notification("run/proposal", WAIT)
        .await
        .unwrap();
    first.kill();
    proposed["proposed"][0]["path"].as_str().unwrap().to_owned()
}

/// Accepts the proposal at `path` of run `crash` and waits for the run to finish; its last `run/state`.
async fn accept_and_finish(client: &mut RpcClient, path: &str) -> Value {
    accept(client, "crash", path).await;
    client
        .wait_for_notification("run/state", WAIT, |p| p["status"] == json!(200))
        .await
        .unwrap()
}

/// kill -9 while a proposal waits; after a restart the proposal is still pending, accepting it resumes the turn, and the run completes.
#[actix_rt::test]
async fn pending_proposal_survives_a_crash() {
    let provider = FakeProvider::start().unwrap();
    provider.push(Reply::content(
        "<set path=\"app.txt\"><<<<<<< SEARCH\nv1\n=======\nv2\n>>>>>>> REPLACE</set>\n<update status=\"102\">edited</update>",
    ));
    provider.push(Reply::content("<update status=\"200\">upgraded</update>"));
    let home = tempfile::TempDir::new().unwrap();
    let project = tempfile::TempDir::new().unwrap();
    std::fs::write(project.path().join("app.txt"), "v1\n").unwrap();

    let path = crash_at_proposal(
        home.path(),
        project.path(),
        &provider,
        &[],
        "Upgrade",
        json!({ "model": "fast", "mode": "act" }),
    )
    .await;

    let (second, port) = spawn(home.path(), &provider);
    let mut client = connect(port, project.path()).await;
    let run = client
        .call("getRun", json!({ "run": "crash" }))
        .await
        .unwrap();
    assert_eq!(
        run["status"],
        json!(202),
        "the run still waits on its proposal"
    );
    let done = accept_and_finish(&mut client, &path).await;
    assert_eq!(done["summary"], json!("upgraded"));
    assert_eq!(
        std::fs::read_to_string(project.path().join("app.txt")).unwrap(),
        "v2\n"
    );
    assert_eq!(provider.chat_requests().len(), 2);
    second.kill();
}

/// Why a loop ended is stored with it: after a restart `getRun` still says `max_turns`.
#[actix_rt::test]
async fn the_stop_reason_survives_a_restart() {
    let provider = FakeProvider::start().unwrap();
    provider.push(Reply::content("<update status=\"102\">step</update>"));
    let home = tempfile::TempDir::new().unwrap();
    let project = tempfile::TempDir::new().unwrap();
    let (first, port) = spawn_with(home.path(), &provider, &[("RUMMY_MAX_TURNS", "1")]);
    let mut client = connect(port, project.path()).await;
    client
        .call(
            "set",
            json!({ "path": "run://crash", "body": "Go", "attributes": { "model": "fast" } }),
        )
        .await
        .unwrap();
    let last = client
        .wait_for_notification("run/state", WAIT, |p| p["status"] == json!(200))
        .await
        .unwrap();
    assert_eq!(last["stopReason"], json!("max_turns"));
    first.kill();

    let (second, port) = spawn(home.path(), &provider);
    let mut client = connect(port, project.path()).await;
    let run = client
        .call("getRun", json!({ "run": "crash" }))
        .await
        .unwrap();
    assert_eq!(
        (run["status"].clone(), run["stopReason"].clone()),
        (json!(200), json!("max_turns"))
    );
    second.kill();
}

/// A routed loop keeps its model across a crash: the turn after the restart goes to the routed model too.
#[actix_rt::test]
async fn routed_loop_keeps_its_model_after_a_crash() {
    let provider = FakeProvider::start().unwrap();
    provider.push(Reply::content(
        "<set path=\"app.txt\"><<<<<<< SEARCH\nv1\n=======\nv2\n>>>>>>> REPLACE</set>\n<update status=\"102\">edited</update>",
    ));
    provider.push(Reply::content("<update status=\"200\">fixed</update>"));
    let home = tempfile::TempDir::new().unwrap();
    let project = tempfile::TempDir::new().unwrap();
    std::fs::write(project.path().join("app.txt"), "v1\n").unwrap();
    let routing = [
        ("RUMMY_MODEL_deep", "openai/deep-model"),
        ("RUMMY_ROUTE_CODE", "deep"),
    ];

    let path = crash_at_proposal(
        home.path(),
        project.path(),
        &provider,
        &routing,
        "Fix the bug in this traceback",
        json!({ "model": "fast", "mode": "act", "route": true }),
    )
    .await;

    // Restarted without the route map (`deep` stays in the database): the loop's choice was made once, when it was claimed.
    let (second, port) = spawn(home.path(), &provider);
    let mut client = connect(port, project.path()).await;
    let run = client
        .call("getRun", json!({ "run": "crash" }))
        .await
        .unwrap();
    assert_eq!(
        (&run["status"], &run["route"]),
        (&json!(202), &json!({ "class": "code", "model": "deep" }))
    );
    let done = accept_and_finish(&mut client, &path).await;
    assert_eq!(done["summary"], json!("fixed"));
    let models: Vec<_> = provider
        .chat_requests()
        .iter()
        .map(|r| r.body["model"].clone())
        .collect();
    assert_eq!(models, vec![json!("deep-model"), json!("deep-model")]);
    second.kill();
}

/// At start-up, runs finished more than `RUMMY_RETENTION_DAYS` ago are gone with their
/// entries, and so are calls logged that long ago; runs finished since stay.
#[actix_rt::test]
async fn runs_and_calls_past_the_retention_period_are_removed_at_start_up() {
    let provider = FakeProvider::start().unwrap();
    provider.push(Reply::content(
        "<set path=\"known://f\">1</set><update status=\"200\">old done</update>",
    ));
    provider.push(Reply::content("<update status=\"200\">fresh done</update>"));
    let home = tempfile::TempDir::new().unwrap();
    let project = tempfile::TempDir::new().unwrap();

    let (first, port) = spawn(home.path(), &provider);
    let mut client = connect(port, project.path()).await;
    for alias in ["old", "fresh"] {
        client
            .call(
                "set",
                json!({ "path": format!("run://{alias}"), "body": "Go", "attributes": { "model": "fast" } }),
            )
            .await
            .unwrap();
        client
            .wait_for_notification("run/state", WAIT, |p| {
                p["run"] == json!(alias) && p["status"] == json!(200)
            })
            .await
            .unwrap();
    }
    first.kill();
    let database = crate::support::database::of_home(home.path());
    {
        use diesel::prelude::*;
        use rummy_store::schema::{rpc_log, runs};
        let mut db = crate::support::database::connect(&database);
        let forty_days_ago = rummy_actors::clock::now().days_before(40).0;
        diesel::update(runs::table.filter(runs::alias.eq("old")))
            .set(runs::updated_at.eq(forty_days_ago))
            .execute(&mut db)
            .unwrap();
        diesel::update(rpc_log::table.filter(rpc_log::params.like("%run://old%")))
            .set(rpc_log::created_at.eq(forty_days_ago))
            .execute(&mut db)
            .unwrap();
    }

    let (second, port) = spawn_with(home.path(), &provider, &[("RUMMY_RETENTION_DAYS", "31")]);
    let mut client = connect(port, project.path()).await;
    let gone = client.call_err("getRun", json!({ "run": "old" })).await;
    assert_eq!(gone.code, -32004);
    let fresh = client
        .call("getRun", json!({ "run": "fresh" }))
        .await
        .unwrap();
    assert_eq!(fresh["summary"], json!("fresh done"));
    second.kill();
    let mut db = crate::support::database::connect(&database);
    use diesel::prelude::*;
    use rummy_store::schema::{entries, rpc_log};
    let facts: i64 = entries::table
        .filter(entries::path.eq("known://f"))
        .count()
        .get_result(&mut db)
        .unwrap();
    assert_eq!(facts, 0, "the old run's entries went with it");
    let logged = |db: &mut rummy_store::db::Db, run: &str| -> i64 {
        rpc_log::table
            .filter(rpc_log::params.like(format!("%run://{run}%")))
            .count()
            .get_result(db)
            .unwrap()
    };
    assert_eq!(
        (logged(&mut db, "old"), logged(&mut db, "fresh")),
        (0, 1),
        "the old call's log went; the recent one stays"
    );
}
