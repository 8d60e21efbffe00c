//! The audit trail's deltas: how a text is compared with its keyframe, and that every read
//! gives back exactly the text written — through the views, a body search and a fork.

use super::*;
use crate::db::Db;
use crate::entries::{self, EntryFilter, EntryWrite, RunRef, WriteCtx};
use crate::entry::{State, Visibility, Writer};
use crate::schema::entries as e;
use crate::testing::{memory as db, project, run, NOW};
use pretty_assertions::assert_eq;
use serde_json::json;

/// The text a delta stands for, rebuilt from its keyframe as the SQL does.
fn rebuild(keyframe: &str, d: &Delta<'_>) -> String {
    let chars: Vec<char> = keyframe.chars().collect();
    let prefix: String = chars[..usize::try_from(d.prefix_chars).unwrap()]
        .iter()
        .collect();
    let suffix: String = chars[chars.len() - usize::try_from(d.suffix_chars).unwrap()..]
        .iter()
        .collect();
    format!("{prefix}{}{suffix}", d.middle)
}

/// A context of `n` numbered entries, with non-ASCII text, about 60 characters each.
fn context(n: usize) -> String {
    (0..n)
        .map(|i| format!("<entry path=\"known://fact_{i}\">café № {i} — 🦀 noted</entry>\n"))
        .collect()
}

/// A text that grew in its middle is the keyframe's head, what is new, and its tail — counted
/// in characters, so multi-byte characters at either edge are kept whole.
#[test]
fn a_grown_text_is_the_keyframes_head_the_new_middle_and_its_tail() {
    let keyframe = format!("{}<prompt>Go on</prompt>", context(60));
    let text = format!(
        "{}<entry path=\"known://new\">é🦀</entry>\n<prompt>Go on</prompt>",
        context(60)
    );
    let d = delta(7, &keyframe, &text).expect("a delta");
    assert_eq!(d.base_id, 7);
    // Both the new entry and the tail begin with `<`: the head takes it.
    assert_eq!(d.middle, "entry path=\"known://new\">é🦀</entry>\n<");
    assert_eq!(rebuild(&keyframe, &d), text);
    assert_eq!(
        usize::try_from(d.prefix_chars).unwrap(),
        context(60).chars().count() + 1
    );
}

/// The same text again is all prefix: nothing is stored but the reference.
#[test]
fn the_same_text_again_stores_nothing_but_the_reference() {
    let text = context(50);
    let d = delta(1, &text, &text).expect("a delta");
    assert_eq!(
        (d.middle, d.suffix_chars),
        ("", 0),
        "prefix {}",
        d.prefix_chars
    );
    assert_eq!(rebuild(&text, &d), text);
}

/// A short text, one holding NUL, or one that differs in more than an eighth is stored whole.
#[test]
fn short_nul_or_much_changed_texts_are_stored_whole() {
    let long = context(50);
    assert_eq!(delta(1, "short", "short"), None);
    assert_eq!(delta(1, &long, &format!("{long}\0")), None);
    assert_eq!(delta(1, &format!("\0{long}"), &long), None);
    let changed = format!("{}{}", context(40), "x".repeat(long.len() / 4));
    assert_eq!(delta(1, &long, &changed), None);
}

fn at() -> WriteCtx {
    WriteCtx {
        divisor: 2,
        now: NOW,
    }
}

/// Writes the audit text `body` of `scheme` for turn `turn` of `run`, as a turn's record does.
fn audit(conn: &mut Db, run: RunRef, scheme: &str, turn: i32, body: &str) {
    let path = format!("{scheme}://{turn}");
    let w = EntryWrite {
        run,
        path: &path,
        body,
        attributes: &json!({}),
        state: State::Resolved,
        outcome: None,
        visibility: Visibility::Archived,
        loop_id: None,
        turn,
        writer: Writer::System,
    };
    entries::write_audit(conn, &w, &format!("{scheme}://{}", turn - 1), at(), None).unwrap();
}

/// What the `entries.body` column holds for the run's entry at `path`, and its keyframe.
fn raw(conn: &mut Db, path: &str, scope: &str) -> (String, Option<i32>) {
    e::table
        .filter(e::scope.eq(scope))
        .filter(e::path.eq(path))
        .select((e::body, e::base_id))
        .first(conn)
        .unwrap()
}

