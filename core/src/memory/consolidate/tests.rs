//! Consolidation's pure parts against real SQLite: what the sidecar reads, how its answer is
//! read, and how the proposals are written.

use super::*;
use pretty_assertions::assert_eq;
use rummy_store::db::Db;
use rummy_store::entries::WriteCtx;
use rummy_store::entry::Visibility;
use rummy_store::ids::ProjectId;
use rummy_store::testing::{memory as db, project, run, write, NOW};
use serde_json::Value;

fn remember_one(conn: &mut Db, project_id: ProjectId, path: &str, body: &str) {
    let w = MemoryWrite {
        project_id,
        path,
        body,
        summary: None,
        provenance: Provenance {
            run: "old",
            turn: 1,
            user: None,
            writer: Writer::Model,
        },
    };
    store::remember(
        conn,
        &w,
        WriteCtx {
            divisor: 2,
            now: NOW,
        },
    )
    .unwrap();
}

/// The sidecar reads the run's own facts and session state and the project's memories that
/// share their words — not another run's facts, not unrelated memories; a run with nothing to
/// consolidate asks nothing.
#[test]
fn it_reads_the_runs_facts_and_the_related_memories() {
    let mut conn = db();
    let p = project(&mut conn, "p");
    let (a, b) = (run(&mut conn, p.id, "a"), run(&mut conn, p.id, "b"));
    assert_eq!(gather(&mut conn, a, "Deploy it").unwrap(), None);
    write(
        &mut conn,
        a,
        "known://deploy/host",
        "Production runs on prod-4.",
        Visibility::Visible,
        Writer::Model,
    )
    .unwrap();
    write(
        &mut conn,
        b,
        "known://other",
        "Production is fun.",
        Visibility::Visible,
        Writer::Model,
    )
    .unwrap();
    write(
        &mut conn,
        a,
        "session://state",
        "## Current state\nDeploying.",
        Visibility::Visible,
        Writer::System,
    )
    .unwrap();
    remember_one(
        &mut conn,
        p.id,
        "memory://deploy/host",
        "Production runs on prod-3.",
    );
    remember_one(&mut conn, p.id, "memory://style", "Tabs, not spaces.");
    let input = gather(&mut conn, a, "Deploy it").unwrap().unwrap();
    assert_eq!(
        input,
        Input {
            prompt: "Deploy it".into(),
            facts: vec![(
                "known://deploy/host".into(),
                "Production runs on prod-4.".into()
            )],
            session: Some("## Current state\nDeploying.".into()),
            memories: vec![(
                "memory://deploy/host".into(),
                "Production runs on prod-3.".into()
            )],
        }
    );
    let task = task(&input);
    assert_eq!(task.name, "consolidate");
    assert!(!task.system.contains("<!--"));
    assert_eq!(
        task.input,
        "The task the run finished:\nDeploy it\n\nIts facts:\n- known://deploy/host: Production runs on prod-4.\n\nIts session state:\n## Current state\nDeploying.\n\nRelated memories of the project:\n- memory://deploy/host: Production runs on prod-3."
    );
}

/// The answer is the JSON asked for, in words or code fences or not; anything else is
/// unreadable, and changes nothing.
#[test]
fn reading_the_answer() {
    let one = Proposal {
        action: Action::Update,
        path: "memory://deploy/host".into(),
        content: "prod-4".into(),
        reason: None,
        summary: Some("deploy".into()),
    };
    assert_eq!(
        read("```json\n{\"memories\": [{\"action\": \"update\", \"path\": \"memory://deploy/host\", \"content\": \"prod-4\", \"summary\": \"deploy\"}]}\n```"),
        Ok(vec![one])
    );
    assert_eq!(read("Nothing new: {\"memories\": []}"), Ok(vec![]));
    assert_eq!(
        read("{\"memories\": [{\"action\": \"remove\", \"path\": \"memory://wip\", \"reason\": \"the task is over\"}]}"),
        Ok(vec![Proposal {
            action: Action::Remove,
            path: "memory://wip".into(),
            content: String::new(),
            reason: Some("the task is over".into()),
            summary: None,
        }])
    );
    for bad in [
        "no",
        "{\"memories\": [{\"action\": \"delete\", \"path\": \"memory://x\", \"content\": \"y\"}]}",
        "{\"memories\": [{\"path\": \"memory://x\"}]}",
        "{\"memory\": []}",
        "} {",
    ] {
        assert!(read(bad).is_err(), "{bad}");
    }
}

