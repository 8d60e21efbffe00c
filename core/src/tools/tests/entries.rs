//! `rm`, `cp` and `mv` on scheme entries: done at once, with previews, globs, refusals and in-place visibility changes.

use super::{fixture, seen, Seen};
use pretty_assertions::assert_eq;
use rummy_store::entry::State::{Failed, Resolved};
use rummy_store::entry::{Visibility, Writer};
use serde_json::json;

const PORT: &str = "The server listens on 3000.";

fn denied(scheme: &str, allowed: &str) -> String {
    format!("permission denied: writer \"model\" may not write scheme \"{scheme}\" (allowed: {allowed})")
}

/// Each command on a fresh run: its result, and which of the watched entries exist afterwards.
#[test]
fn rm_cp_mv_results() {
    let watched = [
        "known://port",
        "known://port_copy",
        "known://net/port",
        "known://auth/flow",
        "known://util",
        "prompt://1",
    ];
    let all =
        |except: &[&str]| -> Vec<bool> { watched.iter().map(|p| !except.contains(p)).collect() };
    let cases: Vec<(&str, Seen, Vec<bool>)> = vec![
        (
            r#"<rm path="known://port"/>"#,
            seen("rm://turn_1/known%3A%2F%2Fport", Resolved, None, "known://port"),
            all(&["known://port", "known://port_copy", "known://net/port", "known://util"]),
        ),
        (
            "<rm>known://auth/flow</rm>",
            seen("rm://turn_1/known%3A%2F%2Fauth%2Fflow", Resolved, None, "known://auth/flow"),
            all(&["known://auth/flow", "known://port_copy", "known://net/port", "known://util"]),
        ),
        (
            r#"<rm path="known://*" preview/>"#,
            seen(
                "rm://turn_1/known%3A%2F%2F*",
                Resolved,
                None,
                "PREVIEW rm path=\"known://*\": 2 matched\nknown://port\nknown://auth/flow",
            ),
            all(&["known://port_copy", "known://net/port", "known://util"]),
        ),
        (
            r#"<rm path="known://*">OAuth</rm>"#,
            seen("rm://turn_1/known%3A%2F%2F*", Resolved, None, "known://auth/flow"),
            all(&["known://auth/flow", "known://port_copy", "known://net/port", "known://util"]),
        ),
        (
            r#"<rm path="known://nope"/>"#,
            seen("rm://turn_1/known%3A%2F%2Fnope", Failed, Some("not_found"), "known://nope not found"),
            all(&["known://port_copy", "known://net/port", "known://util"]),
        ),
        (
            r#"<rm path="prompt://*"/>"#,
            seen("rm://turn_1/prompt%3A%2F%2F*", Failed, Some("permission"), &denied("prompt", "system, plugin")),
            all(&["known://port_copy", "known://net/port", "known://util"]),
        ),
        (
            "<rm/>",
            seen("rm://turn_1", Failed, Some("validation"), "path is required"),
            all(&["known://port_copy", "known://net/port", "known://util"]),
        ),
        (
            "<cp path=\"known://port\">known://port_copy</cp>",
            seen("cp://turn_1/known%3A%2F%2Fport", Resolved, None, "known://port copied to known://port_copy (14 tokens)"),
            all(&["known://net/port", "known://util"]),
        ),
        (
            r#"<cp path="known://port" to="known://auth/flow"/>"#,
            seen(
                "cp://turn_1/known%3A%2F%2Fport",
                Resolved,
                None,
                "known://port copied to known://auth/flow (14 tokens)\nOverwrote existing entry at known://auth/flow",
            ),
            all(&["known://port_copy", "known://net/port", "known://util"]),
        ),
        (
            "<cp path=\"src/util.js\">known://util</cp>",
            seen("cp://turn_1/src%2Futil.js", Resolved, None, "src/util.js copied to known://util (14 tokens)"),
            all(&["known://port_copy", "known://net/port"]),
        ),
        (
            "<cp path=\"prompt://1\">known://port_copy</cp>",
            seen("cp://turn_1/prompt%3A%2F%2F1", Resolved, None, "prompt://1 copied to known://port_copy (5 tokens)"),
            all(&["known://net/port", "known://util"]),
        ),
        (
            "<mv path=\"known://port\">known://net/port</mv>",
            seen("mv://turn_1/known%3A%2F%2Fport", Resolved, None, "known://port moved to known://net/port (14 tokens)"),
            all(&["known://port", "known://port_copy", "known://util"]),
        ),
        (
            "<mv path=\"prompt://1\">known://port_copy</mv>",
            seen("mv://turn_1/prompt%3A%2F%2F1", Failed, Some("permission"), &denied("prompt", "system, plugin")),
            all(&["known://port_copy", "known://net/port", "known://util"]),
        ),
        (
            "<cp path=\"known://port\">prompt://2</cp>",
            seen("cp://turn_1/known%3A%2F%2Fport", Failed, Some("permission"), &denied("prompt", "system, plugin")),
            all(&["known://port_copy", "known://net/port", "known://util"]),
        ),
        (
            "<cp path=\"known://nope\">known://x</cp>",
            seen("cp://turn_1/known%3A%2F%2Fnope", Failed, Some("not_found"), "known://nope not found"),
            all(&["known://port_copy", "known://net/port", "known://util"]),
        ),
        (
            r#"<cp path="known://port"/>"#,
            seen(
                "cp://turn_1/known%3A%2F%2Fport",
                Failed,
                Some("validation"),
                "a destination is required: to=\"…\" or the body (or visibility=/summary= to change the source in place)",
            ),
            all(&["known://port_copy", "known://net/port", "known://util"]),
        ),
        (
            "<cp path=\"known://port\">known://port</cp>",
            seen("cp://turn_1/known%3A%2F%2Fport", Failed, Some("validation"), "source and destination are the same path"),
            all(&["known://port_copy", "known://net/port", "known://util"]),
        ),
        (
            "<mv path=\"src/app.js\">known://app</mv>",
            seen(
                "mv://turn_1/src%2Fapp.js",
                Failed,
                Some("validation"),
                "mv cannot move a project file into an entry; cp it, then rm the file",
            ),
            all(&["known://port_copy", "known://net/port", "known://util"]),
        ),
        (
            "<cp>known://x</cp>",
            seen("cp://turn_1", Failed, Some("validation"), "path (the source) is required"),
            all(&["known://port_copy", "known://net/port", "known://util"]),
        ),
    ];
    let mut got = Vec::new();
    let mut want = Vec::new();
    for (reply, expected, exist) in cases {
        let mut f = fixture();
        let result = f.one(reply);
        let now: Vec<bool> = watched.iter().map(|p| f.entry(p).is_some()).collect();
        got.push((reply, result, now));
        want.push((reply, expected, exist));
    }
    assert_eq!(got, want);
}

