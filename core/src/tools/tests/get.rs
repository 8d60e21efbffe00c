//! `get`: promotion by path and pattern, body filters, slices that do not promote, preview, visibility, refusals.

use super::{fixture, seen, Seen};
use pretty_assertions::assert_eq;
use rummy_store::entry::State::{Failed, Resolved};
use rummy_store::entry::Visibility;

/// Each `get` form gives its own result, each on a fresh run.
#[test]
fn results_of_every_form() {
    let cases: Vec<(&str, Seen)> = vec![
        (
            r#"<get path="src/app.js"/>"#,
            seen("get://turn_1/src%2Fapp.js", Resolved, None, "src/app.js promoted (33 tokens)"),
        ),
        (
            "<get>src/util.js</get>",
            seen("get://turn_1/src%2Futil.js", Resolved, None, "src/util.js promoted (14 tokens)"),
        ),
        (
            r#"<get path="src/missing.js"/>"#,
            seen("get://turn_1/src%2Fmissing.js", Resolved, None, "src/missing.js not found"),
        ),
        (
            r#"<get path="known://*">OAuth</get>"#,
            seen(
                "get://turn_1/known%3A%2F%2F*",
                Resolved,
                None,
                "get path=\"known://*\" body=\"OAuth\": 1 matched (9 tokens)\nknown://auth/flow (9)",
            ),
        ),
        (
            r#"<get path="known://*" body="OAuth"/>"#,
            seen(
                "get://turn_1/known%3A%2F%2F*",
                Resolved,
                None,
                "get path=\"known://*\" body=\"OAuth\": 1 matched (9 tokens)\nknown://auth/flow (9)",
            ),
        ),
        (
            r#"<get path="/\.js$/"/>"#,
            seen(
                "get://turn_1/%2F%5C.js%24%2F",
                Resolved,
                None,
                "get path=\"/\\.js$/\": 2 matched (47 tokens)\nsrc/app.js (33)\nsrc/util.js (14)",
            ),
        ),
        (
            r#"<get path="src/*.js" preview/>"#,
            seen(
                "get://turn_1/src%2F*.js",
                Resolved,
                None,
                "PREVIEW get path=\"src/*.js\": 2 matched (47 tokens)\nsrc/app.js (33)\nsrc/util.js (14)",
            ),
        ),
        (
            r#"<get path="src/app.js" line="2" limit="1"/>"#,
            seen(
                "get://turn_1/src%2Fapp.js",
                Resolved,
                None,
                "[lines 2–2 / 3 total]\nconst host = \"localhost\";",
            ),
        ),
        (
            r#"<get path="src/app.js" line="-2"/>"#,
            seen(
                "get://turn_1/src%2Fapp.js",
                Resolved,
                None,
                "[lines 2–3 / 3 total]\nconst host = \"localhost\";\nlisten(port, host);",
            ),
        ),
        (
            r#"<get path="src/app.js" limit="1"/>"#,
            seen("get://turn_1/src%2Fapp.js", Resolved, None, "[lines 1–1 / 3 total]\nconst port = 3000;"),
        ),
        (
            r#"<get path="src/app.js" line="9"/>"#,
            seen("get://turn_1/src%2Fapp.js", Resolved, None, "[line 9 is past the end / 3 total]"),
        ),
        (
            r#"<get path="src/gone.js" line="1"/>"#,
            seen("get://turn_1/src%2Fgone.js", Resolved, None, "src/gone.js not found"),
        ),
        (
            r#"<get path="src/*.js" line="1"/>"#,
            seen(
                "get://turn_1/src%2F*.js",
                Failed,
                Some("validation"),
                "line/limit requires a single path, not a pattern or body filter",
            ),
        ),
        (
            r#"<get path="src/app.js" line="1">port</get>"#,
            seen(
                "get://turn_1/src%2Fapp.js",
                Failed,
                Some("validation"),
                "line/limit requires a single path, not a pattern or body filter",
            ),
        ),
        (
            r#"<get path="src/app.js" line="two"/>"#,
            seen(
                "get://turn_1/src%2Fapp.js",
                Failed,
                Some("validation"),
                "line must be a whole number (negative counts from the end)",
            ),
        ),
        (
            r#"<get path="src/app.js" limit="0"/>"#,
            seen("get://turn_1/src%2Fapp.js", Failed, Some("validation"), "limit must be a whole number of at least 1"),
        ),
        (
            "<get/>",
            seen("get://turn_1", Failed, Some("validation"), "path is required"),
        ),
        (
            r#"<get path="known://port" visibility="summarized"/>"#,
            seen("get://turn_1/known%3A%2F%2Fport", Resolved, None, "known://port set to summarized (14 tokens)"),
        ),
        (
            r#"<get path="known://port" visibility="hidden"/>"#,
            seen(
                "get://turn_1/known%3A%2F%2Fport",
                Failed,
                Some("validation"),
                "visibility must be visible, summarized or archived",
            ),
        ),
        (
            r#"<get path="../etc/passwd"/>"#,
            seen(
                "get://turn_1/..%2Fetc%2Fpasswd",
                Failed,
                Some("validation"),
                "path escapes the project root: ../etc/passwd",
            ),
        ),
        (
            r#"<get path="system://1"/>"#,
            seen("get://turn_1/system%3A%2F%2F1", Resolved, None, "system://1 not found"),
        ),
    ];
    let mut got = Vec::new();
    let mut want = Vec::new();
    for (reply, expected) in cases {
        let mut f = fixture();
        got.push((reply, f.one(reply)));
        want.push((reply, expected));
    }
    assert_eq!(got, want);
}

/// Promotion makes every match visible and dates it to this turn; slices and previews promote nothing.
#[test]
fn promotion_and_what_does_not_promote() {
    let mut f = fixture();
    f.reply(r#"<get path="src/app.js" line="1"/><get path="src/*.js" preview/>"#);
    let state = |f: &mut super::Fixture, p: &str| {
        let row = f.entry(p).unwrap();
        (row.visibility, row.turn)
    };
    assert_eq!(state(&mut f, "src/app.js"), (Visibility::Summarized, 0));
    f.reply(r#"<get path="src/*.js"/>"#);
    assert_eq!(state(&mut f, "src/app.js"), (Visibility::Visible, 1));
    assert_eq!(state(&mut f, "src/util.js"), (Visibility::Visible, 1));
    assert_eq!(
        state(&mut f, "known://auth/flow"),
        (Visibility::Summarized, 0)
    );
}

/// The model may promote entries it may not write (its prompt), but not demote them.
#[test]
fn promotion_reads_any_visible_scheme() {
    let mut f = fixture();
    f.put(
        "prompt://1",
        "What port?",
        rummy_store::entry::Writer::Plugin,
        Visibility::Summarized,
        serde_json::json!({}),
    );
    let promoted = f.one(r#"<get path="prompt://1"/>"#);
    assert_eq!(promoted.body, "prompt://1 promoted (5 tokens)");
    assert_eq!(
        f.entry("prompt://1").unwrap().visibility,
        Visibility::Visible
    );
    let demoted = f.one(r#"<get path="prompt://1" visibility="summarized"/>"#);
    assert_eq!(
        (demoted.state, demoted.outcome.as_deref()),
        (Failed, Some("permission"))
    );
    assert_eq!(
        demoted.body,
        "permission denied: writer \"model\" may not write scheme \"prompt\" (allowed: system, plugin)"
    );
}
