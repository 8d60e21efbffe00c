//! Project memory and history against real SQLite: provenance, supersession, no views and no
//! context clock, history never rewritten, and the full-text index recall reads.

use super::recall::{fts5_expression, tsquery_term};
use super::*;
use crate::db::Db;
use crate::flags::RunFlags;
use crate::ids::RunId;
use crate::schema::{context_clocks, run_views};
use crate::testing::{fact, memory as store, project, run, write, NOW};
use pretty_assertions::assert_eq;
use rummy_provider::time::Millis;

const LATER: Millis = Millis(NOW.0 + 60_000);

fn by(run: &str, turn: i32, writer: Writer) -> Provenance<'_> {
    Provenance {
        run,
        turn,
        user: None,
        writer,
    }
}

fn remember_at(
    conn: &mut Db,
    project_id: ProjectId,
    body: &str,
    provenance: Provenance<'_>,
    now: Millis,
) -> Remembered {
    let w = MemoryWrite {
        project_id,
        path: "memory://deploy/host",
        body,
        summary: Some("deploy,host"),
        provenance,
    };
    remember(conn, &w, WriteCtx { divisor: 2, now }).unwrap()
}

/// Every entry of the project's scope: (path, body, attributes).
fn project_entries(conn: &mut Db, project_id: ProjectId) -> Vec<(String, String, Value)> {
    e::table
        .filter(e::scope.eq(Scope::Project(project_id).key()))
        .order(e::id)
        .select((e::path, e::body, e::attributes))
        .load::<(String, String, String)>(conn)
        .unwrap()
        .into_iter()
        .map(|(p, b, a)| (p, b, serde_json::from_str(&a).unwrap()))
        .collect()
}

/// A new memory is version 1 with the run, turn, user and writer that wrote it.
#[test]
fn a_memory_keeps_who_wrote_it() {
    let mut conn = store();
    let p = project(&mut conn, "p");
    let w = MemoryWrite {
        project_id: p.id,
        path: "memory://deploy/host",
        body: "Production runs on prod-3.",
        summary: Some("deploy,host"),
        provenance: Provenance {
            run: "a",
            turn: 4,
            user: Some("alice"),
            writer: Writer::Model,
        },
    };
    assert_eq!(
        remember(
            &mut conn,
            &w,
            WriteCtx {
                divisor: 2,
                now: NOW
            }
        )
        .unwrap(),
        Remembered::Added
    );
    assert_eq!(
        project_entries(&mut conn, p.id),
        vec![(
            "memory://deploy/host".to_owned(),
            "Production runs on prod-3.".to_owned(),
            json!({
                "run": "a", "turn": 4, "user": "alice", "writer": "model",
                "validFrom": NOW.to_rfc3339(), "version": 1, "summary": "deploy,host",
            })
        )]
    );
}

/// Other content supersedes a memory: the old version is kept, archived with `supersededBy`
/// and its validity, and the path holds the new one with its own provenance; the same content
/// again writes nothing.
#[test]
fn a_new_content_supersedes_and_the_old_one_is_archived() {
    let mut conn = store();
    let p = project(&mut conn, "p");
    remember_at(&mut conn, p.id, "prod-3", by("a", 1, Writer::Model), NOW);
    let again = remember_at(&mut conn, p.id, "prod-4", by("b", 7, Writer::Client), LATER);
    assert_eq!(
        again,
        Remembered::Superseded {
            archived: "memory://deploy/host@1".into(),
            version: 2
        }
    );
    assert_eq!(
        remember_at(&mut conn, p.id, "prod-4", by("c", 9, Writer::Model), LATER),
        Remembered::Unchanged
    );
    assert_eq!(
        project_entries(&mut conn, p.id),
        vec![
            (
                "memory://deploy/host".to_owned(),
                "prod-4".to_owned(),
                json!({
                    "run": "b", "turn": 7, "user": null, "writer": "client",
                    "validFrom": LATER.to_rfc3339(), "version": 2, "summary": "deploy,host",
                    "supersedes": "memory://deploy/host@1",
                })
            ),
            (
                "memory://deploy/host@1".to_owned(),
                "prod-3".to_owned(),
                json!({
                    "run": "a", "turn": 1, "user": null, "writer": "model",
                    "validFrom": NOW.to_rfc3339(), "version": 1, "summary": "deploy,host",
                    "supersededBy": {"path": "memory://deploy/host", "version": 2},
                    "validTo": LATER.to_rfc3339(),
                })
            ),
        ]
    );
    let listed: Vec<(String, Visibility)> = list(&mut conn, p.id, "memory", None, None, 10, 0)
        .unwrap()
        .into_iter()
        .map(|r| (r.path, r.visibility))
        .collect();
    assert_eq!(
        listed,
        vec![
            ("memory://deploy/host".into(), Visibility::Visible),
            ("memory://deploy/host@1".into(), Visibility::Archived),
        ]
    );
}

