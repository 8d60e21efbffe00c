//! `rummy backup` and `rummy export` through the real binary, beside a real server process
//! (docs/design/operations.md): a backup taken while runs write is a whole, consistent database, and an
//! export is the run exactly as the server answers for it.

use crate::support::process::ServerProcess;
use diesel::connection::SimpleConnection;
use diesel::{Connection, QueryableByName, RunQueryDsl};
use pretty_assertions::assert_eq;
use rummy_store::db::Db;
use rummy_testkit::{FakeProvider, Reply, RpcClient};
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(30);

fn spawn(home: &Path, provider: &FakeProvider, max_turns: &str) -> ServerProcess {
    let base_url = provider.base_url();
    let vars = [
        ("OPENAI_BASE_URL", base_url.as_str()),
        ("RUMMY_MODEL_fast", "openai/fake-model"),
        ("RUMMY_MAX_TURNS", max_turns),
    ];
    ServerProcess::start(home, &vars, Stdio::null())
}

async fn connect(port: u16, name: &str, root: &Path) -> RpcClient {
    crate::support::process::project_client(port, name, root, WAIT).await
}

/// Runs `rummy ARGS` with only `RUMMY_HOME` (and the home's database) set, in `cwd`.
fn rummy(home: &Path, cwd: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rummy"))
        .args(args)
        .current_dir(cwd)
        .env_clear()
        .env("RUMMY_HOME", home)
        .envs(crate::support::database::vars(home))
        .output()
        .unwrap()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[derive(QueryableByName)]
struct Text {
    #[diesel(sql_type = diesel::sql_types::Text)]
    text: String,
}

/// A connection that only reads the database at `path`.
fn reader(path: &Path) -> Db {
    let mut conn = Db::establish(path.to_str().unwrap()).unwrap();
    conn.batch_execute("PRAGMA busy_timeout = 5000; PRAGMA query_only = ON;")
        .unwrap();
    conn
}

fn texts(conn: &mut Db, sql: &str) -> Vec<String> {
    diesel::sql_query(sql)
        .load::<Text>(conn)
        .unwrap()
        .into_iter()
        .map(|t| t.text)
        .collect()
}

/// Every table's rows, each as the SQL literals of its columns, sorted: two databases with the
/// same rows dump the same, whatever their pages look like.
fn dump(path: &Path) -> BTreeMap<String, Vec<String>> {
    let mut conn = reader(path);
    let tables = texts(
        &mut conn,
        "SELECT name AS text FROM sqlite_master WHERE type = 'table' \
         AND name NOT LIKE 'sqlite_%' AND sql NOT LIKE 'CREATE VIRTUAL TABLE%' ORDER BY name",
    );
    tables
        .into_iter()
        .map(|table| {
            let columns = texts(
                &mut conn,
                &format!("SELECT name AS text FROM pragma_table_info('{table}')"),
            );
            let row = columns
                .iter()
                .map(|c| format!("quote(\"{c}\")"))
                .collect::<Vec<_>>()
                .join(" || ',' || ");
            let mut rows = texts(&mut conn, &format!("SELECT {row} AS text FROM \"{table}\""));
            rows.sort();
            (table, rows)
        })
        .collect()
}

/// A model that, every turn, records a fact and carries on, answering after 5–25 ms, until
/// `done` is set: then it concludes each run's loop.
fn busy_model(provider: &FakeProvider, done: Arc<AtomicBool>) {
    let next = Arc::new(AtomicUsize::new(0));
    provider.set_responder(move |_| {
        let k = next.fetch_add(1, Ordering::Relaxed);
        let text = if done.load(Ordering::Relaxed) {
            "<update status=\"200\">done</update>".to_owned()
        } else {
            format!("<known path=\"known://note_{k}\">fact {k}</known>\n<update status=\"102\">step {k}</update>")
        };
        Reply::content(text).delay(Duration::from_millis(5 + (k as u64 * 7) % 20))
    });
}

/// A backup taken while eight runs are writing opens as a whole database (integrity and
/// foreign keys checked) holding every run started before it, each consistent with its own
/// turns; one taken once they are idle holds exactly the live database's rows; and an existing
/// file is never overwritten.
#[actix_rt::test]
async fn a_backup_taken_while_runs_write_is_a_consistent_copy() {
    if crate::support::database::on_postgres() {
        return; // SQLite's VACUUM INTO: PostgreSQL is backed up with pg_dump
    }
    let provider = FakeProvider::start().unwrap();
    let done = Arc::new(AtomicBool::new(false));
    busy_model(&provider, Arc::clone(&done));
    let home = tempfile::TempDir::new().unwrap();
    let project = tempfile::TempDir::new().unwrap();
    let out = tempfile::TempDir::new().unwrap();
    // The runs go on until told to stop: they are busy however long the backup takes.
    let server = spawn(home.path(), &provider, "10000");
    let mut client = connect(server.port, "busy", project.path()).await;
    let runs: Vec<String> = (0..8).map(|r| format!("r{r}")).collect();
    for run in &runs {
        client
            .call(
                "set",
                json!({ "path": format!("run://{run}"), "body": "work", "attributes": { "model": "fast" } }),
            )
            .await
            .unwrap();
    }
    while provider.chat_requests().len() < 16 {
        actix_rt::time::sleep(Duration::from_millis(5)).await;
    }

    let busy = out.path().join("busy.db");
    let taken = rummy(home.path(), out.path(), &["backup", "busy.db"]);
    assert!(taken.status.success(), "{}", stderr(&taken));
    let mut copy = reader(&busy);
    assert_eq!(
        texts(
            &mut copy,
            "SELECT integrity_check AS text FROM pragma_integrity_check"
        ),
        vec!["ok".to_owned()]
    );
    assert_eq!(
        texts(
            &mut copy,
            "SELECT \"table\" AS text FROM pragma_foreign_key_check"
        ),
        Vec::<String>::new()
    );
    assert_eq!(
        texts(&mut copy, "SELECT alias AS text FROM runs ORDER BY alias"),
        runs
    );
    // Each run's counters and its rows were copied together: no turn past the run's count, no
    // notification past its sequence.
    assert_eq!(
        texts(
            &mut copy,
            "SELECT runs.alias AS text FROM runs WHERE \
             (SELECT coalesce(max(sequence), 0) FROM turns WHERE turns.run_id = runs.id) >= runs.next_turn \
             OR (SELECT coalesce(max(seq), 0) FROM notifications n WHERE n.run_id = runs.id) >= runs.next_seq"
        ),
        Vec::<String>::new()
    );
    let copied_turns = texts(
        &mut copy,
        "SELECT CAST(count(*) AS TEXT) AS text FROM turns",
    );
    drop(copy);
    done.store(true, Ordering::Relaxed);

    let mut finished = BTreeSet::new();
    let deadline = std::time::Instant::now() + WAIT;
    while finished.len() < runs.len() {
        assert!(
            std::time::Instant::now() < deadline,
            "only {finished:?} concluded"
        );
        let state = client.next_notification("run/state", WAIT).await.unwrap();
        if state["status"].as_i64().is_some_and(|s| s >= 200) {
            finished.insert(state["run"].as_str().unwrap().to_owned());
        }
    }
    // Idle, the server still serving: a backup is the live database, row for row.
    let idle = out.path().join("idle.db");
    let taken = rummy(home.path(), out.path(), &["backup", idle.to_str().unwrap()]);
    assert!(taken.status.success(), "{}", stderr(&taken));
    let live = dump(&home.path().join("rummy.db"));
    assert_eq!(dump(&idle), live);
    assert!(
        copied_turns[0].parse::<usize>().unwrap() < live["turns"].len(),
        "the runs went on writing after the first backup"
    );

    let before = std::fs::read(&idle).unwrap();
    let again = rummy(home.path(), out.path(), &["backup", idle.to_str().unwrap()]);
    assert_eq!(
        (again.status.code(), stderr(&again)),
        (
            Some(1),
            format!(
                "rummy: {} already exists: a backup never overwrites a file; name a new one\n",
                idle.display()
            )
        )
    );
    assert_eq!(
        std::fs::read(&idle).unwrap(),
        before,
        "the file is untouched"
    );
    drop(server);
}

/// A backup of a home whose server never ran says there is nothing to back up and leaves no file.
#[actix_rt::test]
async fn a_backup_without_a_database_fails_and_writes_nothing() {
    if crate::support::database::on_postgres() {
        return; // a home's SQLite file: a PostgreSQL database is not the home's to lack
    }
    let home = tempfile::TempDir::new().unwrap();
    let out = tempfile::TempDir::new().unwrap();
    let taken = rummy(home.path(), out.path(), &["backup", "copy.db"]);
    assert_eq!(
        (taken.status.code(), stderr(&taken)),
        (
            Some(1),
            format!(
                "rummy: nothing to back up: no database at {}\n",
                home.path().join("rummy.db").display()
            )
        )
    );
    assert!(!out.path().join("copy.db").exists());
}

/// On PostgreSQL `rummy backup` copies nothing and says to use pg_dump, before it ever connects
/// (here to a server that is not there), without the URL's password.
#[test]
fn a_backup_of_postgresql_points_to_pg_dump() {
    let home = tempfile::TempDir::new().unwrap();
    let taken = Command::new(env!("CARGO_BIN_EXE_rummy"))
        .args(["backup", "copy.db"])
        .current_dir(home.path())
        .env_clear()
        .env("RUMMY_HOME", home.path())
        .env(
            "RUMMY_DATABASE_URL",
            "postgres://ops:hunter2@127.0.0.1:1/rummy",
        )
        .output()
        .unwrap();
    assert_eq!(
        (taken.status.code(), stderr(&taken)),
        (
            Some(1),
            "rummy: postgres://127.0.0.1:1/rummy is a PostgreSQL database: rummy backup copies an \
             SQLite file; back PostgreSQL up with its own tools (pg_dump --format=custom \
             --file=FILE DATABASE_URL)\n"
                .to_owned()
        )
    );
    assert!(!home.path().join("copy.db").exists());
}

/// The export's document without its timestamps (which the test cannot know).
fn untimed(mut value: Value) -> Value {
    match &mut value {
        Value::Object(map) => {
            for key in ["created", "updated"] {
                map.remove(key);
            }
            for v in map.values_mut() {
                *v = untimed(v.take());
            }
        }
        Value::Array(items) => {
            for v in items.iter_mut() {
                *v = untimed(v.take());
            }
        }
        _ => {}
    }
    value
}

/// `rummy export RUN` prints the run as the server answers for it: its entries exactly as
/// `getEntries` lists them with their bodies, each turn's usage and context as its `run/state`
/// reported them, its loop and how it ended, and `getRun`'s telemetry — and the same document
/// once the server has stopped. A run or project that does not exist is refused (4), by name.
#[actix_rt::test]
async fn export_prints_the_run_as_the_server_has_it() {
    let provider = FakeProvider::start().unwrap();
    provider.push(
        Reply::content("<known path=\"known://stack\">actix and diesel</known>\n<update status=\"102\">reading</update>")
            .reasoning("look first")
            .usage(120, 30)
            .cost(0.002),
    );
    provider.push(
        Reply::content("<update status=\"200\">It is a server.</update>")
            .usage(180, 12)
            .cost(0.003),
    );
    let home = tempfile::TempDir::new().unwrap();
    let project = tempfile::TempDir::new().unwrap();
    std::fs::write(project.path().join("main.rs"), "fn main() {}\n").unwrap();
    let mut server = spawn(home.path(), &provider, "99");
    let mut client = connect(server.port, "exported", project.path()).await;
    client
        .call(
            "set",
            json!({ "path": "run://first", "body": "What is this?", "attributes": { "model": "fast", "mode": "ask" } }),
        )
        .await
        .unwrap();
    let mut reported = Vec::new();
    loop {
        let state = client.next_notification("run/state", WAIT).await.unwrap();
        if !state["telemetry"].is_null() {
            reported.push(json!({
                "sequence": state["turn"],
                "loopSequence": 1,
                "status": 200,
                "contextTokens": state["telemetry"]["contextTokens"],
                "usage": state["telemetry"]["usage"],
                "reasoningContent": if state["turn"] == json!(1) { json!("look first") } else { Value::Null },
            }));
        }
        if state["status"] == json!(200) {
            break;
        }
    }
    let entries = client
        .call(
            "getEntries",
            json!({ "run": "first", "withBody": true, "limit": 1000 }),
        )
        .await
        .unwrap();
    let run = client
        .call("getRun", json!({ "run": "first" }))
        .await
        .unwrap();

    let exported = rummy(
        home.path(),
        project.path(),
        &["export", "first", "--project", "exported"],
    );
    assert!(exported.status.success(), "{}", stderr(&exported));
    let document: Value = serde_json::from_slice(&exported.stdout).unwrap();
    assert_eq!(document["entries"], entries);
    assert_eq!(document["telemetry"], run["telemetry"]);
    assert_eq!(untimed(document["turns"].clone()), Value::Array(reported));
    assert_eq!(
        untimed(document["loops"].clone()),
        json!([{
            "sequence": 1,
            "mode": "ask",
            "model": "fast",
            "prompt": "What is this?",
            "status": 200,
            "config": document["loops"][0]["config"],
            "result": document["loops"][0]["result"],
        }])
    );
    assert_eq!(
        document["loops"][0]["result"]["stopReason"],
        json!("concluded")
    );
    assert_eq!(
        (
            &document["format"],
            &document["project"],
            &document["run"]["run"],
            &document["run"]["status"],
            &document["sidecar"],
        ),
        (
            &json!("rummy-export/1"),
            &json!("exported"),
            &json!("first"),
            &json!(200),
            &json!([]),
        )
    );
    assert!(
        entries
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["path"] == json!("known://stack") && e["body"] == json!("actix and diesel")),
        "the run's fact is among its entries: {entries}"
    );

    assert!(server.terminate().success());
    let offline = rummy(
        home.path(),
        project.path(),
        &["export", "first", "--project", "exported"],
    );
    assert!(offline.status.success(), "{}", stderr(&offline));
    assert_eq!(
        serde_json::from_slice::<Value>(&offline.stdout).unwrap(),
        document
    );

    let db = crate::support::database::of_home(home.path());
    let missing = rummy(
        home.path(),
        project.path(),
        &["export", "second", "--project", "exported"],
    );
    let nowhere = rummy(
        home.path(),
        project.path(),
        &["export", "first", "--project", "nowhere"],
    );
    let outcomes: BTreeSet<_> = [
        (missing.status.code(), stderr(&missing)),
        (nowhere.status.code(), stderr(&nowhere)),
    ]
    .into_iter()
    .collect();
    assert_eq!(
        outcomes,
        [
            (
                Some(4),
                format!("rummy: no run \"second\" in project \"exported\" (database {}; `rummy runs` lists a project's runs)\n", db.display())
            ),
            (
                Some(4),
                format!("rummy: no project \"nowhere\" (database {}; `rummy runs` lists a project's runs)\n", db.display())
            ),
        ]
        .into_iter()
        .collect()
    );
}
