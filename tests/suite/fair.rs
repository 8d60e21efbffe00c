//! Fair use: over a runs-in-flight limit (per project, per user) or a project's cost ceiling a
//! new loop queues — status 100 with `queued: {reason, position}` — and starts, round-robin by
//! the user who started its run and in the order runs began waiting within a user, when a place
//! frees or the ceiling is lifted; a run waiting on a person holds no place, and once answered
//! waits for one (at 102, `run/progress` `queued`) before its next model call; queued runs stay
//! queued across a restart; a connection past its request rate is answered -32006 with the
//! exact `retryAfterMs`.

use crate::support::process::ServerProcess;
use crate::support::{accept, prompt_element, start_run, wait_status, TestServer, WAIT};
use rummy_provider::time::Millis;
use rummy_store::period::CostPeriod;
use rummy_testkit::{FakeProvider, Gate, Reply, RpcClient};
use serde_json::{json, Value};
use std::process::Stdio;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// A reply that ends its loop with `summary`.
fn done(summary: &str) -> Reply {
    Reply::content(format!("<update status=\"200\">{summary}</update>"))
}

/// Waits for `run`'s `run/state` at 100 that says why it waits; that `queued`.
async fn queued_push(client: &mut RpcClient, run: &str) -> Value {
    let run = run.to_owned();
    let state = client
        .wait_for_notification("run/state", WAIT, move |p| {
            p["run"] == json!(run) && p["status"] == json!(100)
        })
        .await
        .unwrap_or_else(|e| panic!("no queued run/state: {e:?}"));
    state["queued"].clone()
}

/// `getRun`'s status and `queued` of `run`.
async fn standing(client: &mut RpcClient, run: &str) -> (Value, Value) {
    let state = client.call("getRun", json!({ "run": run })).await.unwrap();
    (state["status"].clone(), state["queued"].clone())
}

/// Under `RUMMY_MAX_RUNS_PER_PROJECT=1`, later runs queue with their places in line and start
/// one by one, in the order they began waiting, as the running one ends.
#[actix_rt::test]
async fn over_the_project_limit_runs_queue_and_start_in_order() {
    let server = TestServer::start_with(|c| c.fair.max_runs_per_project = Some(1)).await;
    let (first, second) = (Gate::new(), Gate::new());
    server.provider.push(done("a done").held(&first));
    server.provider.push(done("b done").held(&second));
    server.provider.push(done("c done"));
    let mut client = server.project_client("limits").await;
    start_run(&mut client, "run://a", "First").await;
    server.provider.wait_for_chat_requests(1, WAIT).await;
    start_run(&mut client, "run://b", "Second").await;
    assert_eq!(
        queued_push(&mut client, "b").await,
        json!({ "reason": "runs_limit", "position": 1 })
    );
    start_run(&mut client, "run://c", "Third").await;
    assert_eq!(
        queued_push(&mut client, "c").await,
        json!({ "reason": "runs_limit", "position": 2 })
    );
    assert_eq!(
        standing(&mut client, "b").await,
        (json!(100), json!({ "reason": "runs_limit", "position": 1 }))
    );
    assert_eq!(server.provider.chat_requests().len(), 1, "b and c wait");

    first.open();
    wait_status(&mut client, "a", 200).await;
    server.provider.wait_for_chat_requests(2, WAIT).await;
    assert_eq!(
        standing(&mut client, "c").await,
        (json!(100), json!({ "reason": "runs_limit", "position": 1 })),
        "c moved up behind b"
    );
    assert_eq!(standing(&mut client, "b").await.1, json!(null));
    second.open();
    let c = wait_status(&mut client, "c", 200).await;
    assert_eq!((&c["summary"], c.get("queued")), (&json!("c done"), None));
    let b = client.call("getRun", json!({ "run": "b" })).await.unwrap();
    assert_eq!(b["summary"], json!("b done"));
    server.stop().await;
}

