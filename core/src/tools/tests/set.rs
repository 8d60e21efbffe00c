//! `set` on scheme entries: writes, every edit format, failures, the size gate on every write path, visibility and summary changes, permissions.

use super::{fixture, seen, Fixture, Seen};
use pretty_assertions::assert_eq;
use rummy_store::entry::State::{Failed, Resolved};
use rummy_store::entry::{Visibility, Writer};
use rummy_text::hedberg::{apply, parse_edit, unified_diff, EditAttrs};
use serde_json::json;

const PORT: &str = "The server listens on 3000.";
const PORT_8080: &str = "The server listens on 8080.";

/// A new fact is written at once; its result carries the patch, token counts and warnings.
#[test]
fn writes_a_new_entry() {
    let mut f = fixture();
    let (result, attributes) =
        f.attributes(r#"<set path="known://db" summary="db,host">Postgres on db.internal</set>"#);
    let patch = unified_diff("known://db", "", "Postgres on db.internal");
    assert_eq!(
        result,
        seen("set://turn_1/known%3A%2F%2Fdb", Resolved, None, &patch)
    );
    assert_eq!(
        attributes,
        json!({"path": "known://db", "patch": patch, "beforeTokens": 0, "afterTokens": 12, "warnings": []})
    );
    let row = f.entry("known://db").unwrap();
    assert_eq!(
        (
            row.body.as_str(),
            row.attributes(),
            row.visibility,
            row.turn
        ),
        (
            "Postgres on db.internal",
            json!({"summary": "db,host"}),
            Visibility::Visible,
            1
        )
    );
    assert_eq!(
        f.view(&result.path),
        format!("# set known://db 0→12 tokens\n{patch}")
    );
}

/// The `body=` attribute is content when the tag has none; trailing blank lines of a scheme entry are dropped.
#[test]
fn body_attribute_and_trimming() {
    let mut f = fixture();
    f.reply("<set path=\"known://a\" body=\"OAuth2\"/><set path=\"known://b\">\n\nline one\nline two\n\n</set>");
    assert_eq!(f.body("known://a"), "OAuth2");
    assert_eq!(f.body("known://b"), "line one\nline two");
}

/// Every edit format changes a known entry in place, end to end from the model's reply.
#[test]
fn every_edit_format_edits_a_known_entry() {
    let cases: Vec<(&str, String)> = vec![
        ("attributes", r#"<set path="known://port" search="3000" replace="8080"/>"#.into()),
        ("search + body", r#"<set path="known://port" search="3000">8080</set>"#.into()),
        (
            "merge conflict",
            format!("<set path=\"known://port\"><<<<<<< SEARCH\n{PORT}\n=======\n{PORT_8080}\n>>>>>>> REPLACE</set>"),
        ),
        (
            "replace only",
            format!("<set path=\"known://port\">=======\n{PORT_8080}\n>>>>>>> REPLACE</set>"),
        ),
        (
            "unified diff",
            format!("<set path=\"known://port\">@@ -1 +1 @@\n-{PORT}\n+{PORT_8080}\n</set>"),
        ),
        (
            "claude xml",
            "<set path=\"known://port\"><old_text>3000</old_text><new_text>8080</new_text></set>".into(),
        ),
        (
            "json",
            r#"<set path="known://port">{"search": "3000", "replace": "8080"}</set>"#.into(),
        ),
        ("sed", "<set path=\"known://port\">s/3000/8080/</set>".into()),
        ("full replacement", format!("<set path=\"known://port\">{PORT_8080}</set>")),
    ];
    let mut got = Vec::new();
    for (name, reply) in &cases {
        let mut f = fixture();
        let result = f.one(reply);
        got.push((*name, result.state, result.body, f.body("known://port")));
    }
    let patch = unified_diff("known://port", PORT, PORT_8080);
    let want: Vec<_> = cases
        .iter()
        .map(|(name, _)| (*name, Resolved, patch.clone(), PORT_8080.to_owned()))
        .collect();
    assert_eq!(got, want);
}

/// A sed edit ticks a checklist item, as the set doc teaches.
#[test]
fn sed_ticks_a_checklist() {
    let mut f = fixture();
    f.put(
        "known://plan",
        "- [ ] read config\n- [ ] fix port",
        Writer::Model,
        Visibility::Visible,
        json!({}),
    );
    f.one(r"<set path='known://plan'>s/- \[ \] read config/- [x] read config/</set>");
    assert_eq!(f.body("known://plan"), "- [x] read config\n- [ ] fix port");
}

/// A failing edit changes nothing and reports each block's problem; an edit of a missing entry is not found.
#[test]
fn failing_edits() {
    let mut f = fixture();
    let body = "<<<<<<< SEARCH\nnot there\n=======\nx\n>>>>>>> REPLACE";
    let failed = f.one(&format!("<set path=\"known://port\">{body}</set>"));
    let diagnostics = apply(
        "known://port",
        PORT,
        &parse_edit(body, &EditAttrs::default()),
        2,
    )
    .unwrap_err()
    .to_string();
    assert_eq!(
        failed,
        seen(
            "set://turn_1/known%3A%2F%2Fport",
            Failed,
            Some("conflict"),
            &diagnostics
        )
    );
    assert_eq!(f.body("known://port"), PORT);
    assert_eq!(f.view(&failed.path), diagnostics);
    let missing = f.one(r#"<set path="known://nope" search="a" replace="b"/>"#);
    assert_eq!(
        missing,
        seen(
            "set://turn_1/known%3A%2F%2Fnope",
            Failed,
            Some("not_found"),
            "known://nope not found: an edit needs existing content; send the whole content to create it"
        )
    );
}

/// Schemes the model may not write are refused with the writer and scheme named; unknown schemes are invalid.
#[test]
fn permissions_and_unknown_schemes() {
    let mut f: Fixture = fixture();
    let got = f.reply(concat!(
        r#"<set path="prompt://9">x</set>"#,
        r#"<update status="102">a</update>"#
    ));
    let denied = |scheme: &str, allowed: &str| {
        format!("permission denied: writer \"model\" may not write scheme \"{scheme}\" (allowed: {allowed})")
    };
    assert_eq!(
        got[0],
        seen(
            "set://turn_1/prompt%3A%2F%2F9",
            Failed,
            Some("permission"),
            &denied("prompt", "system, plugin")
        )
    );
    let cases = [
        (
            "skill://style",
            seen(
                "set://turn_1/skill%3A%2F%2Fstyle",
                Failed,
                Some("permission"),
                &denied("skill", "system, plugin"),
            ),
        ),
        (
            "run://r",
            seen(
                "set://turn_1/run%3A%2F%2Fr",
                Failed,
                Some("permission"),
                &denied("run", "system, plugin, client"),
            ),
        ),
        (
            "foo://x",
            seen(
                "set://turn_1/foo%3A%2F%2Fx",
                Failed,
                Some("validation"),
                "unknown scheme \"foo\" in path foo://x",
            ),
        ),
        (
            "https://example.org/a",
            seen(
                "set://turn_1/https%3A%2F%2Fexample.org%2Fa",
                Resolved,
                None,
                &unified_diff("https://example.org/a", "", "x"),
            ),
        ),
    ];
    let got: Vec<Seen> = cases
        .iter()
        .map(|(path, _)| fixture().one(&format!("<set path=\"{path}\">x</set>")))
        .collect();
    let want: Vec<Seen> = cases.into_iter().map(|(_, s)| s).collect();
    assert_eq!(got, want);
}

/// `<set … preview>` shows the diff the set would make and makes nothing: no write to an
/// entry, no proposal for a file, no view change; failures read as the real set's would.
#[test]
fn preview_shows_the_change_without_making_it() {
    let mut f = fixture();
    let entry_patch = unified_diff("known://port", PORT, PORT_8080);
    let entry = f.one(r#"<set path="known://port" search="3000" replace="8080" preview/>"#);
    assert_eq!(
        entry,
        seen(
            "set://turn_1/known%3A%2F%2Fport",
            Resolved,
            None,
            &format!(
                "# PREVIEW set known://port 14→14 tokens\n{}\n{}",
                entry_patch.trim_end(),
                super::super::set::preview::NOTHING_CHANGED
            )
        )
    );
    assert_eq!(f.body("known://port"), PORT);
    let file_patch = unified_diff(
        "src/app.js",
        super::APP,
        &super::APP.replace("3000", "8080"),
    );
    let file = f.one(r#"<set path="src/app.js" search="3000" replace="8080" preview/>"#);
    assert_eq!(
        file,
        seen(
            "set://turn_1/src%2Fapp.js",
            Resolved,
            None,
            &format!(
                "# PREVIEW set src/app.js 33→33 tokens\n{}\n{}",
                file_patch.trim_end(),
                super::super::set::preview::NOTHING_CHANGED
            )
        )
    );
    assert_eq!(f.body("src/app.js"), super::APP);
    let views = f.one(r#"<set path="known://*" visibility="archived" preview/>"#);
    assert_eq!(
        views.body,
        format!(
            "PREVIEW set path=\"known://*\": 2 matched\nknown://port\nknown://auth/flow\n{}",
            super::super::set::preview::NOTHING_CHANGED
        )
    );
    assert_eq!(
        f.entry("known://port").map(|r| r.visibility),
        Some(Visibility::Visible)
    );
    let conflict = f.one(r#"<set path="known://port" search="9999" replace="1" preview/>"#);
    assert_eq!(
        (conflict.state, conflict.outcome.as_deref()),
        (Failed, Some("conflict"))
    );
    let big = "word ".repeat(40);
    let overflow = f.one(&format!(r#"<set path="known://big" preview>{big}</set>"#));
    assert_eq!(
        (overflow.state, overflow.outcome.as_deref()),
        (Failed, Some("overflow:100"))
    );
    assert_eq!(f.entry("known://big"), None);
}
