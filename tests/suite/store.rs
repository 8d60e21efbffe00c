//! The writer: units queued together commit in one group, yet each commits or fails alone.

use diesel::prelude::*;
use diesel::sql_types::Integer;
use rummy_actors::store::Store;
use rummy_core::wire::jsonrpc;
use rummy_store::db::Db;
use rummy_store::location::Location;
use rummy_store::StoreError;

#[derive(QueryableByName)]
struct N {
    #[diesel(sql_type = Integer)]
    n: i32,
}

fn insert_project(c: &mut Db, name: &str) -> Result<i32, StoreError> {
    diesel::sql_query(format!(
        "INSERT INTO projects (name, project_root, created_at) \
         VALUES ('{name}', '/tmp/{name}', 0) RETURNING id AS n"
    ))
    .get_result::<N>(c)
    .map(|r| r.n)
    .map_err(StoreError::from)
}

fn project_names(c: &mut Db) -> Result<Vec<String>, StoreError> {
    #[derive(QueryableByName)]
    struct Name {
        #[diesel(sql_type = diesel::sql_types::Text)]
        name: String,
    }
    Ok(diesel::sql_query("SELECT name FROM projects ORDER BY name")
        .load::<Name>(c)?
        .into_iter()
        .map(|r| r.name)
        .collect())
}

/// Writes sent at once share a transaction; one that fails or panics is rolled back alone, its
/// caller gets the error, and everyone else's writes are committed when their callers hear back.
#[actix_rt::test]
async fn a_failing_or_panicking_write_rolls_back_alone() {
    let home = tempfile::TempDir::new().unwrap();
    let store = Store::open(
        &crate::support::database::of_home(home.path()),
        2,
        std::sync::Arc::new(rummy_actors::metrics::Metrics::new().unwrap()),
    )
    .unwrap();
    let mut calls = Vec::new();
    for i in 0..8 {
        let store = store.clone();
        calls.push(actix_rt::spawn(async move {
            store
                .write(move |c| {
                    let id = insert_project(c, &format!("p{i}"))?;
                    match i {
                        3 => Err(StoreError::Invalid("refused".into())),
                        5 => panic!("a bug in a write"),
                        _ => Ok(id),
                    }
                })
                .await
        }));
    }
    let mut outcomes = Vec::new();
    for call in calls {
        outcomes.push(call.await.unwrap());
    }
    for (i, outcome) in outcomes.iter().enumerate() {
        match i {
            3 => assert!(matches!(outcome, Err(StoreError::Invalid(m)) if m == "refused")),
            5 => assert!(matches!(outcome, Err(StoreError::Panicked)), "{outcome:?}"),
            _ => assert!(outcome.is_ok(), "write {i}: {outcome:?}"),
        }
    }
    let names = store.read(project_names).await.unwrap();
    assert_eq!(names, ["p0", "p1", "p2", "p4", "p6", "p7"]);
    // The writer is still there after the panic.
    let later = store.write(|c| insert_project(c, "p8")).await;
    assert!(later.is_ok(), "{later:?}");
}

/// A write that runs alone (nothing else queued with it) and fails or panics leaves nothing
/// behind, its caller gets its own error, and the writer goes on.
#[actix_rt::test]
async fn a_lone_failing_or_panicking_write_leaves_nothing_behind() {
    let home = tempfile::TempDir::new().unwrap();
    let store = Store::open(
        &crate::support::database::of_home(home.path()),
        2,
        std::sync::Arc::new(rummy_actors::metrics::Metrics::new().unwrap()),
    )
    .unwrap();
    let refused = store
        .write(|c| {
            insert_project(c, "refused")?;
            Err::<(), _>(StoreError::Invalid("refused".into()))
        })
        .await;
    assert!(
        matches!(&refused, Err(StoreError::Invalid(m)) if m == "refused"),
        "{refused:?}"
    );
    let panicked = store
        .write(|c| -> Result<(), StoreError> {
            insert_project(c, "panicked")?;
            panic!("a bug in a write")
        })
        .await;
    assert!(
        matches!(&panicked, Err(StoreError::Panicked)),
        "{panicked:?}"
    );
    let kept = store.write(|c| insert_project(c, "kept")).await;
    assert!(kept.is_ok(), "{kept:?}");
    assert_eq!(store.read(project_names).await.unwrap(), ["kept"]);
}