/// A run waiting on a person (202) holds no place: under a project limit of 1 another run
/// starts and ends meanwhile, and the first goes on once its question is answered.
#[actix_rt::test]
async fn a_run_waiting_on_a_person_holds_no_place() {
    let server = TestServer::start_with(|c| c.fair.max_runs_per_project = Some(1)).await;
    server.provider.push(Reply::content(
        "<ask_user question=\"Which database?\">PostgreSQL; SQLite</ask_user>\n<update status=\"102\">asking</update>",
    ));
    server.provider.push(done("b done"));
    server.provider.push(done("SQLite it is"));
    let mut client = server.project_client("person").await;
    start_run(&mut client, "run://a", "Pick a database").await;
    let proposed = client
        .next_notification("run/proposal", WAIT)
        .await
        .unwrap();
    let path = proposed["proposed"][0]["path"].as_str().unwrap().to_owned();
    wait_status(&mut client, "a", 202).await;

    start_run(&mut client, "run://b", "Meanwhile").await;
    let b = wait_status(&mut client, "b", 200).await;
    assert_eq!(b["summary"], json!("b done"));

    client
        .call(
            "set",
            json!({ "run": "a", "path": path, "state": "resolved", "body": "SQLite" }),
        )
        .await
        .unwrap();
    let a = wait_status(&mut client, "a", 200).await;
    assert_eq!(a["summary"], json!("SQLite it is"));
    server.stop().await;
}

/// A connection with an admin token `ops`, made by `owner` (whose connection then closes: a
/// token exists).
async fn admin(server: &TestServer, owner: &mut RpcClient) -> RpcClient {
    let made = owner
        .call("token/create", json!({ "user": "ops", "admin": true }))
        .await
        .unwrap();
    let token = made["token"].as_str().unwrap();
    RpcClient::connect_with_headers(
        &server.url(),
        &[("Authorization", &format!("Bearer {token}"))],
    )
    .await
    .unwrap()
}

/// A connection of `user`, a member of project `fair`, with a token `owner` made for them (over
/// the protocol, as the owner may while no token exists or as an admin).
async fn member(server: &TestServer, owner: &mut RpcClient, user: &str) -> RpcClient {
    let made = owner
        .call(
            "token/create",
            json!({ "user": user, "projects": ["fair"] }),
        )
        .await
        .unwrap();
    let token = made["token"].as_str().unwrap();
    RpcClient::connect_with_headers(
        &server.url(),
        &[("Authorization", &format!("Bearer {token}"))],
    )
    .await
    .unwrap()
}

/// Under `RUMMY_MAX_RUNS_PER_USER=1`, a user's second run queues while their first runs; another
/// user's run starts meanwhile; the queued one starts when the first ends.
#[actix_rt::test]
async fn over_the_user_limit_only_that_users_runs_queue() {
    let server = TestServer::start_with(|c| c.fair.max_runs_per_user = Some(1)).await;
    let gate = Gate::new();
    server.provider.push(done("alice 1").held(&gate));
    server.provider.push(done("bob 1"));
    server.provider.push(done("alice 2"));
    let mut owner = server.project_client("fair").await;
    let mut admin = admin(&server, &mut owner).await;
    let mut alice = member(&server, &mut admin, "alice").await;
    let mut bob = member(&server, &mut admin, "bob").await;
    for client in [&mut alice, &mut bob] {
        client
            .call("rummy/hello", json!({ "name": "fair" }))
            .await
            .unwrap();
    }

    start_run(&mut alice, "run://a1", "One").await;
    server.provider.wait_for_chat_requests(1, WAIT).await;
    start_run(&mut alice, "run://a2", "Two").await;
    assert_eq!(
        queued_push(&mut alice, "a2").await,
        json!({ "reason": "runs_limit", "position": 1 })
    );
    start_run(&mut bob, "run://b1", "Mine").await;
    let b1 = wait_status(&mut bob, "b1", 200).await;
    assert_eq!(b1["summary"], json!("bob 1"));
    assert_eq!(
        standing(&mut bob, "a2").await,
        (json!(100), json!({ "reason": "runs_limit", "position": 1 }))
    );

    gate.open();
    wait_status(&mut alice, "a1", 200).await;
    let a2 = wait_status(&mut alice, "a2", 200).await;
    assert_eq!(a2["summary"], json!("alice 2"));
    server.stop().await;
}

