//! Consolidation's pure parts against real SQLite: what the sidecar reads, how its answer is
//! read, and how the proposals are written.

use super::*;
use crate::entry::Visibility;
use crate::ids::ProjectId;
use crate::store::entries::WriteCtx;
use crate::store::testing::{insert_entry, memory as db, project, run, write, NOW};
use pretty_assertions::assert_eq;

fn remember_one(conn: &mut SqliteConnection, project_id: ProjectId, path: &str, body: &str) {
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
    insert_entry(
        &mut conn,
        &crate::entry::Scope::Run(a.run_id).key(),
        "session://state",
        "## Current state\nDeploying.",
        NOW,
    );
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
        summary: Some("deploy".into()),
    };
    assert_eq!(
        read("```json\n{\"memories\": [{\"action\": \"update\", \"path\": \"memory://deploy/host\", \"content\": \"prod-4\", \"summary\": \"deploy\"}]}\n```"),
        Ok(vec![one])
    );
    assert_eq!(read("Nothing new: {\"memories\": []}"), Ok(vec![]));
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
