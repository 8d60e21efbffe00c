//! Recall against real SQLite: candidates split into stable
//! sections, a session's current state ranked above old history, the caps, nothing injected
//! when nothing is relevant, and sources that are missing, empty or not Markdown.

use super::*;
use pretty_assertions::assert_eq;
use rummy_store::db::Db;
use rummy_store::entries::WriteCtx;
use rummy_store::entry::Writer;
use rummy_store::memory::{record_history, remember, MemoryWrite, Provenance};
use rummy_store::testing::{fact, insert_entry, memory as store, project, run, NOW};
use serde_json::Map;

const DAY: i64 = DAY_MS;

/// A project with a recalling run `a` and a sibling `b`, and what the project remembers: two
/// memories (one in sections), `b`'s session state and a fact, an old history line and one of
/// today, and a fact of `a`'s own.
fn fixture() -> (Db, RunRef, RunRef) {
    let mut conn = store();
    let p = project(&mut conn, "p");
    let (a, b) = (run(&mut conn, p.id, "a"), run(&mut conn, p.id, "b"));
    let remember_one = |conn: &mut Db, path: &str, body: &str| {
        let w = MemoryWrite {
            project_id: p.id,
            path,
            body,
            summary: None,
            provenance: Provenance {
                run: "b",
                turn: 1,
                user: None,
                writer: Writer::Model,
            },
        };
        remember(
            conn,
            &w,
            WriteCtx {
                divisor: 2,
                now: NOW,
            },
        )
        .unwrap();
    };
    remember_one(
        &mut conn,
        "memory://deploy/host",
        "Production runs on prod-3 behind the nginx proxy.",
    );
    remember_one(
        &mut conn,
        "memory://style",
        "## Naming\nFiles use snake_case names.\n\n## Testing\nEvery parser change gets a table test.",
    );
    insert_entry(
        &mut conn,
        &Scope::Run(b.run_id).key(),
        "session://state",
        "# Billing move\n\n## Current state\nMigrating the billing database to postgres; tables copied.\n\n## Worklog\n",
        NOW,
    );
    fact(
        &mut conn,
        b,
        "known://billing/db",
        "The billing database is postgres 16.",
    );
    let old = Millis(NOW.0 - 90 * DAY);
    record_history(
        &mut conn,
        p.id,
        "history://2023-08-16/b/1",
        "b loop 1 (act): \"Migrate the billing database\" → concluded: billing database migration planned",
        &Map::new(),
        WriteCtx { divisor: 2, now: old },
    )
    .unwrap();
    record_history(
        &mut conn,
        p.id,
        "history://2023-11-14/b/2",
        "b loop 2 (ask): \"Which proxy fronts production?\" → concluded: nginx",
        &Map::new(),
        WriteCtx {
            divisor: 2,
            now: NOW,
        },
    )
    .unwrap();
    fact(
        &mut conn,
        a,
        "known://billing/own",
        "My own note on the billing database.",
    );
    (conn, a, b)
}

/// What `a` recalls for `prompt`: (source, path, section) of each item, in order.
fn recalled(
    conn: &mut Db,
    a: RunRef,
    prompt: &str,
    settings: &RecallSettings,
) -> Vec<(String, String, Option<String>)> {
    recall(conn, a, prompt, settings, NOW)
        .unwrap()
        .map(|r| r.why.items)
        .unwrap_or_default()
        .into_iter()
        .map(|i| (i.source, i.path, i.section))
        .collect()
}

fn item(source: &str, path: &str, section: Option<&str>) -> (String, String, Option<String>) {
    (
        source.to_owned(),
        path.to_owned(),
        section.map(str::to_owned),
    )
}

/// Another run's current state outranks an old history line about the same thing; both are
/// recalled, with that run's fact, and the recalling run's own fact is not.
#[test]
fn a_current_state_ranks_above_old_history() {
    let (mut conn, a, _) = fixture();
    let got = recalled(
        &mut conn,
        a,
        "Where does the billing database migration stand?",
        &RecallSettings::default(),
    );
    assert_eq!(
        got.first(),
        Some(&item("session", "session://state", Some("Current state")))
    );
    let history = got.iter().position(|i| i.1 == "history://2023-08-16/b/1");
    assert!(history.is_some_and(|h| h > 0), "{got:?}");
    assert!(
        got.contains(&item("known", "known://billing/db", None)),
        "{got:?}"
    );
    assert!(!got.iter().any(|i| i.1 == "known://billing/own"), "{got:?}");
}