/// Proposals are memory writes by the server for the run: a new one added, a changed one
/// superseded (its old version kept), a path that is no memory or a content over the size gate
/// left out.
#[test]
fn proposals_are_written_at_once() {
    let mut conn = db();
    let p = project(&mut conn, "p");
    let a = run(&mut conn, p.id, "a");
    remember_one(
        &mut conn,
        p.id,
        "memory://deploy/host",
        "Production runs on prod-3.",
    );
    let proposal = |action, path: &str, content: &str| Proposal {
        action,
        path: path.into(),
        content: content.into(),
        reason: None,
        summary: None,
    };
    let applied = apply(
        &mut conn,
        a,
        &[
            proposal(
                Action::Update,
                "memory://deploy/host",
                "Production runs on prod-4.",
            ),
            proposal(Action::Add, "memory://ci", "CI runs on every push."),
            proposal(Action::Add, "known://x", "not a memory"),
            proposal(Action::Add, "memory://big", &"word ".repeat(400)),
        ],
        512,
        WriteCtx {
            divisor: 2,
            now: NOW,
        },
    )
    .unwrap();
    assert_eq!(
        applied,
        vec![
            Applied::Written(
                "memory://deploy/host".into(),
                Remembered::Superseded {
                    archived: "memory://deploy/host@1".into(),
                    version: 2
                }
            ),
            Applied::Written("memory://ci".into(), Remembered::Added),
            Applied::Skipped("known://x".into(), "not a memory:// path".into()),
            Applied::Skipped("memory://big".into(), "1000 tokens (max 512)".into()),
        ]
    );
    let current = store::current(&mut conn, p.id, "memory://ci")
        .unwrap()
        .unwrap();
    let attributes = current.attribute_map();
    assert_eq!(
        (attributes["run"].clone(), attributes["writer"].clone()),
        (Value::from("a"), Value::from("plugin"))
    );
}

/// How many of the project's entries recall finds for `word`.
fn recalled(
    conn: &mut rummy_store::db::Db,
    project_id: rummy_store::ids::ProjectId,
    word: &str,
) -> usize {
    let terms = [word.to_owned()];
    let query = store::RecallQuery {
        terms: &terms,
        project_id,
        except_run: None,
    };
    store::recall_matches(conn, &query, 10).unwrap().len()
}

/// Cleanup removes a memory that only held a task's transient state: it leaves recall and its
/// path, its text kept archived with who removed it and why; removing what is not there is left
/// out; a memory written at the path again continues the version numbers.
#[test]
fn cleanup_removes_transient_content_and_keeps_it_archived() {
    let mut conn = db();
    let p = project(&mut conn, "p");
    let a = run(&mut conn, p.id, "a");
    remember_one(
        &mut conn,
        p.id,
        "memory://wip/migration",
        "Currently halfway through moving the billing tables.",
    );
    assert_eq!(recalled(&mut conn, p.id, "billing"), 1);
    let at = WriteCtx {
        divisor: 2,
        now: NOW,
    };
    let remove = |path: &str| Proposal {
        action: Action::Remove,
        path: path.into(),
        content: String::new(),
        reason: Some("the migration is finished".into()),
        summary: None,
    };
    let applied = apply(
        &mut conn,
        a,
        &[remove("memory://wip/migration"), remove("memory://never")],
        512,
        at,
    )
    .unwrap();
    assert_eq!(
        applied,
        vec![
            Applied::Removed(
                "memory://wip/migration".into(),
                "memory://wip/migration@1".into()
            ),
            Applied::Skipped("memory://never".into(), "no such memory".into()),
        ]
    );
    assert_eq!(
        store::current(&mut conn, p.id, "memory://wip/migration").unwrap(),
        None
    );
    let kept = store::current(&mut conn, p.id, "memory://wip/migration@1")
        .unwrap()
        .unwrap();
    assert_eq!(
        kept.body,
        "Currently halfway through moving the billing tables."
    );
    let attributes = kept.attribute_map();
    assert_eq!(
        (
            attributes["removedBy"].clone(),
            attributes["removedBecause"].clone(),
            attributes["validTo"].clone(),
        ),
        (
            serde_json::json!({"run": "a", "turn": 0, "user": null, "writer": "plugin"}),
            Value::from("the migration is finished"),
            Value::from(NOW.to_rfc3339()),
        )
    );
    assert_eq!(recalled(&mut conn, p.id, "billing"), 0);

    remember_one(
        &mut conn,
        p.id,
        "memory://wip/migration",
        "The billing tables live in the ledger schema.",
    );
    let again = store::current(&mut conn, p.id, "memory://wip/migration")
        .unwrap()
        .unwrap();
    assert_eq!(again.attribute_map()["version"], Value::from(2));
    remember_one(
        &mut conn,
        p.id,
        "memory://wip/migration",
        "The billing tables live in the ledger schema, partitioned by month.",
    );
    assert!(store::current(&mut conn, p.id, "memory://wip/migration@2")
        .unwrap()
        .is_some());
}