/// Memory and history are written here alone: the run's write path refuses them (a model may
/// not write history at all), and no run gets a view of them.
#[test]
fn memory_and_history_are_never_a_runs_view() {
    let mut conn = store();
    let p = project(&mut conn, "p");
    let a = run(&mut conn, p.id, "a");
    let refused = |conn: &mut Db, path: &str, writer: Writer| match write(
        conn,
        a,
        path,
        "x",
        Visibility::Visible,
        writer,
    ) {
        Err(StoreError::Invalid(m)) => format!("invalid: {m}"),
        Err(StoreError::Permission { writer, .. }) => format!("permission: {writer}"),
        other => format!("{other:?}"),
    };
    assert_eq!(
        [
            refused(&mut conn, "memory://x", Writer::Model),
            refused(&mut conn, "history://x", Writer::Model),
            refused(&mut conn, "history://x", Writer::System),
        ],
        [
            "invalid: memory://x is the project's: a memory:// entry is written with set (a new content supersedes the old, which is kept), and history:// by the server alone".to_owned(),
            "permission: model".to_owned(),
            "invalid: history://x is the project's: a memory:// entry is written with set (a new content supersedes the old, which is kept), and history:// by the server alone".to_owned(),
        ]
    );
    remember_at(&mut conn, p.id, "prod-3", by("a", 1, Writer::Model), NOW);
    let w = MemoryWrite {
        project_id: p.id,
        path: "memory://deploy/host",
        body: "x",
        summary: None,
        provenance: by("a", 1, Writer::Model),
    };
    assert!(matches!(
        remember(
            &mut conn,
            &MemoryWrite {
                path: "known://x",
                ..w
            },
            WriteCtx {
                divisor: 2,
                now: NOW
            }
        ),
        Err(StoreError::Invalid(_))
    ));
    assert_eq!(
        run_views::table
            .count()
            .get_result::<i64>(&mut conn)
            .unwrap(),
        0
    );
}

/// A memory or history write moves no context clock: the project's other runs keep the context
/// rows they read (a shared file's write, by contrast, moves the project's clock).
#[test]
fn memory_and_history_writes_move_no_context_clock() {
    let mut conn = store();
    let p = project(&mut conn, "p");
    let a = run(&mut conn, p.id, "a");
    let clocks = |conn: &mut Db| context_clocks::table.load::<(String, i64)>(conn).unwrap();
    remember_at(&mut conn, p.id, "prod-3", by("a", 1, Writer::Model), NOW);
    remember_at(&mut conn, p.id, "prod-4", by("a", 2, Writer::Model), LATER);
    record_history(
        &mut conn,
        p.id,
        "history://2023-11-14/a/1",
        "a loop",
        &Map::new(),
        WriteCtx {
            divisor: 2,
            now: NOW,
        },
    )
    .unwrap();
    assert_eq!(clocks(&mut conn), vec![]);
    write(
        &mut conn,
        a,
        "src/main.rs",
        "fn main() {}",
        Visibility::Visible,
        Writer::Model,
    )
    .unwrap();
    assert_eq!(clocks(&mut conn), vec![(format!("project:{}", p.id), 1)]);
}

/// A history entry is never rewritten: a second one at the same path takes the next free one.
#[test]
fn history_is_appended_never_rewritten() {
    let mut conn = store();
    let p = project(&mut conn, "p");
    let base = "history://2023-11-14/a/1";
    let paths: Vec<String> = ["first", "second", "third"]
        .iter()
        .map(|body| {
            record_history(
                &mut conn,
                p.id,
                base,
                body,
                &Map::new(),
                WriteCtx {
                    divisor: 2,
                    now: NOW,
                },
            )
            .unwrap()
        })
        .collect();
    assert_eq!(
        paths,
        vec![base.to_owned(), format!("{base}_2"), format!("{base}_3")]
    );
    let bodies: Vec<String> = list(&mut conn, p.id, "history", None, None, 10, 0)
        .unwrap()
        .into_iter()
        .map(|r| r.body)
        .collect();
    assert_eq!(bodies, vec!["first", "second", "third"]);
}

