//! Store tests against real SQLite: migrations, the schema, constraints and the write path.

use super::testing::memory;
use super::*;
use crate::database::{migrations_of, run_migrations};
use crate::db::Db;
use crate::entry::{State, Visibility, Writer};
use crate::flags::RunFlags;
use crate::ids::{ProjectId, RunId};
use crate::run::{Mode, RunStatus};
use crate::schema as t;
use diesel::connection::SimpleConnection;
use diesel::prelude::*;
use diesel::sql_types::{Integer, Text};
use diesel::sqlite::Sqlite;
use diesel_migrations::MigrationHarness;
use pretty_assertions::assert_eq;
use rummy_provider::time::Millis;
use serde_json::json;

const NOW: Millis = Millis(1_700_000_000_000);

#[derive(QueryableByName)]
struct NameRow {
    #[diesel(sql_type = Text)]
    name: String,
}

/// The full-text index recall reads (`store::memory`), queried with SQL of its own rather than
/// through `schema.rs`: on SQLite the FTS5 table, the shadow tables FTS5 keeps it in, and its
/// vocabulary; on PostgreSQL the `tsvector` table and the vocabulary view.
fn full_text_names(conn: &Db) -> Vec<&'static str> {
    match conn {
        Db::Sqlite(_) => vec![
            "recall_index",
            "recall_index_config",
            "recall_index_data",
            "recall_index_docsize",
            "recall_index_idx",
            "recall_terms",
        ],
        Db::Pg(_) => vec!["recall_index", "recall_terms"],
    }
}

/// The tables `schema.rs` describes: every table but the full-text index's.
fn table_names(conn: &mut Db) -> Vec<String> {
    let full_text = full_text_names(conn);
    let mut names = all_table_names(conn);
    names.retain(|n| !full_text.contains(&n.as_str()));
    names
}

fn all_table_names(conn: &mut Db) -> Vec<String> {
    let sql = match conn {
        Db::Sqlite(_) => {
            "SELECT name FROM sqlite_master WHERE type = 'table' \
             AND name NOT LIKE 'sqlite_%' AND name <> '__diesel_schema_migrations' ORDER BY name"
        }
        Db::Pg(_) => {
            "SELECT CAST(table_name AS TEXT) AS name FROM information_schema.tables \
             WHERE table_schema = current_schema() AND table_name <> '__diesel_schema_migrations' \
             ORDER BY CAST(table_name AS TEXT) COLLATE \"C\""
        }
    };
    diesel::sql_query(sql)
        .load::<NameRow>(conn)
        .unwrap()
        .into_iter()
        .map(|r| r.name)
        .collect()
}

fn db_columns(conn: &mut Db, table: &str) -> Vec<String> {
    let sql = match conn {
        Db::Sqlite(_) => format!("SELECT name FROM pragma_table_info('{table}') ORDER BY cid"),
        Db::Pg(_) => format!(
            "SELECT CAST(column_name AS TEXT) AS name FROM information_schema.columns \
             WHERE table_schema = current_schema() AND table_name = '{table}' \
             ORDER BY ordinal_position"
        ),
    };
    diesel::sql_query(sql)
        .load::<NameRow>(conn)
        .unwrap()
        .into_iter()
        .map(|r| r.name)
        .collect()
}

/// Column names diesel selects for a table, read from the SQL it generates.
fn diesel_columns<Q: diesel::query_builder::QueryFragment<Sqlite>>(query: Q) -> Vec<String> {
    let sql = diesel::debug_query::<Sqlite, _>(&query).to_string();
    let list = sql
        .trim_start_matches("SELECT ")
        .split(" FROM ")
        .next()
        .unwrap_or_default()
        .to_owned();
    list.split(", ")
        .map(|c| {
            c.rsplit('.')
                .next()
                .unwrap_or(c)
                .trim_matches('`')
                .to_owned()
        })
        .collect()
}

