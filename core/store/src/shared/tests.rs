//! Shared questions against real SQLite: who sees them when, and closing them for all.

use super::*;
use crate::db::Db;
use crate::entries::WriteCtx;
use crate::entry::Writer;
use crate::testing::{memory as store, project, run, write, NOW};
use pretty_assertions::assert_eq;

fn by(run: &str, turn: i32) -> Provenance<'_> {
    Provenance {
        run,
        turn,
        user: None,
        writer: Writer::Model,
    }
}

fn ask_in(conn: &mut Db, asker: RunRef, alias: &str, body: &str) {
    let a = Ask {
        run: asker,
        path: "unknown://deploy/target",
        body,
        summary: Some("deploy"),
        visibility: Visibility::Visible,
        loop_id: None,
        provenance: by(alias, 2),
    };
    ask(
        conn,
        &a,
        WriteCtx {
            divisor: 2,
            now: NOW,
        },
    )
    .unwrap();
}

/// What `run` has in its open questions: (path, body, shared).
fn open_for(conn: &mut Db, run: RunRef) -> Vec<(String, String, bool)> {
    entries::unknowns(conn, run, true)
        .unwrap()
        .into_iter()
        .map(|r| {
            let shared = is_shared_text(&r.attributes);
            (r.path, r.body, shared)
        })
        .collect()
}

fn question(body: &str) -> Vec<(String, String, bool)> {
    vec![("unknown://deploy/target".into(), body.into(), true)]
}

/// A shared question reaches the asking run and every run of the project with a loop under
/// way at once, an idle one when its next loop starts; never another project's runs. The
/// asker's own question at that path gives way to it.
#[test]
fn every_run_of_the_project_sees_a_shared_question() {
    let mut conn = store();
    let p = project(&mut conn, "p");
    let (a, busy, idle) = (
        run(&mut conn, p.id, "a"),
        run(&mut conn, p.id, "busy"),
        run(&mut conn, p.id, "idle"),
    );
    let q = project(&mut conn, "q");
    let stranger = run(&mut conn, q.id, "s");
    // A new run is queued (100); the idle one has finished its loop.
    runs::set_status(&mut conn, idle.run_id, RunStatus::Running, NOW).unwrap();
    runs::set_status(&mut conn, idle.run_id, RunStatus::Completed, NOW).unwrap();
    write(
        &mut conn,
        a,
        "unknown://deploy/target",
        "mine",
        Visibility::Visible,
        Writer::Model,
    )
    .unwrap();
    ask_in(&mut conn, a, "a", "Which host is production?");
    let body = "Which host is production?";
    assert_eq!(open_for(&mut conn, a), question(body));
    assert_eq!(open_for(&mut conn, busy), question(body));
    assert_eq!(open_for(&mut conn, idle), vec![]);
    assert_eq!(attach(&mut conn, idle, NOW).unwrap(), 1);
    assert_eq!(attach(&mut conn, idle, NOW).unwrap(), 0);
    assert_eq!(open_for(&mut conn, idle), question(body));
    assert_eq!(attach(&mut conn, stranger, NOW).unwrap(), 0);
    // The question as the asking run reads it by path: the project's.
    let seen = entries::by_path(&mut conn, a.run_id, "unknown://deploy/target")
        .unwrap()
        .map(|r| r.body);
    assert_eq!(seen.as_deref(), Some(body));
}

/// A known:// that answers a shared question closes it for every run, recording the answer
/// and who gave it; answering again closes nothing; asking again opens it anew.
#[test]
fn answering_a_shared_question_closes_it_for_all() {
    let mut conn = store();
    let p = project(&mut conn, "p");
    let (a, b) = (run(&mut conn, p.id, "a"), run(&mut conn, p.id, "b"));
    ask_in(&mut conn, a, "a", "Which host?");
    attach(&mut conn, b, NOW).unwrap();
    let closed = close(
        &mut conn,
        b,
        "unknown://deploy/target",
        "known://deploy/target",
        by("b", 5),
        NOW,
    )
    .unwrap();
    assert_eq!(closed, Closed::ForAll { runs: 2 });
    assert_eq!(
        (open_for(&mut conn, a), open_for(&mut conn, b)),
        (vec![], vec![])
    );
    let (_, attributes) = project_question(&mut conn, p.id, "unknown://deploy/target")
        .unwrap()
        .unwrap();
    assert_eq!(
        attributes,
        json!({
            "shared": true,
            "summary": "deploy",
            "askedBy": {"run": "a", "turn": 2, "user": null, "writer": "model", "at": NOW.to_rfc3339()},
            "closedBy": {
                "run": "b", "turn": 5, "user": null, "writer": "model", "at": NOW.to_rfc3339(),
                "path": "known://deploy/target",
            },
        })
    );
    assert_eq!(
        close(
            &mut conn,
            a,
            "unknown://deploy/target",
            "known://x",
            by("a", 6),
            NOW
        )
        .unwrap(),
        Closed::NotOpen
    );
    ask_in(&mut conn, a, "a", "Which host now?");
    assert_eq!(open_for(&mut conn, a), question("Which host now?"));
    let (_, again) = project_question(&mut conn, p.id, "unknown://deploy/target")
        .unwrap()
        .unwrap();
    assert_eq!(again.get("closedBy"), None);
}

/// A run's own question is closed for that run alone; a path with no open question closes
/// nothing.
#[test]
fn answering_a_runs_own_question_closes_it_for_that_run() {
    let mut conn = store();
    let p = project(&mut conn, "p");
    let a = run(&mut conn, p.id, "a");
    write(
        &mut conn,
        a,
        "unknown://port",
        "Which port?",
        Visibility::Visible,
        Writer::Model,
    )
    .unwrap();
    assert_eq!(
        close(
            &mut conn,
            a,
            "unknown://port",
            "known://port",
            by("a", 3),
            NOW
        )
        .unwrap(),
        Closed::Own
    );
    assert_eq!(open_for(&mut conn, a), vec![]);
    let row = entries::by_path(&mut conn, a.run_id, "unknown://port")
        .unwrap()
        .unwrap();
    assert_eq!(row.attributes()["closedBy"]["path"], json!("known://port"));
    assert_eq!(
        close(
            &mut conn,
            a,
            "unknown://nothing",
            "known://x",
            by("a", 3),
            NOW
        )
        .unwrap(),
        Closed::NotOpen
    );
    assert_eq!(
        close(&mut conn, a, "known://port", "known://x", by("a", 3), NOW).unwrap(),
        Closed::NotOpen
    );
}
