//! Proposals: each kind's result entry and attributes exactly, file edits through every edit format, and what is not a proposal.

use super::{fixture, seen, APP, UTIL};
use pretty_assertions::assert_eq;
use rummy_store::entries::hex_sha256;
use rummy_store::entry::State::{Failed, Proposed, Resolved};
use rummy_store::entry::{Visibility, Writer};
use rummy_text::hedberg::{apply, parse_edit, unified_diff, EditAttrs};
use serde_json::{json, Value};

const APP_8080: &str = "const port = 8080;\nconst host = \"localhost\";\nlisten(port, host);\n";

/// Every proposal kind, with its path, body and complete attributes; nothing leaves the store at dispatch.
#[test]
fn each_kind_exactly() {
    let app_patch = unified_diff("src/app.js", APP, APP_8080);
    let new_patch = unified_diff("src/new.js", "", "export {};\n");
    let app = hex_sha256(APP);
    let util = hex_sha256(UTIL);
    let cases: Vec<(&str, &str, &str, Value)> = vec![
        (
            r#"<set path="src/app.js" search="port = 3000" replace="port = 8080"/>"#,
            "set://turn_1/src%2Fapp.js",
            &app_patch,
            json!({"kind": "edit", "path": "src/app.js", "content": APP_8080, "patch": app_patch,
                   "beforeTokens": 33, "afterTokens": 33, "created": false, "warnings": [], "commandIndex": 0,
                   "bases": {"src/app.js": app}}),
        ),
        (
            "<set path=\"src/new.js\">export {};\n</set>",
            "set://turn_1/src%2Fnew.js",
            &new_patch,
            json!({"kind": "edit", "path": "src/new.js", "content": "export {};\n", "patch": new_patch,
                   "beforeTokens": 0, "afterTokens": 6, "created": true, "warnings": [], "commandIndex": 0,
                   "bases": {"src/new.js": null}}),
        ),
        (
            r#"<rm path="src/*.js"/>"#,
            "rm://turn_1/src%2F*.js",
            "src/app.js\nsrc/util.js",
            json!({"kind": "rm", "path": "src/*.js", "paths": ["src/app.js", "src/util.js"], "commandIndex": 0,
                   "bases": {"src/app.js": app, "src/util.js": util}}),
        ),
        (
            r#"<rm path="/(app)/"/>"#,
            "rm://turn_1/%2F(app)%2F",
            "src/app.js\nremoved at once:\nknown://app",
            json!({"kind": "rm", "path": "/(app)/", "paths": ["src/app.js"], "commandIndex": 0,
                   "bases": {"src/app.js": app}}),
        ),
        (
            "<cp path=\"known://port\">src/port.txt</cp>",
            "cp://turn_1/known%3A%2F%2Fport",
            "known://port → src/port.txt (14 tokens)",
            json!({"kind": "cp", "path": "known://port", "from": "known://port", "to": "src/port.txt",
                   "content": "The server listens on 3000.", "commandIndex": 0,
                   "bases": {"src/port.txt": null}}),
        ),
        (
            "<mv path=\"known://port\">src/port.txt</mv>",
            "mv://turn_1/known%3A%2F%2Fport",
            "known://port → src/port.txt (14 tokens)",
            json!({"kind": "mv", "path": "known://port", "from": "known://port", "to": "src/port.txt",
                   "content": "The server listens on 3000.", "commandIndex": 0,
                   "bases": {"src/port.txt": null}}),
        ),
        (
            r#"<mv path="src/app.js" to="src/main.js"/>"#,
            "mv://turn_1/src%2Fapp.js",
            "src/app.js → src/main.js (33 tokens)",
            json!({"kind": "mv", "path": "src/app.js", "from": "src/app.js", "to": "src/main.js",
                   "content": APP, "commandIndex": 0,
                   "bases": {"src/main.js": null, "src/app.js": app}}),
        ),
        (
            "<sh>npm test</sh>",
            "sh://turn_1/npm%20test",
            "",
            json!({"kind": "sh", "command": "npm test", "summary": "npm test", "runner": "server", "commandIndex": 0}),
        ),
        (
            r#"<env command="git status"/>"#,
            "env://turn_1/git%20status",
            "",
            json!({"kind": "env", "command": "git status", "summary": "git status", "runner": "server", "commandIndex": 0}),
        ),
        (
            r#"<ask_user question="Which DB?">PG; SQLite, v3</ask_user>"#,
            "ask_user://turn_1/Which%20DB%3F",
            "",
            json!({"kind": "ask_user", "question": "Which DB?", "options": ["PG", "SQLite, v3"], "commandIndex": 0}),
        ),
        (
            r#"<ask_user question="Deploy where?" options="staging, production"/>"#,
            "ask_user://turn_1/Deploy%20where%3F",
            "",
            json!({"kind": "ask_user", "question": "Deploy where?", "options": ["staging", "production"], "commandIndex": 0}),
        ),
    ];
    let mut got = Vec::new();
    let mut want = Vec::new();
    for (reply, path, body, attributes) in cases {
        let mut f = fixture();
        f.put(
            "known://app",
            "x",
            Writer::Model,
            Visibility::Visible,
            json!({}),
        );
        let (result, attrs) = f.attributes(reply);
        let files = (
            f.body("src/app.js"),
            f.entry("src/new.js").is_some(),
            f.entry("src/main.js").is_some(),
        );
        got.push((
            reply,
            result,
            attrs,
            files,
            f.entry("known://app").is_some(),
        ));
        let removed_now = reply.contains("(app)");
        want.push((
            reply,
            seen(path, Proposed, None, body),
            attributes,
            (APP.to_owned(), false, false),
            !removed_now,
        ));
    }
    assert_eq!(got, want);
}