/// Migrations go up, down and up again, leaving exactly the expected tables each time.
#[test]
fn migrations_up_down_up() {
    let mut conn = memory();
    let expected = vec![
        "context_clocks",
        "entries",
        "file_constraints",
        "health_probe",
        "loops",
        "models",
        "notifications",
        "processes",
        "projects",
        "relayed_pushes",
        "rpc_log",
        "run_calls",
        "run_leases",
        "run_views",
        "runs",
        "schemes",
        "sidecar_calls",
        "tokens",
        "turns",
        "users",
    ];
    assert_eq!(table_names(&mut conn), expected);
    let full_text = |conn: &mut Db| {
        let names = full_text_names(conn);
        let mut found = all_table_names(conn);
        found.retain(|n| names.contains(&n.as_str()));
        (found, names)
    };
    let (found, wanted) = full_text(&mut conn);
    assert_eq!(found, wanted);
    conn.revert_all_migrations(migrations_of(&conn)).unwrap();
    assert_eq!(all_table_names(&mut conn), Vec::<String>::new());
    run_migrations(&mut conn).unwrap();
    assert_eq!(table_names(&mut conn), expected);
    let (found, wanted) = full_text(&mut conn);
    assert_eq!(found, wanted);
}

/// The committed `schema.rs` names every column of every migrated table, in order.
#[test]
fn schema_matches_migrations() {
    let mut conn = memory();
    let cases: Vec<(&str, Vec<String>)> = vec![
        (
            "context_clocks",
            diesel_columns(t::context_clocks::table.select(t::context_clocks::all_columns)),
        ),
        (
            "entries",
            diesel_columns(t::entries::table.select(t::entries::all_columns)),
        ),
        (
            "tokens",
            diesel_columns(t::tokens::table.select(t::tokens::all_columns)),
        ),
        (
            "users",
            diesel_columns(t::users::table.select(t::users::all_columns)),
        ),
        (
            "file_constraints",
            diesel_columns(t::file_constraints::table.select(t::file_constraints::all_columns)),
        ),
        (
            "loops",
            diesel_columns(t::loops::table.select(t::loops::all_columns)),
        ),
        (
            "models",
            diesel_columns(t::models::table.select(t::models::all_columns)),
        ),
        (
            "notifications",
            diesel_columns(t::notifications::table.select(t::notifications::all_columns)),
        ),
        (
            "projects",
            diesel_columns(t::projects::table.select(t::projects::all_columns)),
        ),
        (
            "rpc_log",
            diesel_columns(t::rpc_log::table.select(t::rpc_log::all_columns)),
        ),
        (
            "run_views",
            diesel_columns(t::run_views::table.select(t::run_views::all_columns)),
        ),
        (
            "runs",
            diesel_columns(t::runs::table.select(t::runs::all_columns)),
        ),
        (
            "schemes",
            diesel_columns(t::schemes::table.select(t::schemes::all_columns)),
        ),
        (
            "turns",
            diesel_columns(t::turns::table.select(t::turns::all_columns)),
        ),
        (
            "sidecar_calls",
            diesel_columns(t::sidecar_calls::table.select(t::sidecar_calls::all_columns)),
        ),
        (
            "health_probe",
            diesel_columns(t::health_probe::table.select(t::health_probe::all_columns)),
        ),
        (
            "processes",
            diesel_columns(t::processes::table.select(t::processes::all_columns)),
        ),
        (
            "run_leases",
            diesel_columns(t::run_leases::table.select(t::run_leases::all_columns)),
        ),
        (
            "run_calls",
            diesel_columns(t::run_calls::table.select(t::run_calls::all_columns)),
        ),
        (
            "relayed_pushes",
            diesel_columns(t::relayed_pushes::table.select(t::relayed_pushes::all_columns)),
        ),
    ];
    assert_eq!(
        cases.len(),
        table_names(&mut conn).len(),
        "a table is missing from schema.rs"
    );
    for (table, columns) in cases {
        assert_eq!(columns, db_columns(&mut conn, table), "table {table}");
    }
}

fn project(conn: &mut Db) -> projects::Project {
    projects::hello(conn, "demo", "/srv/demo", None, NOW).unwrap()
}

fn run(conn: &mut Db, project_id: ProjectId, alias: Option<&str>) -> runs::Run {
    let new = runs::NewRun {
        project_id,
        alias: alias.map(str::to_owned),
        model: "fast".into(),
        ..runs::NewRun::default()
    };
    runs::create(conn, &new, NOW).unwrap()
}

