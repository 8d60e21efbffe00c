//! `set` beyond one entry: the size gate on every known:// write path, body-less visibility and summary changes, and pattern edits.

use super::{fixture, seen, Fixture, Seen};
use pretty_assertions::assert_eq;
use rummy_store::entry::State::{Failed, Resolved};
use rummy_store::entry::{Visibility, Writer};
use rummy_text::hedberg::unified_diff;
use serde_json::json;

const PORT: &str = "The server listens on 3000.";

/// Every way of writing a known:// entry is refused over the size limit (50 tokens here); other schemes are not gated.
#[test]
fn size_gate_on_every_known_write() {
    let big = "x".repeat(101);
    let message = |path: &str| {
        format!("{path} too large (51 tokens, max 50). Split it into several known:// entries, one topic each, linked by path.")
    };
    let cases: Vec<(String, Seen)> = vec![
        (
            format!("<set path=\"known://new\">{big}</set>"),
            seen(
                "set://turn_1/known%3A%2F%2Fnew",
                Failed,
                Some("overflow:51"),
                &message("known://new"),
            ),
        ),
        (
            format!("<set path=\"known://port\" search=\"{PORT}\" replace=\"{big}\"/>"),
            seen(
                "set://turn_1/known%3A%2F%2Fport",
                Failed,
                Some("overflow:51"),
                &message("known://port"),
            ),
        ),
        (
            format!("<set path=\"known://note*\" search=\"x\" replace=\"{big}\"/>"),
            seen(
                "set://turn_1/known%3A%2F%2Fnote*",
                Failed,
                Some("overflow:51"),
                &message("known://note1"),
            ),
        ),
        (
            "<cp path=\"big.txt\">known://big</cp>".into(),
            seen(
                "cp://turn_1/big.txt",
                Failed,
                Some("overflow:51"),
                &message("known://big"),
            ),
        ),
        (
            "<mv path=\"unknown://big\">known://big</mv>".into(),
            seen(
                "mv://turn_1/unknown%3A%2F%2Fbig",
                Failed,
                Some("overflow:51"),
                &message("known://big"),
            ),
        ),
        (
            format!("<set path=\"unknown://new\">{big}</set>"),
            seen(
                "set://turn_1/unknown%3A%2F%2Fnew",
                Resolved,
                None,
                &unified_diff("unknown://new", "", &big),
            ),
        ),
    ];
    let mut got = Vec::new();
    let mut want = Vec::new();
    for (reply, expected) in cases {
        let mut f = gate_fixture(&big);
        got.push((
            reply.clone(),
            f.one(&reply),
            f.entry("known://big").is_some(),
            f.body("known://port"),
            f.body("unknown://big"),
        ));
        want.push((reply, expected, false, PORT.to_owned(), big.clone()));
    }
    assert_eq!(got, want);
}

/// Entries for the size gate: a big file and a big unknown to copy or move, two small notes.
fn gate_fixture(big: &str) -> Fixture {
    let mut f = fixture();
    f.put(
        "big.txt",
        big,
        Writer::System,
        Visibility::Summarized,
        json!({}),
    );
    f.put(
        "unknown://big",
        big,
        Writer::Model,
        Visibility::Visible,
        json!({}),
    );
    f.put(
        "known://note1",
        "x",
        Writer::Model,
        Visibility::Visible,
        json!({}),
    );
    f.put(
        "known://note2",
        "x",
        Writer::Model,
        Visibility::Visible,
        json!({}),
    );
    f
}

/// A reply, what it records, and the visibility of entries afterwards.
type ViewCase = (&'static str, Seen, Vec<(&'static str, Visibility)>);