/// Under `RUMMY_MAX_RUNS_PER_PROJECT=1`, alice starts eight runs (one runs, seven queue), then
/// bob one: bob's run starts second, not ninth — places go round the users — and alice's start
/// after it in the order she started them.
#[actix_rt::test]
async fn one_users_queued_runs_do_not_hold_another_users_run() {
    let server = TestServer::start_with(|c| c.fair.max_runs_per_project = Some(1)).await;
    let gate = Gate::new();
    server.provider.push(done("first").held(&gate));
    server.provider.set_fallback(done("next"));
    let mut owner = server.project_client("fair").await;
    let mut alice = member(&server, &mut owner, "alice").await;
    let mut bob = member(&server, &mut owner, "bob").await;
    for client in [&mut alice, &mut bob] {
        client
            .call("rummy/hello", json!({ "name": "fair" }))
            .await
            .unwrap();
    }
    start_run(&mut alice, "run://a1", "Task a1").await;
    server.provider.wait_for_chat_requests(1, WAIT).await;
    for n in 2..=8 {
        let alias = format!("a{n}");
        start_run(
            &mut alice,
            &format!("run://{alias}"),
            &format!("Task {alias}"),
        )
        .await;
        assert_eq!(
            queued_push(&mut alice, &alias).await,
            json!({ "reason": "runs_limit", "position": n - 1 })
        );
    }
    start_run(&mut bob, "run://b1", "Task b1").await;
    assert_eq!(
        queued_push(&mut bob, "b1").await,
        json!({ "reason": "runs_limit", "position": 1 }),
        "bob's run is first in line"
    );

    gate.open();
    wait_status(&mut alice, "a8", 200).await;
    let started: Vec<String> = server
        .provider
        .chat_requests()
        .iter()
        .map(|r| {
            let user = r.body["messages"][1]["content"]
                .as_str()
                .unwrap_or_default();
            let prompt = prompt_element(user);
            let task = prompt.split("Task ").nth(1).unwrap_or_default();
            task.chars().take(2).collect()
        })
        .collect();
    assert_eq!(
        started,
        ["a1", "b1", "a2", "a3", "a4", "a5", "a6", "a7", "a8"]
    );
    server.stop().await;
}

/// Under `RUMMY_MAX_RUNS_PER_PROJECT=1`, a run answered while another holds the only place
/// applies the accepted edit at once, then waits for a place before its next model call: it
/// stays 102 and its clients get `run/progress` `queued` (`runs_limit`); it goes on when the
/// other run ends.
#[actix_rt::test]
async fn a_loop_going_on_after_its_answer_waits_for_a_place() {
    let server = TestServer::start_with(|c| c.fair.max_runs_per_project = Some(1)).await;
    let root = std::path::PathBuf::from(server.project_root("going"));
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(root.join("b.txt"), "old\n").unwrap();
    let gate = Gate::new();
    server.provider.push(Reply::content(
        "<set path=\"b.txt\"><<<<<<< SEARCH\nold\n=======\nnew\n>>>>>>> REPLACE</set>\n<update status=\"102\">edited</update>",
    ));
    server.provider.push(done("b done").held(&gate));
    server.provider.push(done("a done"));
    let mut client = server.project_client("going").await;
    client
        .call(
            "set",
            json!({ "path": "run://a", "body": "Edit b.txt", "attributes": { "model": "fast", "mode": "act" } }),
        )
        .await
        .unwrap();
    let proposed = client
        .next_notification("run/proposal", WAIT)
        .await
        .unwrap();
    let path = proposed["proposed"][0]["path"].as_str().unwrap().to_owned();
    wait_status(&mut client, "a", 202).await;
    start_run(&mut client, "run://b", "Hold the place").await;
    server.provider.wait_for_chat_requests(2, WAIT).await;

    assert_eq!(
        accept(&mut client, "a", &path).await["state"],
        json!("resolved")
    );
    let progress = client
        .wait_for_notification("run/progress", WAIT, |p| {
            p["run"] == json!("a") && p["status"] == json!("queued")
        })
        .await
        .unwrap();
    assert_eq!(
        progress,
        json!({ "run": "a", "status": "queued", "detail": "runs_limit", "turn": 2 })
    );
    assert_eq!(
        std::fs::read_to_string(root.join("b.txt")).unwrap(),
        "new\n",
        "the accepted edit is applied before the wait"
    );
    assert_eq!(standing(&mut client, "a").await, (json!(102), json!(null)));
    assert_eq!(server.provider.chat_requests().len(), 2, "a waits");

    gate.open();
    wait_status(&mut client, "b", 200).await;
    let a = wait_status(&mut client, "a", 200).await;
    assert_eq!(a["summary"], json!("a done"));
    assert_eq!(server.provider.chat_requests().len(), 3);
    server.stop().await;
}