/// The database's transition trigger allows exactly the transitions `RunStatus::may_become` allows.
#[test]
fn run_status_trigger_agrees_with_code() {
    let mut conn = memory();
    let p = project(&mut conn);
    let r = run(&mut conn, p.id, Some("t"));
    for from in RunStatus::ALL {
        for to in RunStatus::ALL {
            // Put the run in `from` without the trigger, then try the transition.
            force_status(&mut conn, r.id, from).unwrap();
            assert_eq!(current_status(&mut conn, r.id), from.code());
            let allowed = runs::set_status(&mut conn, r.id, to, NOW).is_ok();
            assert_eq!(allowed, from.may_become(to), "{from:?} -> {to:?}");
        }
    }
}

fn current_status(conn: &mut Db, id: RunId) -> i32 {
    t::runs::table
        .find(id)
        .select(t::runs::status)
        .first(conn)
        .unwrap()
}

/// Sets a status bypassing the transition trigger (test set-up only).
fn force_status(conn: &mut Db, id: RunId, to: RunStatus) -> QueryResult<()> {
    if let Db::Pg(_) = conn {
        return conn.transaction(|c| {
            c.batch_execute("ALTER TABLE runs DISABLE TRIGGER runs_status_transition")?;
            diesel::update(t::runs::table.find(id))
                .set(t::runs::status.eq(to.code()))
                .execute(c)?;
            c.batch_execute("ALTER TABLE runs ENABLE TRIGGER runs_status_transition")
        });
    }
    conn.transaction(|c| {
        let trigger: String = diesel::sql_query(
            "SELECT sql AS name FROM sqlite_master WHERE name = 'runs_status_transition'",
        )
        .get_result::<NameRow>(c)?
        .name;
        c.batch_execute("DROP TRIGGER runs_status_transition;")?;
        diesel::sql_query("UPDATE runs SET status = ? WHERE id = ?")
            .bind::<Integer, _>(to.code())
            .bind::<Integer, _>(id)
            .execute(c)?;
        c.batch_execute(&trigger)
    })
}

/// A project keeps its root: a second hello with another root is a conflict.
#[test]
fn project_does_not_move() {
    let mut conn = memory();
    let p = project(&mut conn);
    assert_eq!(
        projects::hello(&mut conn, "demo", "/srv/demo", None, NOW)
            .unwrap()
            .id,
        p.id
    );
    let moved = projects::hello(&mut conn, "demo", "/elsewhere", None, NOW);
    assert!(matches!(moved, Err(StoreError::Conflict(_))));
}

/// Server-made aliases never collide, also with client-chosen aliases of the same shape.
#[test]
fn server_aliases_never_collide() {
    let mut conn = memory();
    let p = project(&mut conn);
    run(&mut conn, p.id, Some("fast_2"));
    let mut aliases: Vec<String> = (0..200).map(|_| run(&mut conn, p.id, None).alias).collect();
    aliases.push("fast_2".into());
    let count = aliases.len();
    aliases.sort();
    aliases.dedup();
    assert_eq!(aliases.len(), count);
    let dup = runs::create(
        &mut conn,
        &runs::NewRun {
            project_id: p.id,
            alias: Some("fast_2".into()),
            model: "m".into(),
            ..Default::default()
        },
        NOW,
    );
    assert!(matches!(dup, Err(StoreError::Conflict(_))));
}