/// Body-less changes set visibility and summary of everything a path selects.
#[test]
fn visibility_and_summary_changes() {
    let cases: Vec<ViewCase> = vec![
        (
            r#"<set path="known://*" visibility="summarized"/>"#,
            seen(
                "set://turn_1/known%3A%2F%2F*",
                Resolved,
                None,
                "known://port → summarized\nknown://auth/flow → summarized",
            ),
            vec![("known://port", Visibility::Summarized), ("known://auth/flow", Visibility::Summarized)],
        ),
        (
            r#"<set path="unknown://host" fidelity="archived"/>"#,
            seen("set://turn_1/unknown%3A%2F%2Fhost", Resolved, None, "unknown://host → archived"),
            vec![("unknown://host", Visibility::Archived)],
        ),
        (
            r#"<set path="src/app.js" visibility="visible" summary="entry point"/>"#,
            seen(
                "set://turn_1/src%2Fapp.js",
                Resolved,
                None,
                "src/app.js → visible, summary \"entry point\"",
            ),
            vec![("src/app.js", Visibility::Visible)],
        ),
        (
            r#"<set path="known://none" visibility="archived"/>"#,
            seen("set://turn_1/known%3A%2F%2Fnone", Failed, Some("not_found"), "known://none not found"),
            vec![],
        ),
        (
            r#"<set path="known://port"/>"#,
            seen(
                "set://turn_1/known%3A%2F%2Fport",
                Failed,
                Some("validation"),
                "nothing to set: send content, an edit, or visibility=/summary= to change",
            ),
            vec![("known://port", Visibility::Visible)],
        ),
        (
            r#"<set path="prompt://1" visibility="summarized"/>"#,
            seen(
                "set://turn_1/prompt%3A%2F%2F1",
                Failed,
                Some("permission"),
                "permission denied: writer \"model\" may not write scheme \"prompt\" (allowed: system, plugin)",
            ),
            vec![("prompt://1", Visibility::Visible)],
        ),
    ];
    let mut got = Vec::new();
    let mut want = Vec::new();
    for (reply, expected, after) in cases {
        let mut f = fixture();
        let result = f.one(reply);
        let visibilities: Vec<(&str, Visibility)> = after
            .iter()
            .map(|(p, _)| (*p, f.entry(p).unwrap().visibility))
            .collect();
        got.push((reply, result, visibilities));
        want.push((reply, expected, after));
    }
    assert_eq!(got, want);
    let mut f = fixture();
    f.one(r#"<set path="known://port" summary="port,server"/>"#);
    assert_eq!(
        f.entry("known://port").unwrap().attributes(),
        json!({"summary": "port,server"})
    );
}

/// A pattern edit changes each scheme entry it matches; one match is edited as if named; files and whole contents are refused.
#[test]
fn pattern_edits() {
    let mut f = fixture();
    f.put(
        "known://note1",
        "alpha x",
        Writer::Model,
        Visibility::Summarized,
        json!({}),
    );
    f.put(
        "known://note2",
        "beta x",
        Writer::Model,
        Visibility::Visible,
        json!({}),
    );
    f.put(
        "known://note3",
        "gamma",
        Writer::Model,
        Visibility::Visible,
        json!({}),
    );
    let (result, attributes) =
        f.attributes(r#"<set path="known://note*" search="x" replace="y"/>"#);
    let no_match = "Could not find the SEARCH text in the entry. SEARCH text is matched literally, not as a pattern: copy the lines exactly as they are, with a few unchanged lines around them.";
    let body = format!(
        "# set known://note1 4→4 tokens\n{}\n# set known://note2 3→3 tokens\n{}\nUnchanged:\nknown://note3: Block 1 of 1 (SEARCH starting `x`): {no_match}",
        unified_diff("known://note1", "alpha x", "alpha y").trim_end(),
        unified_diff("known://note2", "beta x", "beta y").trim_end(),
    );
    assert_eq!(
        result,
        seen("set://turn_1/known%3A%2F%2Fnote*", Resolved, None, &body)
    );
    assert_eq!(
        attributes,
        json!({"path": "known://note*", "paths": ["known://note1", "known://note2"]})
    );
    assert_eq!(
        (
            f.body("known://note1"),
            f.body("known://note2"),
            f.body("known://note3")
        ),
        (
            "alpha y".to_owned(),
            "beta y".to_owned(),
            "gamma".to_owned()
        )
    );
    let single = f.one(r#"<set path="known://*3" search="gamma" replace="delta"/>"#);
    assert_eq!(single.path, "set://turn_1/known%3A%2F%2Fnote3");
    assert_eq!(f.body("known://note3"), "delta");
    let refused = f.reply(concat!(
        r#"<set path="known://note*">whole</set>"#,
        r#"<set path="src/*.js" search="x" replace="y"/>"#,
        r#"<set path="known://zz*" search="x" replace="y"/>"#,
    ));
    let refused_bodies: Vec<(String, Option<String>)> =
        refused.into_iter().map(|s| (s.body, s.outcome)).collect();
    assert_eq!(
        refused_bodies,
        vec![
            (
                "a pattern selecting several entries takes edit blocks (SEARCH/REPLACE, sed, search=); a whole new content needs one exact path".to_owned(),
                Some("validation".to_owned())
            ),
            ("Aborted — preceding set failed.".to_owned(), Some("aborted".to_owned())),
            ("Aborted — preceding set failed.".to_owned(), Some("aborted".to_owned())),
        ]
    );
    let files = fixture().one(r#"<set path="src/*.js" search="x" replace="y"/>"#);
    assert_eq!(
        (files.outcome.as_deref(), files.body.as_str()),
        (
            Some("validation"),
            "src/*.js matches 2 files; a file edit names one file at a time"
        )
    );
    let none = fixture().one(r#"<set path="known://zz*" search="x" replace="y"/>"#);
    assert_eq!(
        (none.outcome.as_deref(), none.body.as_str()),
        (Some("not_found"), "known://zz* not found")
    );
}