/// Cancelling a run that waits for a place after its answer ends its loop 499 without another
/// model call, and its ask leaves the line: a run started next is first in it.
#[actix_rt::test]
async fn cancelling_a_loop_waiting_for_a_place_after_its_answer_ends_it() {
    let server = TestServer::start_with(|c| c.fair.max_runs_per_project = Some(1)).await;
    let gate = Gate::new();
    server.provider.push(Reply::content(
        "<ask_user question=\"Go on?\">yes; no</ask_user>\n<update status=\"102\">asking</update>",
    ));
    server.provider.push(done("b done").held(&gate));
    server.provider.push(done("c done"));
    let mut client = server.project_client("withdraw").await;
    start_run(&mut client, "run://a", "Ask first").await;
    let proposed = client
        .next_notification("run/proposal", WAIT)
        .await
        .unwrap();
    let path = proposed["proposed"][0]["path"].as_str().unwrap().to_owned();
    wait_status(&mut client, "a", 202).await;
    start_run(&mut client, "run://b", "Hold the place").await;
    server.provider.wait_for_chat_requests(2, WAIT).await;
    client
        .call(
            "set",
            json!({ "run": "a", "path": path, "state": "resolved", "body": "yes" }),
        )
        .await
        .unwrap();
    client
        .wait_for_notification("run/progress", WAIT, |p| {
            p["run"] == json!("a") && p["status"] == json!("queued")
        })
        .await
        .unwrap();

    client
        .call("set", json!({ "path": "run://a", "state": "cancelled" }))
        .await
        .unwrap();
    let a = wait_status(&mut client, "a", 499).await;
    assert_eq!(a["stopReason"], json!("cancelled"));
    start_run(&mut client, "run://c", "After").await;
    assert_eq!(
        queued_push(&mut client, "c").await,
        json!({ "reason": "runs_limit", "position": 1 })
    );
    gate.open();
    let c = wait_status(&mut client, "c", 200).await;
    assert_eq!(c["summary"], json!("c done"));
    assert_eq!(
        server.provider.chat_requests().len(),
        3,
        "a never called the model again"
    );
    server.stop().await;
}