/// The full-text index holds the project's current memories and history and its runs' facts,
/// each with its owner: a query keeps to its project, can leave a run out, never finds a
/// superseded memory, and loses an entry when it is deleted.
#[test]
fn the_recall_index_follows_the_entries() {
    let mut conn = store();
    let p = project(&mut conn, "p");
    let other = project(&mut conn, "q");
    let (a, b) = (run(&mut conn, p.id, "a"), run(&mut conn, p.id, "b"));
    let stranger = run(&mut conn, other.id, "s");
    remember_at(
        &mut conn,
        p.id,
        "the zebra host",
        by("a", 1, Writer::Model),
        NOW,
    );
    remember_at(
        &mut conn,
        p.id,
        "the zebra server",
        by("a", 2, Writer::Model),
        LATER,
    );
    record_history(
        &mut conn,
        p.id,
        "history://2023-11-14/a/1",
        "asked about zebra",
        &Map::new(),
        WriteCtx {
            divisor: 2,
            now: NOW,
        },
    )
    .unwrap();
    let zebra = fact(&mut conn, a, "known://animal", "zebra");
    fact(&mut conn, b, "known://animal", "zebra too");
    fact(&mut conn, stranger, "known://animal", "zebra elsewhere");
    write(
        &mut conn,
        a,
        "set://turn_1/x",
        "zebra",
        Visibility::Visible,
        Writer::Model,
    )
    .unwrap();
    let found = |conn: &mut Db, words: &[&str], except_run: Option<RunId>| {
        let terms: Vec<String> = words.iter().map(|w| (*w).to_owned()).collect();
        let query = RecallQuery {
            terms: &terms,
            project_id: p.id,
            except_run,
        };
        let ids: Vec<i32> = recall_matches(conn, &query, 40)
            .unwrap()
            .into_iter()
            .map(|s| s.id)
            .collect();
        let mut found: Vec<(String, String)> = candidate_rows(conn, &ids)
            .unwrap()
            .into_iter()
            .map(|r| (r.scope, r.body))
            .collect();
        found.sort();
        found
    };
    let (pa, pb, pp) = (
        Scope::Run(a.run_id).key(),
        Scope::Run(b.run_id).key(),
        Scope::Project(p.id).key(),
    );
    assert_eq!(
        found(&mut conn, &["zebra"], None),
        vec![
            (pp.clone(), "asked about zebra".to_owned()),
            (pp.clone(), "the zebra server".to_owned()),
            (pa.clone(), "zebra".to_owned()),
            (pb.clone(), "zebra too".to_owned()),
        ]
    );
    diesel::delete(e::table.filter(e::id.eq(zebra.entry_id)))
        .execute(&mut conn)
        .unwrap();
    diesel::delete(e::table.filter(e::scope.eq(&pb)))
        .execute(&mut conn)
        .unwrap();
    assert_eq!(
        found(&mut conn, &["zebra"], Some(a.run_id)),
        vec![
            (pp.clone(), "asked about zebra".to_owned()),
            (pp, "the zebra server".to_owned()),
        ]
    );
    // The path (after its scheme) and summary are indexed too; a history path is not.
    assert_eq!(found(&mut conn, &["deploy", "2023"], None).len(), 1);
}