/// A copy keeps the source's attributes and takes the requested visibility; a move removes the source.
#[test]
fn copies_keep_attributes() {
    let mut f = fixture();
    f.one(r#"<cp path="known://port" to="known://port_copy" visibility="summarized"/>"#);
    let copy = f.entry("known://port_copy").unwrap();
    assert_eq!(
        (copy.body.as_str(), copy.attributes(), copy.visibility),
        (PORT, json!({"summary": "port"}), Visibility::Summarized)
    );
}

/// A glob source copies or moves every match, keeping what follows the glob's literal prefix.
#[test]
fn glob_batches() {
    let mut f = fixture();
    f.put(
        "known://plan_a",
        "A",
        Writer::Model,
        Visibility::Visible,
        json!({}),
    );
    f.put(
        "known://plan_b/c",
        "B",
        Writer::Model,
        Visibility::Visible,
        json!({}),
    );
    let (result, attributes) =
        f.attributes("<cp path=\"known://plan_*\">known://archive/plan_</cp>");
    assert_eq!(
        result,
        seen(
            "cp://turn_1/known%3A%2F%2Fplan_*",
            Resolved,
            None,
            "known://plan_a → known://archive/plan_a\nknown://plan_b/c → known://archive/plan_b/c",
        )
    );
    assert_eq!(
        attributes,
        json!({"path": "known://plan_*", "from": "known://plan_*", "to": "known://archive/plan_",
               "paths": ["known://archive/plan_a", "known://archive/plan_b/c"]})
    );
    f.one("<mv path=\"known://archive/*\">known://old/</mv>");
    let exists: Vec<bool> = [
        "known://plan_a",
        "known://archive/plan_a",
        "known://old/plan_a",
        "known://old/plan_b/c",
    ]
    .iter()
    .map(|p| f.entry(p).is_some())
    .collect();
    assert_eq!(exists, vec![true, false, true, true]);
    let refused = [
        fixture().one("<cp path=\"src/*.js\">backup/</cp>"),
        fixture().one("<cp path=\"/(port)/\">known://x</cp>"),
        fixture().one("<cp path=\"known://zz*\">known://x</cp>"),
    ];
    let reasons: Vec<(Option<String>, String)> =
        refused.into_iter().map(|s| (s.outcome, s.body)).collect();
    assert_eq!(
        reasons,
        vec![
            (
                Some("validation".into()),
                "a glob source copies into entries only; copy into project files one file at a time".into()
            ),
            (Some("validation".into()), "the source must be one path or a glob".into()),
            (Some("not_found".into()), "known://zz* not found".into()),
        ]
    );
}

/// Without a destination, mv changes visibility in place (a batch demotion by glob).
#[test]
fn mv_changes_visibility_in_place() {
    let mut f = fixture();
    let result = f.one(r#"<mv path="known://*" visibility="summarized"/>"#);
    assert_eq!(
        result,
        seen(
            "mv://turn_1/known%3A%2F%2F*",
            Resolved,
            None,
            "known://port → summarized\nknown://auth/flow → summarized",
        )
    );
    assert_eq!(
        f.entry("known://port").unwrap().visibility,
        Visibility::Summarized
    );
}