/// At most one loop per run is active, and loops are claimed oldest first.
#[test]
fn loops_are_a_fifo_with_one_active() {
    let mut conn = memory();
    let p = project(&mut conn);
    let r = run(&mut conn, p.id, Some("q"));
    let first = loops::enqueue(
        &mut conn,
        r.id,
        Mode::Ask,
        "fast",
        "one",
        &RunFlags::default(),
        NOW,
    )
    .unwrap();
    let second = loops::enqueue(
        &mut conn,
        r.id,
        Mode::Act,
        "fast",
        "two",
        &RunFlags::default(),
        NOW,
    )
    .unwrap();
    assert_eq!((first.sequence, second.sequence), (1, 2));
    let claimed = loops::claim_next(&mut conn, r.id, NOW).unwrap().unwrap();
    assert_eq!(claimed.id, first.id);
    let again = diesel::update(crate::schema::loops::table.find(second.id))
        .set(crate::schema::loops::status.eq(loops::ACTIVE))
        .execute(&mut conn);
    assert!(again.is_err(), "a second active loop must be refused");
    loops::finish(&mut conn, first.id, 200, &json!({}), NOW).unwrap();
    assert_eq!(
        loops::claim_next(&mut conn, r.id, NOW)
            .unwrap()
            .map(|l| l.prompt),
        Some("two".into())
    );
    assert_eq!(loops::claim_next(&mut conn, r.id, NOW).unwrap(), None);
}

/// The run's current loop: the active one, else the one that ran last.
fn current(conn: &mut Db, run_id: RunId) -> Option<loops::Loop> {
    t::loops::table
        .filter(t::loops::run_id.eq(run_id))
        .filter(t::loops::status.ne(loops::QUEUED))
        .order(t::loops::sequence.desc())
        .select(loops::Loop::as_select())
        .first(conn)
        .optional()
        .unwrap()
}