/// The run's `system://` texts as a client reads them (`getEntries`), oldest first.
fn read_back(conn: &mut Db, run: RunRef, body_filter: Option<&str>) -> Vec<(String, String)> {
    let filter = EntryFilter {
        scheme: Some("system".into()),
        body_filter: body_filter.map(str::to_owned),
        ..EntryFilter::default()
    };
    entries::list(conn, run.run_id, &filter, 1_000, 0)
        .unwrap()
        .into_iter()
        .map(|r| (r.path, r.body))
        .collect()
}

/// Turn after turn the context grows: each text is stored as a delta from the last keyframe
/// until what differs passes an eighth of it, then whole again — and every text reads back
/// exactly as written, a body search seeing the whole text, a fork copying it.
#[test]
fn every_audit_text_reads_back_exactly_as_written() {
    let mut conn = db();
    crate::hedberg_sql::register(&mut conn).unwrap();
    let p = project(&mut conn, "p");
    let r = run(&mut conn, p.id, "a");
    let scope = format!("run:{}", r.run_id.0);
    let texts: Vec<String> = (1..=30)
        .map(|turn| {
            format!(
                "<system>You are rummy.</system>\n{}<turn>{turn}</turn>",
                context(40 + turn)
            )
        })
        .collect();
    for (i, text) in texts.iter().enumerate() {
        audit(&mut conn, r, "system", i32::try_from(i).unwrap() + 1, text);
    }
    let expected: Vec<(String, String)> = texts
        .iter()
        .enumerate()
        .map(|(i, t)| (format!("system://{}", i + 1), t.clone()))
        .collect();
    assert_eq!(read_back(&mut conn, r, None), expected);

    let kinds: Vec<bool> = (1..=30)
        .map(|turn| {
            raw(&mut conn, &format!("system://{turn}"), &scope)
                .1
                .is_none()
        })
        .collect();
    let keyframes: Vec<usize> = kinds
        .iter()
        .enumerate()
        .filter(|(_, whole)| **whole)
        .map(|(i, _)| i + 1)
        .collect();
    assert_eq!(keyframes, vec![1, 7, 14, 22]);
    let (stored, base) = raw(&mut conn, "system://2", &scope);
    assert_eq!(
        (stored.as_str(), base.is_some()),
        (
            "entry path=\"known://fact_41\">café № 41 — 🦀 noted</entry>\n<turn>2",
            true
        )
    );

    let found = read_back(&mut conn, r, Some("You are rummy"));
    assert_eq!(found.len(), 30);

    let child = run(&mut conn, p.id, "fork");
    entries::fork(&mut conn, r, child, NOW).unwrap();
    assert_eq!(read_back(&mut conn, child, None), expected);
    let child_scope = format!("run:{}", child.run_id.0);
    let (_, child_base) = raw(&mut conn, "system://2", &child_scope);
    let child_keyframe: i32 = e::table
        .filter(e::scope.eq(&child_scope))
        .filter(e::path.eq("system://1"))
        .select(e::id)
        .first(&mut conn)
        .unwrap();
    assert_eq!(child_base, Some(child_keyframe));
}

proptest::proptest! {
    /// Whatever the two texts — any characters, any edit, at any place — a delta, when there is
    /// one, rebuilds the text exactly.
    #[test]
    fn a_delta_always_rebuilds_its_text(
        head in "[a-zé🦀<>\n]{0,200}",
        old_middle in "[a-zé🦀<>\n]{0,40}",
        new_middle in "[a-zé🦀<>\n]{0,40}",
        tail in "[a-zé🦀<>\n]{0,200}",
        padding in 2_048usize..2_200,
    ) {
        let pad = "x".repeat(padding);
        let keyframe = format!("{pad}{head}{old_middle}{tail}");
        let text = format!("{pad}{head}{new_middle}{tail}");
        if let Some(d) = delta(3, &keyframe, &text) {
            proptest::prop_assert_eq!(rebuild(&keyframe, &d), text);
        }
    }
}
