//! The writer: units queued together commit in one group, yet each commits or fails alone.

use diesel::prelude::*;
use diesel::sql_types::Integer;
use rummy_actors::store::Store;
use rummy_core::store::StoreError;

#[derive(QueryableByName)]
struct N {
    #[diesel(sql_type = Integer)]
    n: i32,
}

fn insert_project(c: &mut SqliteConnection, name: &str) -> Result<i32, StoreError> {
    diesel::sql_query(format!(
        "INSERT INTO projects (name, project_root, created_at) \
         VALUES ('{name}', '/tmp/{name}', 0) RETURNING id AS n"
    ))
    .get_result::<N>(c)
    .map(|r| r.n)
    .map_err(StoreError::from)
}

fn project_names(c: &mut SqliteConnection) -> Result<Vec<String>, StoreError> {
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
    let store = Store::open(&home.path().join("rummy.db"), 2).unwrap();
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
            5 => assert!(
                matches!(outcome, Err(StoreError::Invalid(m)) if m.contains("panicked")),
                "{outcome:?}"
            ),
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
    let store = Store::open(&home.path().join("rummy.db"), 2).unwrap();
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
        matches!(&panicked, Err(StoreError::Invalid(m)) if m.contains("panicked")),
        "{panicked:?}"
    );
    let kept = store.write(|c| insert_project(c, "kept")).await;
    assert!(kept.is_ok(), "{kept:?}");
    assert_eq!(store.read(project_names).await.unwrap(), ["kept"]);
}