/// A memory in sections gives only the section that matches; a memory without any is whole.
#[test]
fn only_the_matching_section_is_recalled() {
    let (mut conn, a, _) = fixture();
    assert_eq!(
        recalled(&mut conn, a, "naming of files", &RecallSettings::default()),
        vec![item("memory", "memory://style", Some("Naming"))]
    );
    let mut got = recalled(
        &mut conn,
        a,
        "which proxy is in front of production",
        &RecallSettings::default(),
    );
    got.sort();
    assert_eq!(
        got,
        vec![
            item("history", "history://2023-11-14/b/2", None),
            item("memory", "memory://deploy/host", None),
        ]
    );
}

/// Nothing relevant, nothing injected: a prompt that shares no telling word, or only one of
/// several, recalls nothing, and neither does a prompt of common words only.
#[test]
fn an_unrelated_prompt_recalls_nothing() {
    let (mut conn, a, _) = fixture();
    for prompt in [
        "Write a haiku about autumn leaves",
        "Summarise the database of poems",
        "What is it and why?",
        "",
    ] {
        assert_eq!(
            recall(&mut conn, a, prompt, &RecallSettings::default(), NOW).unwrap(),
            None,
            "{prompt}"
        );
    }
}

/// At most `max_injected` items, and the block's items within `max_chars`: an item that does
/// not fit is cut when enough of it fits, else left out.
#[test]
fn the_caps_hold() {
    let (mut conn, a, _) = fixture();
    let prompt = "billing database migration to postgres";
    let all = recalled(&mut conn, a, prompt, &RecallSettings::default());
    assert!(all.len() >= 3, "{all:?}");
    let two = RecallSettings {
        max_injected: 2,
        ..RecallSettings::default()
    };
    assert_eq!(recalled(&mut conn, a, prompt, &two), all[..2].to_vec());
    for max_chars in [200, 260, 400] {
        let small = RecallSettings {
            max_chars,
            ..RecallSettings::default()
        };
        let got = recall(&mut conn, a, prompt, &small, NOW).unwrap().unwrap();
        let items = got.body.split_once('\n').map_or("", |(_, items)| items);
        assert!(
            items.chars().count() <= max_chars as usize,
            "{max_chars}: {items}"
        );
        assert!(!got.why.items.is_empty());
    }
    let tiny = RecallSettings {
        max_chars: 40,
        ..RecallSettings::default()
    };
    assert_eq!(recall(&mut conn, a, prompt, &tiny, NOW).unwrap(), None);
}

/// A project that remembers nothing, sources that are empty, not Markdown, or of a scheme the
/// registry does not know (another feature's session state), are read without failing.
#[test]
fn missing_empty_and_malformed_sources_are_harmless() {
    let mut conn = store();
    let p = project(&mut conn, "p");
    let (a, b) = (run(&mut conn, p.id, "a"), run(&mut conn, p.id, "b"));
    assert_eq!(
        recall(
            &mut conn,
            a,
            "billing database",
            &RecallSettings::default(),
            NOW
        )
        .unwrap(),
        None
    );
    let scope = Scope::Run(b.run_id).key();
    insert_entry(&mut conn, &scope, "session://state", "", NOW);
    insert_entry(
        &mut conn,
        &scope,
        "session://other",
        "## \n##\n```\n# billing database",
        NOW,
    );
    insert_entry(
        &mut conn,
        &scope,
        "session://json",
        "{\"billing\": \"database\"}",
        NOW,
    );
    assert_eq!(
        recalled(&mut conn, a, "billing database", &RecallSettings::default()),
        vec![
            item("session", "session://json", None),
            item("session", "session://other", None),
        ]
    );
}

/// The block names each item's source path and run; the attributes say why each was chosen.
#[test]
fn the_block_names_its_sources_and_says_why() {
    let (mut conn, a, _) = fixture();
    let got = recall(
        &mut conn,
        a,
        "naming of files",
        &RecallSettings::default(),
        NOW,
    )
    .unwrap()
    .unwrap();
    assert_eq!(
        got.body,
        format!(
            "{}\n<memory path=\"memory://style\" section=\"Naming\">Files use snake_case names.</memory>",
            messages::RECALL_HEADER
        )
    );
    assert_eq!(
        got.why,
        Recall {
            path: String::new(),
            loop_number: 0,
            terms: vec!["naming".into(), "files".into()],
            candidates: 1,
            reranked: false,
            items: vec![RecallItem {
                path: "memory://style".into(),
                source: "memory".into(),
                run: None,
                section: Some("Naming".into()),
                score: 1.2,
                matched: vec!["naming".into(), "files".into()],
            }],
        }
    );
}