/// Under `RUMMY_MAX_REQUESTS_PER_SECOND=3`, a batch of four calls gets three answers and a
/// -32006 with `retryAfterMs` (at most a third of a second); `ping` still answers; after that
/// wait a call passes.
#[actix_rt::test]
async fn past_the_request_rate_a_call_is_refused_with_the_wait() {
    let server = TestServer::start_with(|c| c.fair.max_requests_per_second = Some(3)).await;
    let mut client = server.client().await;
    let call = |id: u64| json!({ "jsonrpc": "2.0", "id": id, "method": "getProjects" });
    let batch = json!([call(1), call(2), call(3), call(4)]);
    client.send_text(&batch.to_string()).await.unwrap();
    let answers = client.next_response().await.unwrap();
    let answers = answers.as_array().unwrap();
    let oks: Vec<bool> = answers.iter().map(|a| a.get("result").is_some()).collect();
    assert_eq!(oks, vec![true, true, true, false]);
    let refused = &answers[3]["error"];
    let wait = refused["data"]["retryAfterMs"].as_u64().unwrap();
    assert!(
        (1..=334).contains(&wait),
        "a third of a second at most: {wait}"
    );
    assert_eq!(
        (refused["code"].clone(), refused["data"]["kind"].clone(), refused["message"].clone()),
        (
            json!(-32006),
            json!("overloaded"),
            json!(format!("overloaded: this connection sends more than 3 calls a second; send this again in {wait} ms"))
        )
    );
    assert_eq!(client.call("ping", json!({})).await.unwrap(), json!({}));

    actix_rt::time::sleep(Duration::from_millis(wait)).await;
    assert_eq!(
        client.call("getProjects", json!({})).await.unwrap(),
        json!([])
    );
    server.stop().await;
}

/// Without `RUMMY_MAX_REQUESTS_PER_SECOND` a connection is not limited.
#[actix_rt::test]
async fn without_a_rate_many_quick_calls_all_pass() {
    let server = TestServer::start().await;
    let mut client = server.client().await;
    let batch: Vec<Value> = (1..=100)
        .map(|id| json!({ "jsonrpc": "2.0", "id": id, "method": "discover" }))
        .collect();
    client.send_text(&json!(batch).to_string()).await.unwrap();
    let answers = client.next_response().await.unwrap();
    let refused = answers
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a.get("error").is_some())
        .count();
    assert_eq!(refused, 0);
    server.stop().await;
}

fn now() -> Millis {
    let ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis();
    Millis(i64::try_from(ms).unwrap())
}

/// A project whose turns cost what its ceiling allows holds new loops (`cost_ceiling`); raising
/// the ceiling starts them; `null` removes it; `getProjects` shows ceiling, period and spending.
#[actix_rt::test]
async fn at_the_cost_ceiling_new_loops_queue_until_it_is_raised() {
    let server = TestServer::start().await;
    server
        .provider
        .push(done("a done").usage(1000, 100).cost(0.01));
    server
        .provider
        .push(done("b done").usage(1000, 100).cost(0.01));
    server
        .provider
        .push(done("c done").usage(1000, 100).cost(0.01));
    let mut client = server.project_client("spend").await;
    start_run(&mut client, "run://a", "Spend").await;
    wait_status(&mut client, "a", 200).await;

    let set = client
        .call(
            "project/set",
            json!({ "name": "spend", "costCeiling": 0.005 }),
        )
        .await
        .unwrap();
    let period_start = CostPeriod::Month.start(now()).to_rfc3339();
    let project_id = set["projectId"].clone();
    let created = set["createdAt"].clone();
    let listed = |ceiling: Value, spent: f64| {
        json!({ "name": "spend", "projectId": project_id, "projectRoot": server.project_root("spend"),
                "createdAt": created, "costCeiling": ceiling, "period": "month",
                "periodStart": period_start, "spent": spent, "commandNetwork": null, "webDomains": null })
    };
    assert_eq!(set, listed(json!(0.005), 0.01));

    start_run(&mut client, "run://b", "Spend more").await;
    assert_eq!(
        queued_push(&mut client, "b").await,
        json!({ "reason": "cost_ceiling", "position": 1 })
    );
    assert_eq!(
        standing(&mut client, "b").await,
        (
            json!(100),
            json!({ "reason": "cost_ceiling", "position": 1 })
        )
    );
    assert_eq!(server.provider.chat_requests().len(), 1, "b waits");

    client
        .call("project/set", json!({ "name": "spend", "costCeiling": 1 }))
        .await
        .unwrap();
    let b = wait_status(&mut client, "b", 200).await;
    assert_eq!(b["summary"], json!("b done"));
    let projects = client.call("getProjects", json!({})).await.unwrap();
    assert_eq!(projects, json!([listed(json!(1.0), 0.02)]));

    client
        .call(
            "project/set",
            json!({ "name": "spend", "costCeiling": 0.0, "period": "day" }),
        )
        .await
        .unwrap();
    client
        .call("set", json!({ "path": "run://b", "body": "Once more" }))
        .await
        .unwrap();
    assert_eq!(
        queued_push(&mut client, "b").await,
        json!({ "reason": "cost_ceiling", "position": 1 })
    );
    let removed = client
        .call(
            "project/set",
            json!({ "name": "spend", "costCeiling": null }),
        )
        .await
        .unwrap();
    assert_eq!(
        (removed["costCeiling"].clone(), removed["period"].clone()),
        (json!(null), json!("day"))
    );
    let b = wait_status(&mut client, "b", 200).await;
    assert_eq!(b["summary"], json!("c done"));
    server.stop().await;
}