/// A claimed loop that asked for routing records its class and model once; other loops are untouched, and the current loop outlives its end.
#[test]
fn routing_is_recorded_on_the_loop() {
    use rummy_provider::routing::{PromptClass, Routed, RoutingConfig};
    let mut conn = memory();
    let p = project(&mut conn);
    let r = run(&mut conn, p.id, Some("routed"));
    let routing = RoutingConfig {
        classes: std::collections::BTreeMap::from([(PromptClass::Code, "deep".to_owned())]),
    };
    let on = RunFlags::parse(r#"{ "route": true, "noRepo": true }"#);
    let code = "fix ./src/main.rs";
    for (flags, prompt) in [(&on, code), (&RunFlags::default(), code), (&on, "hello")] {
        loops::enqueue(&mut conn, r.id, Mode::Ask, "fast", prompt, flags, NOW).unwrap();
    }
    assert_eq!(current(&mut conn, r.id), None);
    assert_eq!(runs::push_marks(&mut conn, r.id).unwrap().routed, None);
    let mut seen = Vec::new();
    while let Some(claimed) = loops::claim_next(&mut conn, r.id, NOW).unwrap() {
        let routed = loops::route(&mut conn, claimed, &routing, NOW).unwrap();
        // Routing twice keeps the first decision.
        let again =
            loops::route(&mut conn, routed.clone(), &RoutingConfig::default(), NOW).unwrap();
        assert_eq!(again, routed);
        assert_eq!(current(&mut conn, r.id).as_ref(), Some(&routed));
        // What run/state and getRun show: the current loop's decision, read with the marks.
        let shown = runs::push_marks(&mut conn, r.id).unwrap().routed;
        assert_eq!(
            shown.map(|text| serde_json::from_str::<Routed>(&text).unwrap()),
            routed.routed()
        );
        seen.push((
            routed.model.clone(),
            routed.routed(),
            routed.config()["noRepo"].clone(),
        ));
        loops::finish(&mut conn, routed.id, 200, &json!({}), NOW).unwrap();
    }
    let routed = |class, model: &str| {
        Some(Routed {
            class,
            model: model.to_owned(),
        })
    };
    assert_eq!(
        seen,
        vec![
            (
                "deep".to_owned(),
                routed(PromptClass::Code, "deep"),
                json!(true)
            ),
            ("fast".to_owned(), None, serde_json::Value::Null),
            (
                "fast".to_owned(),
                routed(PromptClass::Default, "fast"),
                json!(true)
            ),
        ]
    );
    let last = current(&mut conn, r.id).map(|l| l.prompt);
    assert_eq!(last.as_deref(), Some("hello"));
}

/// Run `w` in a fresh project.
fn run_w(conn: &mut Db) -> entries::RunRef {
    let p = project(conn);
    let r = run(conn, p.id, Some("w"));
    entries::RunRef {
        run_id: r.id,
        project_id: p.id,
    }
}

fn write_entry(
    conn: &mut Db,
    run: entries::RunRef,
    path: &str,
    body: &str,
    writer: Writer,
) -> Result<entries::Written, StoreError> {
    testing::write(conn, run, path, body, Visibility::Visible, writer)
}

/// Writes are checked against the scheme's writer tiers, with an error naming writer and scheme.
#[test]
fn writer_tiers_are_enforced() {
    let mut conn = memory();
    let rr = run_w(&mut conn);
    assert!(write_entry(&mut conn, rr, "known://a", "x", Writer::Model).is_ok());
    let refused = write_entry(&mut conn, rr, "prompt://1", "x", Writer::Client).unwrap_err();
    assert_eq!(
        refused.to_string(),
        "permission denied: writer \"client\" may not write scheme \"prompt\" (allowed: system, plugin)"
    );
    assert!(write_entry(&mut conn, rr, "prompt://1", "x", Writer::Plugin).is_ok());
    assert!(matches!(
        write_entry(&mut conn, rr, "nosuch://x", "x", Writer::System),
        Err(StoreError::Invalid(_))
    ));
}

/// A client may not change a project file's body or state (its content follows the disk and
/// accepted proposals): a write, a state change and a copy onto it are refused and the entry
/// stays as it was; its visibility and a `known://` entry's state are still the client's, and
/// the tiers above (the server's own writes) are not affected.
#[test]
fn a_client_may_not_change_a_files_body_or_state() {
    let mut conn = memory();
    let rr = run_w(&mut conn);
    write_entry(&mut conn, rr, "f.txt", "real\n", Writer::System).unwrap();
    write_entry(&mut conn, rr, "known://k", "fact", Writer::Model).unwrap();
    let op = |writer| ops::Op {
        run: rr,
        writer,
        max_entry_tokens: 1000,
        at: entries::WriteCtx {
            divisor: 4,
            now: NOW,
        },
    };
    let client = op(Writer::Client);
    let content = |path: &str, state| ops::ContentWrite {
        path: path.to_owned(),
        body: "the reason".to_owned(),
        append: false,
        state,
        outcome: None,
        visibility: None,
        attributes: None,
    };
    let state = |state| ops::ViewChange {
        state: Some(state),
        ..ops::ViewChange::default()
    };
    let row = ops::exact(&mut conn, rr.run_id, "f.txt").unwrap();

    let refused = [
        ops::write_content(
            &mut conn,
            &client,
            &content("f.txt", Some(State::Cancelled)),
            1,
        ),
        ops::write_content(&mut conn, &client, &content("./new.txt", None), 1),
        ops::change_view(&mut conn, &client, &row, &state(State::Cancelled))
            .map(|()| String::new()),
        ops::cp(&mut conn, &client, "known://k", "f.txt", None),
    ];

    for result in refused {
        match result {
            Err(StoreError::Refused(message)) => assert!(
                message.contains("may not change the body or state of")
                    && message.contains(".txt, a project file"),
                "{message}"
            ),
            other => panic!("expected a refusal, got {other:?}"),
        }
    }
    let after = ops::exact(&mut conn, rr.run_id, "f.txt").unwrap();
    assert_eq!(
        (after.body.as_str(), after.state),
        ("real\n", State::Resolved)
    );
    assert!(entries::by_path(&mut conn, rr.run_id, "new.txt")
        .unwrap()
        .is_none());
    let summarize = ops::ViewChange {
        visibility: Some(Visibility::Summarized),
        ..ops::ViewChange::default()
    };
    ops::change_view(&mut conn, &client, &after, &summarize).unwrap();
    let fact = ops::exact(&mut conn, rr.run_id, "known://k").unwrap();
    ops::change_view(&mut conn, &client, &fact, &state(State::Failed)).unwrap();
    ops::change_view(
        &mut conn,
        &op(Writer::System),
        &after,
        &state(State::Failed),
    )
    .unwrap();
}

/// Rewriting an entry updates body, hash, tokens and write_count; each write takes a new revision.
#[test]
fn rewrites_count_and_revise() {
    let mut conn = memory();
    let rr = run_w(&mut conn);
    let a = write_entry(&mut conn, rr, "known://a", "one", Writer::Model).unwrap();
    let b = write_entry(&mut conn, rr, "known://a", "three", Writer::Model).unwrap();
    assert_eq!(a.entry_id, b.entry_id);
    assert!(b.rev > a.rev);
    let row = entries::by_path(&mut conn, rr.run_id, "known://a")
        .unwrap()
        .unwrap();
    assert_eq!((row.body.as_str(), row.tokens), ("three", 3));
    let count: i32 = crate::schema::run_views::table
        .select(crate::schema::run_views::write_count)
        .first(&mut conn)
        .unwrap();
    assert_eq!(count, 2);
    let changed = entries::changed_since(&mut conn, rr.run_id, a.rev).unwrap();
    assert_eq!(changed.len(), 1);
}

/// Files are project-scoped (every run sees one content); facts are per run.
#[test]
fn scopes_follow_the_scheme() {
    let mut conn = memory();
    let p = project(&mut conn);
    let r1 = run(&mut conn, p.id, Some("r1"));
    let r2 = run(&mut conn, p.id, Some("r2"));
    let a = entries::RunRef {
        run_id: r1.id,
        project_id: p.id,
    };
    let b = entries::RunRef {
        run_id: r2.id,
        project_id: p.id,
    };
    let f1 = write_entry(&mut conn, a, "src/app.rs", "fn a()", Writer::Model).unwrap();
    let f2 = write_entry(&mut conn, b, "src/app.rs", "fn b()", Writer::Model).unwrap();
    assert_eq!(f1.entry_id, f2.entry_id);
    let k1 = write_entry(&mut conn, a, "known://x", "1", Writer::Model).unwrap();
    let k2 = write_entry(&mut conn, b, "known://x", "2", Writer::Model).unwrap();
    assert_ne!(k1.entry_id, k2.entry_id);
    assert_eq!(
        entries::by_path(&mut conn, r1.id, "known://x")
            .unwrap()
            .unwrap()
            .body,
        "1"
    );
}

/// Result paths get a `_k` suffix on collision, counted per run.
#[test]
fn result_paths_are_unique_per_run() {
    let mut conn = memory();
    let p = project(&mut conn);
    let r1 = run(&mut conn, p.id, Some("r1"));
    let r2 = run(&mut conn, p.id, Some("r2"));
    let a = entries::RunRef {
        run_id: r1.id,
        project_id: p.id,
    };
    let b = entries::RunRef {
        run_id: r2.id,
        project_id: p.id,
    };
    let base = "set://turn_1/known%3A%2F%2Fx";
    assert_eq!(entries::unique_path(&mut conn, a, base).unwrap(), base);
    write_entry(&mut conn, a, base, "", Writer::Model).unwrap();
    assert_eq!(
        entries::unique_path(&mut conn, a, base).unwrap(),
        format!("{base}_2")
    );
    write_entry(&mut conn, a, &format!("{base}_2"), "", Writer::Model).unwrap();
    assert_eq!(
        entries::unique_path(&mut conn, a, base).unwrap(),
        format!("{base}_3")
    );
    assert_eq!(entries::unique_path(&mut conn, b, base).unwrap(), base);
}

/// Pushes are numbered per run from 1, each records how far the run's views were pushed, and
/// they are replayed after a given seq.
#[test]
fn notifications_are_numbered_per_run() {
    let mut conn = memory();
    let p = project(&mut conn);
    let r1 = run(&mut conn, p.id, Some("r1"));
    let r2 = run(&mut conn, p.id, Some("r2"));
    let mut push = |run_id: RunId, pushed_rev: i32, params: serde_json::Value| {
        let seq = runs::take_push(&mut conn, run_id, pushed_rev).unwrap();
        notifications::record(&mut conn, run_id, seq, "run/state", &params, NOW)
            .unwrap()
            .value()
    };
    let n1 = push(r1.id, 3, json!({"a": 1}));
    let n2 = push(r1.id, 5, json!({"a": 2}));
    let m1 = push(r2.id, 1, json!({}));
    assert_eq!(
        (n1["seq"].clone(), n2["seq"].clone(), m1["seq"].clone()),
        (json!(1), json!(2), json!(1))
    );
    assert_eq!(n2, json!({"a": 2, "seq": 2}));
    let marks = |conn: &mut Db, id: RunId| runs::push_marks(conn, id).unwrap().pushed_rev;
    assert_eq!((marks(&mut conn, r1.id), marks(&mut conn, r2.id)), (5, 1));
    let missed = notifications::since(&mut conn, r1.id, 1, 100).unwrap();
    assert_eq!(missed.iter().map(|n| n.seq).collect::<Vec<_>>(), vec![2]);
    assert!(runs::take_push(&mut conn, RunId(999), 0).is_err());
}

/// Hashes are lower-case hex SHA-256, as `sha256sum` prints them.
#[test]
fn hashes_are_lowercase_hex_sha256() {
    assert_eq!(
        crate::entries::hex_sha256(""),
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    );
    assert_eq!(
        crate::entries::hex_sha256("abc"),
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    );
}

/// Retention removes the runs finished before the cutoff, with their run-scoped entries and
/// views, and keeps runs touched since, runs with a loop queued, and the project's entries.
#[test]
fn retention_purges_only_runs_finished_before_the_cutoff() {
    let mut conn = memory();
    let p = project(&mut conn);
    let long_ago = NOW.days_before(40);
    let finished_at = |conn: &mut Db, alias: &str, at: Millis| {
        let r = run(conn, p.id, Some(alias));
        runs::set_status(conn, r.id, RunStatus::Running, at).unwrap();
        runs::set_status(conn, r.id, RunStatus::Completed, at).unwrap();
        r
    };
    let old = finished_at(&mut conn, "old", long_ago);
    finished_at(&mut conn, "recent", NOW.days_before(1));
    let requeued = finished_at(&mut conn, "requeued", long_ago);
    loops::enqueue(
        &mut conn,
        requeued.id,
        Mode::Act,
        "fast",
        "again",
        &RunFlags::default(),
        long_ago,
    )
    .unwrap();
    let old_ref = entries::RunRef {
        project_id: p.id,
        run_id: old.id,
    };
    write_entry(&mut conn, old_ref, "known://fact", "kept?", Writer::Model).unwrap();
    write_entry(
        &mut conn,
        old_ref,
        "src/main.rs",
        "fn main() {}",
        Writer::Model,
    )
    .unwrap();

    let purged = runs::purge_finished_before(&mut conn, NOW.days_before(31)).unwrap();

    assert_eq!(purged, vec![old.id]);
    let left: Vec<String> = t::runs::table
        .order(t::runs::id)
        .select(t::runs::alias)
        .load(&mut conn)
        .unwrap();
    assert_eq!(left, vec!["recent", "requeued"]);
    let paths: Vec<String> = t::entries::table
        .select(t::entries::path)
        .load(&mut conn)
        .unwrap();
    assert_eq!(
        paths,
        vec!["src/main.rs"],
        "the project's file outlives the run"
    );
    let views: i64 = t::run_views::table.count().get_result(&mut conn).unwrap();
    assert_eq!(views, 0);
}

/// A view's state and visibility take only the names the code knows: the database refuses
/// any other, and takes every known one.
#[test]
fn view_state_and_visibility_are_checked_by_the_database() {
    let mut conn = memory();
    let rr = run_w(&mut conn);
    write_entry(&mut conn, rr, "known://a", "one", Writer::Model).unwrap();
    let mut set = |column: &str, value: &str| {
        // The values are the test's own literals: written into the SQL, which both backends read.
        diesel::sql_query(format!("UPDATE run_views SET {column} = '{value}'"))
            .execute(&mut conn)
            .map_err(|e| e.to_string())
    };
    for state in ["proposed", "streaming", "resolved", "failed", "cancelled"] {
        assert_eq!(set("state", state), Ok(1), "{state}");
    }
    for visibility in ["visible", "summarized", "archived"] {
        assert_eq!(set("visibility", visibility), Ok(1), "{visibility}");
    }
    let refused = |e: String| {
        e.starts_with("CHECK constraint failed") || e.contains("violates check constraint")
    };
    assert!(set("state", "done").is_err_and(refused));
    assert!(set("visibility", "hidden").is_err_and(refused));
}