/// A proposal stores the position of its command in the turn, to resume after it.
#[test]
fn command_index_is_stored() {
    let mut f = fixture();
    let results = f.reply(r#"<get path="src/app.js"/><sh>make</sh>"#);
    let attributes = f.entry(&results[1].path).unwrap().attributes();
    assert_eq!(attributes["commandIndex"], json!(1));
}

/// A file edit in every format becomes an edit proposal with the complete new content; the file is untouched.
#[test]
fn every_edit_format_proposes_a_file_edit() {
    let cases: Vec<(&str, String)> = vec![
        ("attributes", r#"<set path="src/app.js" search="const port = 3000;" replace="const port = 8080;"/>"#.into()),
        ("search + body", r#"<set path="src/app.js" search="3000">8080</set>"#.into()),
        (
            "merge conflict",
            "<set path=\"src/app.js\"><<<<<<< SEARCH\nconst port = 3000;\n=======\nconst port = 8080;\n>>>>>>> REPLACE</set>".into(),
        ),
        (
            "replace only",
            format!("<set path=\"src/app.js\">=======\n{APP_8080}\n>>>>>>> REPLACE</set>"),
        ),
        (
            "unified diff",
            "<set path=\"src/app.js\">@@ -1,3 +1,3 @@\n-const port = 3000;\n+const port = 8080;\n const host = \"localhost\";\n listen(port, host);\n</set>".into(),
        ),
        (
            "claude xml",
            "<set path=\"src/app.js\"><old_text>const port = 3000;</old_text><new_text>const port = 8080;</new_text></set>".into(),
        ),
        (
            "json",
            r#"<set path="src/app.js">{"search": "port = 3000", "replace": "port = 8080"}</set>"#.into(),
        ),
        ("sed", "<set path=\"src/app.js\">s/3000/8080/g</set>".into()),
        ("full replacement", format!("<set path=\"src/app.js\">{APP_8080}</set>")),
    ];
    let mut got = Vec::new();
    for (name, reply) in &cases {
        let mut f = fixture();
        let (result, attributes) = f.attributes(reply);
        got.push((
            *name,
            result.state,
            attributes["content"].clone(),
            f.body("src/app.js"),
        ));
    }
    let want: Vec<_> = cases
        .iter()
        .map(|(name, _)| (*name, Proposed, json!(APP_8080), APP.to_owned()))
        .collect();
    assert_eq!(got, want);
}

/// A failing file edit is no proposal but a conflict; an unchanged file is resolved; an edit of a missing file is not found.
#[test]
fn what_is_not_a_proposal() {
    let mut f = fixture();
    let body = "<<<<<<< SEARCH\nconst port = 4000;\n=======\nx\n>>>>>>> REPLACE";
    let diagnostics = apply(
        "src/app.js",
        APP,
        &parse_edit(body, &EditAttrs::default()),
        2,
    )
    .unwrap_err()
    .to_string();
    let results = vec![
        fixture().one(&format!("<set path=\"src/app.js\">{body}</set>")),
        fixture().one(r#"<set path="src/app.js" search="3000" replace="3000"/>"#),
        fixture().one(r#"<set path="src/gone.js" search="a" replace="b"/>"#),
    ];
    assert_eq!(
        results,
        vec![
            seen("set://turn_1/src%2Fapp.js", Failed, Some("conflict"), &diagnostics),
            seen("set://turn_1/src%2Fapp.js", Resolved, None, "No change: the content is already this."),
            seen(
                "set://turn_1/src%2Fgone.js",
                Failed,
                Some("not_found"),
                "src/gone.js not found: an edit needs existing content; send the whole content to create it"
            ),
        ]
    );
    assert_eq!(f.body("src/app.js"), APP);
    let proposal = f.one(r#"<set path="src/app.js" search="3000" replace="8080"/>"#);
    let patch = unified_diff("src/app.js", APP, APP_8080);
    assert_eq!(
        f.view(&proposal.path),
        format!("# set src/app.js 33→33 tokens\n{patch}")
    );
}

/// A file edit sees the project's content even when this run has no view of the file yet.
#[test]
fn edits_files_this_run_does_not_see() {
    let mut f = fixture();
    let scope = rummy_store::entry::Scope::Project(f.ctx.t.run.project_id).key();
    {
        use diesel::prelude::*;
        use rummy_store::schema::entries as e;
        diesel::insert_into(e::table)
            .values((
                e::scope.eq(scope),
                e::path.eq("docs/hidden.md"),
                e::body.eq("old\n"),
                e::hash.eq(""),
                e::tokens.eq(2),
                e::created_at.eq(0),
                e::updated_at.eq(0),
            ))
            .execute(&mut f.conn)
            .unwrap();
    }
    let (_, attributes) = f.attributes("<set path=\"docs/hidden.md\">s/old/new/</set>");
    assert_eq!(
        (attributes["content"].clone(), attributes["created"].clone()),
        (json!("new\n"), json!(false))
    );
}