/// `project/set` is an admin's: a member is refused -32003; a bad period, a negative ceiling or
/// an unknown field is -32602; an unknown project -32004.
#[actix_rt::test]
async fn project_set_is_an_admins_and_checks_what_it_is_given() {
    let server = TestServer::start().await;
    let mut owner = server.project_client("fair").await;
    let table = [
        (json!({ "name": "fair", "period": "week" }), -32602, "invalid params: period: expected \"month\" or \"day\""),
        (json!({ "name": "fair", "costCeiling": -1 }), -32602, "invalid params: costCeiling: expected a number of US dollars, 0 or more (null removes the ceiling)"),
        (json!({ "name": "fair", "ceiling": 1 }), -32602, ""),
        (json!({ "name": "nowhere", "costCeiling": 1 }), -32004, "project \"nowhere\" not found"),
    ];
    for (params, code, message) in table {
        let err = owner.call_err("project/set", params.clone()).await;
        assert_eq!(err.code, code, "{params}: {err:?}");
        if !message.is_empty() {
            assert_eq!(err.message, message, "{params}");
        }
    }
    let mut alice = member(&server, &mut owner, "alice").await;
    let err = alice
        .call_err("project/set", json!({ "name": "fair", "costCeiling": 1 }))
        .await;
    assert_eq!(
        (err.code, err.message.as_str()),
        (
            -32003,
            "permission denied: project/set needs an admin token"
        )
    );
    server.stop().await;
}

/// A continuation sent while the run's loop runs waits behind it: `getRun` says
/// `queued: {reason: "loop", position: 1}` beside 102.
#[actix_rt::test]
async fn a_loop_behind_the_runs_own_is_queued_for_loop() {
    let server = TestServer::start().await;
    let gate = Gate::new();
    server.provider.push(done("first").held(&gate));
    server.provider.push(done("second"));
    let mut client = server.project_client("loop").await;
    start_run(&mut client, "run://a", "First").await;
    server.provider.wait_for_chat_requests(1, WAIT).await;
    client
        .call("set", json!({ "path": "run://a", "body": "Second" }))
        .await
        .unwrap();
    assert_eq!(
        standing(&mut client, "a").await,
        (json!(102), json!({ "reason": "loop", "position": 1 }))
    );
    gate.open();
    let deadline = Instant::now() + WAIT;
    loop {
        let state = client.next_notification("run/state", WAIT).await.unwrap();
        if state["summary"] == json!("second") && state["status"] == json!(200) {
            assert_eq!(state.get("queued"), None, "nothing waits any more");
            break;
        }
        assert!(Instant::now() < deadline, "the second loop never ended");
    }
    server.stop().await;
}