/// A store unit that panics is the server's failure, never the client's: its caller answers
/// -32603 "internal error" with no detail (the panic's message stays in the log), not -32602.
#[actix_rt::test]
async fn a_panicking_unit_answers_internal_error_without_detail() {
    let home = tempfile::TempDir::new().unwrap();
    let store = Store::open(
        &crate::support::database::of_home(home.path()),
        2,
        std::sync::Arc::new(rummy_actors::metrics::Metrics::new().unwrap()),
    )
    .unwrap();
    let panicked = store
        .write(|_| -> Result<(), StoreError> { panic!("a secret detail in a bug") })
        .await
        .unwrap_err();
    let call: Box<serde_json::value::RawValue> =
        serde_json::from_str(r#"{"jsonrpc":"2.0","id":7,"method":"set"}"#).unwrap();
    let id = jsonrpc::parse_request(&call).unwrap().id;
    let answer = jsonrpc::error_response(id.as_ref(), &rummy_actors::errors::from_store(panicked));
    assert_eq!(
        answer,
        r#"{"jsonrpc":"2.0","id":7,"error":{"code":-32603,"data":{"kind":"internal"},"message":"internal error"}}"#
    );
}

/// How many times the write-ahead log of the database at `db` has started over from its
/// beginning: SQLite counts it in the log's header (bytes 12..16, the checkpoint sequence).
fn log_restarts(db: &std::path::Path) -> u32 {
    let wal = std::fs::read(db.with_extension("db-wal")).expect("the log exists");
    u32::from_be_bytes(wal[12..16].try_into().expect("a 32-byte header"))
}

/// Writes that never pause leave the checkpoint thread no moment when the whole log is copied
/// and nothing new was committed, yet the log must still start over, again and again, before it
/// grows large: left alone it grew past 100 MB, until the kernel's throttling of dirty pages
/// stalled the writer long enough for a checkpoint to catch up.
#[actix_rt::test]
async fn the_log_starts_over_under_writes_that_never_pause() {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    if crate::support::database::on_postgres() {
        return; // SQLite's write-ahead log: PostgreSQL checkpoints by itself
    }
    let home = tempfile::TempDir::new().unwrap();
    let db = home.path().join("rummy.db");
    let store = Store::open(
        &Location::Sqlite(db.clone()),
        2,
        std::sync::Arc::new(rummy_actors::metrics::Metrics::new().unwrap()),
    )
    .unwrap();
    let before = log_restarts(&db);
    let stop = Arc::new(AtomicBool::new(false));
    let written = Arc::new(AtomicUsize::new(0));
    // Eight writers keep the writer's queue from ever running dry; each write fills a page or so.
    let writers: Vec<_> = (0..8)
        .map(|w| {
            let (store, stop, written) = (store.clone(), Arc::clone(&stop), Arc::clone(&written));
            actix_rt::spawn(async move {
                let mut i = 0;
                while !stop.load(Ordering::Relaxed) {
                    let name = format!("w{w}-{i}");
                    store
                        .write(move |c| {
                            diesel::sql_query(
                                "INSERT INTO projects (name, project_root, created_at) VALUES (?, ?, 0)",
                            )
                            .bind::<diesel::sql_types::Text, _>(&name)
                            .bind::<diesel::sql_types::Text, _>("/".repeat(3000))
                            .execute(c)
                            .map_err(StoreError::from)
                        })
                        .await
                        .unwrap();
                    written.fetch_add(1, Ordering::Relaxed);
                    i += 1;
                }
            })
        })
        .collect();
    // A lucky moment between two writes may let the log start over once; three times is the
    // writer's doing.
    let deadline = Instant::now() + Duration::from_secs(20);
    while log_restarts(&db) < before + 3 && Instant::now() < deadline {
        actix_rt::time::sleep(Duration::from_millis(20)).await;
    }
    stop.store(true, Ordering::Relaxed);
    for writer in writers {
        writer.await.unwrap();
    }
    let restarts = log_restarts(&db) - before;
    // The log never shrinks on disk, so its size is the longest it ever was: the frames a
    // checkpoint interval's writes add, and the thousand it waits for before starting over.
    let longest_mb = std::fs::metadata(db.with_extension("db-wal"))
        .unwrap()
        .len()
        >> 20;
    let writes = written.load(Ordering::Relaxed);
    assert!(
        restarts >= 3 && longest_mb < 64,
        "in {writes} writes the log started over {restarts} times and grew to {longest_mb} MB"
    );
}