/// Scoring alone: the share of the terms a section matches, the relative bm25 (by at most
/// half), the source's weight and a history line's age decide the order; an identical section
/// of two runs (a fork's copy) is injected once.
#[test]
fn scores_order_the_sections() {
    let terms: Vec<String> = ["billing", "database"]
        .iter()
        .map(|t| (*t).to_owned())
        .collect();
    let m =
        |path: &str, source: Source, run: Option<&str>, body: &str, bm25: f64, age_days: i64| {
            Matched {
                path: path.into(),
                source,
                run: run.map(str::to_owned),
                summary: String::new(),
                body: body.into(),
                bm25,
                updated_at: Millis(NOW.0 - age_days * DAY),
            }
        };
    let matched = vec![
        m(
            "history://x/b/1",
            Source::History,
            None,
            "billing database moved",
            -4.0,
            60,
        ),
        m(
            "session://state",
            Source::Session,
            Some("b"),
            "## Current state\nbilling database half done\n## Worklog\nbilling database notes",
            -2.0,
            0,
        ),
        m(
            "known://db",
            Source::Known,
            Some("b"),
            "billing database is postgres",
            -3.0,
            0,
        ),
        m(
            "known://db",
            Source::Known,
            Some("c"),
            "billing database is postgres",
            -3.0,
            0,
        ),
    ];
    let got: Vec<(String, Option<String>, Option<String>, f64)> = select(&terms, &matched, 10, NOW)
        .into_iter()
        .map(|c| (c.item.path, c.item.run, c.item.section, c.item.score))
        .collect();
    assert_eq!(
        got,
        vec![
            (
                "session://state".into(),
                Some("b".into()),
                Some("Current state".into()),
                1.125
            ),
            (
                "session://state".into(),
                Some("b".into()),
                Some("Worklog".into()),
                0.9
            ),
            ("known://db".into(), Some("b".into()), None, 0.875),
            ("history://x/b/1".into(), None, None, 0.233),
        ]
    );
}

/// A run's own history lines are not recalled — its context holds its loops already — while
/// another run recalls them.
#[test]
fn a_runs_own_history_is_left_out() {
    let (mut conn, a, b) = fixture();
    let mut by_a = Map::new();
    by_a.insert("run".into(), serde_json::Value::from("a"));
    record_history(
        &mut conn,
        a.project_id,
        "history://2023-11-14/a/1",
        "a loop 1 (act): \"Tune the zebra cache\" → concluded: zebra cache tuned",
        &by_a,
        WriteCtx {
            divisor: 2,
            now: NOW,
        },
    )
    .unwrap();
    let prompt = "zebra cache tuning";
    assert_eq!(
        recalled(&mut conn, a, prompt, &RecallSettings::default()),
        vec![]
    );
    assert_eq!(
        recalled(&mut conn, b, prompt, &RecallSettings::default()),
        vec![item("history", "history://2023-11-14/a/1", None)]
    );
}

/// A re-ranking reorders the candidates and drops those it leaves out; the caps still hold, and
/// a ranking that keeps none leaves nothing to inject.
#[test]
fn a_reranking_orders_and_filters_the_candidates() {
    let (mut conn, a, _) = fixture();
    let settings = RecallSettings::default();
    let prompt = "billing database migration to postgres";
    let found = candidates(&mut conn, a, prompt, &settings, 12, NOW)
        .unwrap()
        .unwrap();
    let lexical: Vec<String> = found.chosen.iter().map(|c| c.item.path.clone()).collect();
    assert!(lexical.len() >= 3, "{lexical:?}");
    let last = lexical.len() - 1;
    let reranked = conclude(found.clone(), Some(vec![last, 0]), &settings).unwrap();
    let paths: Vec<&str> = reranked.why.items.iter().map(|i| i.path.as_str()).collect();
    assert_eq!(paths, vec![lexical[last].as_str(), lexical[0].as_str()]);
    assert!(reranked.why.reranked);
    let one = RecallSettings {
        max_injected: 1,
        ..settings
    };
    assert_eq!(
        conclude(found.clone(), Some(vec![last, 0]), &one)
            .unwrap()
            .why
            .items
            .len(),
        1
    );
    assert_eq!(conclude(found.clone(), Some(vec![]), &settings), None);
    assert!(!conclude(found, None, &settings).unwrap().why.reranked);
}