/// The built binary with the fake provider's `fast` model and a per-project limit of 1.
fn spawn(home: &std::path::Path, provider: &FakeProvider) -> ServerProcess {
    let base_url = provider.base_url();
    let vars = [
        ("OPENAI_BASE_URL", base_url.as_str()),
        ("RUMMY_MODEL_fast", "openai/fake-model"),
        ("RUMMY_MAX_RUNS_PER_PROJECT", "1"),
    ];
    ServerProcess::start(home, &vars, Stdio::null())
}

async fn connect(server: &ServerProcess, root: &std::path::Path) -> RpcClient {
    crate::support::process::project_client(server.port, "restart", root, WAIT).await
}

/// Runs queued behind a limit stay queued, in order, across a crash (`kill -9`): after the
/// restart the first of them takes the place the interrupted run held, and the second starts
/// when it ends.
#[actix_rt::test]
async fn queued_runs_stay_queued_in_order_across_a_restart() {
    let provider = FakeProvider::start().unwrap();
    let gate = Gate::new();
    provider.push(Reply::hang());
    provider.push(done("b done").held(&gate));
    provider.push(done("c done"));
    let home = tempfile::TempDir::new().unwrap();
    let project = tempfile::TempDir::new().unwrap();

    let first = spawn(home.path(), &provider);
    let mut client = connect(&first, project.path()).await;
    start_run(&mut client, "run://a", "Hang").await;
    provider.wait_for_chat_requests(1, WAIT).await;
    start_run(&mut client, "run://b", "Second").await;
    assert_eq!(queued_push(&mut client, "b").await["position"], json!(1));
    start_run(&mut client, "run://c", "Third").await;
    assert_eq!(queued_push(&mut client, "c").await["position"], json!(2));
    first.kill();

    let second = spawn(home.path(), &provider);
    let mut client = connect(&second, project.path()).await;
    provider.wait_for_chat_requests(2, WAIT).await;
    assert_eq!(
        standing(&mut client, "c").await,
        (json!(100), json!({ "reason": "runs_limit", "position": 1 }))
    );
    assert_eq!(
        standing(&mut client, "a").await.0,
        json!(500),
        "a was interrupted"
    );
    gate.open();
    let c = wait_status(&mut client, "c", 200).await;
    assert_eq!(c["summary"], json!("c done"));
    let b = client.call("getRun", json!({ "run": "b" })).await.unwrap();
    assert_eq!(
        (b["status"].clone(), b["summary"].clone()),
        (json!(200), json!("b done"))
    );
    drop(second);
}

/// Cancelling a run that waits for a place cancels its waiting loop (499) without running it;
/// the line moves up behind it.
#[actix_rt::test]
async fn cancelling_a_waiting_run_ends_its_loop_without_running_it() {
    let server = TestServer::start_with(|c| c.fair.max_runs_per_project = Some(1)).await;
    let gate = Gate::new();
    server.provider.push(done("a done").held(&gate));
    server.provider.push(done("c done"));
    let mut client = server.project_client("cancel").await;
    start_run(&mut client, "run://a", "First").await;
    server.provider.wait_for_chat_requests(1, WAIT).await;
    start_run(&mut client, "run://b", "Second").await;
    queued_push(&mut client, "b").await;
    start_run(&mut client, "run://c", "Third").await;
    assert_eq!(queued_push(&mut client, "c").await["position"], json!(2));

    client
        .call("set", json!({ "path": "run://b", "state": "cancelled" }))
        .await
        .unwrap();
    let b = wait_status(&mut client, "b", 499).await;
    assert_eq!(
        (&b["stopReason"], b.get("queued")),
        (&json!("cancelled"), None)
    );
    assert_eq!(
        standing(&mut client, "c").await,
        (json!(100), json!({ "reason": "runs_limit", "position": 1 }))
    );
    gate.open();
    let c = wait_status(&mut client, "c", 200).await;
    assert_eq!(c["summary"], json!("c done"));
    assert_eq!(
        server.provider.chat_requests().len(),
        2,
        "b never called the model"
    );
    server.stop().await;
}