/// The facts stored before the index existed are indexed by the migration that makes it, so
/// the runs of a server upgraded mid-project are recalled like later ones.
#[test]
fn the_migration_indexes_the_facts_already_stored() {
    use diesel_migrations::MigrationHarness;
    let mut conn = store();
    // The project and run in today's schema (a later migration's columns are read back), kept
    // through the reverts below.
    let p = project(&mut conn, "p");
    let a = run(&mut conn, p.id, "a");
    // Back to before the migration that made the index (and every later one).
    while conn
        .applied_migrations()
        .unwrap()
        .iter()
        .any(|v| v.to_string().ends_with("000040"))
    {
        conn.revert_last_migration(crate::database::migrations_of(&conn))
            .unwrap();
    }
    // Written as the store of that time did: the entry alone, in the schema of then.
    diesel::sql_query(format!(
        "INSERT INTO entries (scope, path, scheme, body, attributes, hash, tokens, created_at, updated_at) \
         VALUES ('run:{}', 'known://animal', 'known', 'a zebra', '{{}}', '', 4, 0, 0)",
        a.run_id.0
    ))
    .execute(&mut conn)
    .unwrap();
    crate::database::run_migrations(&mut conn).unwrap();
    let terms = vec!["zebra".to_owned()];
    let query = RecallQuery {
        terms: &terms,
        project_id: p.id,
        except_run: None,
    };
    let found = recall_matches(&mut conn, &query, 40).unwrap();
    assert_eq!(
        candidate_rows(&mut conn, &[found[0].id]).unwrap()[0].scope,
        Scope::Run(a.run_id).key()
    );
    assert_eq!(found.len(), 1);
}

/// A loop's facts are indexed in its finishing write, with its history line; a fact the next
/// loop rewrites has its old words replaced, not added to.
#[test]
fn a_loops_facts_are_indexed_when_it_ends() {
    use crate::entries::{self, EntryWrite};
    use crate::loops;
    use crate::run::Mode;
    let mut conn = store();
    let p = project(&mut conn, "p");
    let a = run(&mut conn, p.id, "a");
    let write_in_loop = |conn: &mut Db, body: &str| {
        let l = loops::enqueue(
            conn,
            a.run_id,
            Mode::Ask,
            "m",
            "q",
            &RunFlags::default(),
            NOW,
        )
        .unwrap();
        loops::claim_next(conn, a.run_id, NOW).unwrap();
        let w = EntryWrite {
            run: a,
            path: "known://animal",
            body,
            attributes: &json!({}),
            state: State::Resolved,
            outcome: None,
            visibility: Visibility::Visible,
            loop_id: Some(l.id),
            turn: 1,
            writer: Writer::Model,
        };
        entries::write(
            conn,
            &w,
            WriteCtx {
                divisor: 2,
                now: NOW,
            },
        )
        .unwrap();
        let (_, history) = insert_history(
            conn,
            p.id,
            "history://2023-11-14/a/1",
            "a loop (ask): \"q\" → concluded: okapi noted",
            &Map::new(),
            WriteCtx {
                divisor: 2,
                now: NOW,
            },
        )
        .unwrap();
        index_loop(conn, a.run_id, l.id, history).unwrap();
        loops::finish(conn, l.id, 200, &json!({}), NOW).unwrap();
    };
    let hits = |conn: &mut Db, word: &str| {
        let terms = vec![word.to_owned()];
        let query = RecallQuery {
            terms: &terms,
            project_id: p.id,
            except_run: None,
        };
        recall_matches(conn, &query, 40).unwrap().len()
    };
    write_in_loop(&mut conn, "a zebra");
    assert_eq!((hits(&mut conn, "zebra"), hits(&mut conn, "okapi")), (1, 1));
    write_in_loop(&mut conn, "a gnu");
    assert_eq!(
        (
            hits(&mut conn, "zebra"),
            hits(&mut conn, "gnu"),
            hits(&mut conn, "okapi")
        ),
        (0, 1, 2)
    );
}

/// Recall's terms reach each index quoted — nothing in them read as FTS5 or tsquery syntax —
/// a long term as a prefix, within the project, without the asking run's own entries.
#[test]
fn recall_terms_reach_the_index_quoted() {
    let terms: Vec<String> = ["deploy", "p9", "o'neil", "near"]
        .map(String::from)
        .to_vec();
    let query = RecallQuery {
        terms: &terms,
        project_id: ProjectId(3),
        except_run: Some(RunId(7)),
    };
    assert_eq!(
        fts5_expression(&query),
        "(owner : \"p3\" AND (\"deploy\" * OR \"p9\" OR \"o'neil\" * OR \"near\" *)) NOT owner : \"r7\""
    );
    assert_eq!(
        fts5_expression(&RecallQuery {
            except_run: None,
            ..query
        }),
        "owner : \"p3\" AND (\"deploy\" * OR \"p9\" OR \"o'neil\" * OR \"near\" *)"
    );
    assert_eq!(tsquery_term("o'neil", true), "'o''neil':*");
    assert_eq!(tsquery_term("a\\b", false), "'a\\\\b'");
}
