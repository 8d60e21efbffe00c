//! Replies the original server met, at the raw attribute and body level.

use pretty_assertions::assert_eq;

use super::{call, check, clean, warned};
use crate::parse::{parse_reply, warnings, ParsedReply};

/// Every documented tag form yields its raw attributes and body.
#[test]
fn reference_tag_forms() {
    check(vec![
        clean(
            "1 update with status",
            r#"<update status="200">The answer is 42.</update>"#,
            vec![call("update", &[("status", "200")], "The answer is 42.")],
        ),
        clean(
            "2 set unknown",
            r#"<set path="unknown://session_store">which session store</set>"#,
            vec![call(
                "set",
                &[("path", "unknown://session_store")],
                "which session store",
            )],
        ),
        clean(
            "3 self-closing get and rm",
            "<get path=\"src/config.js\"/>\n<rm path=\"src/old.js\"/>",
            vec![
                call("get", &[("path", "src/config.js")], ""),
                call("rm", &[("path", "src/old.js")], ""),
            ],
        ),
        clean(
            "4 sh and env, attribute or body",
            "<sh command=\"npm test\"/>\n<sh>npm test</sh>\n<env>ls -la src/</env>",
            vec![
                call("sh", &[("command", "npm test")], ""),
                call("sh", &[], "npm test"),
                call("env", &[], "ls -la src/"),
            ],
        ),
        clean(
            "5 ask_user, options as attribute or body",
            "<ask_user question=\"Which DB?\" options=\"PG, SQLite\"/>\n\
             <ask_user question=\"Which DB?\">PG, SQLite, MySQL</ask_user>",
            vec![
                call(
                    "ask_user",
                    &[("question", "Which DB?"), ("options", "PG, SQLite")],
                    "",
                ),
                call(
                    "ask_user",
                    &[("question", "Which DB?")],
                    "PG, SQLite, MySQL",
                ),
            ],
        ),
        clean(
            "9 four commands in order",
            "<get path=\"a.js\"/>\n<set path=\"b.js\">one</set>\n<set path=\"c.js\">two</set>\n\
             <update status=\"102\">working</update>",
            vec![
                call("get", &[("path", "a.js")], ""),
                call("set", &[("path", "b.js")], "one"),
                call("set", &[("path", "c.js")], "two"),
                call("update", &[("status", "102")], "working"),
            ],
        ),
        clean(
            "10 get with body filter attribute",
            r#"<get path="*.js" body="TODO"/>"#,
            vec![call("get", &[("path", "*.js"), ("body", "TODO")], "")],
        ),
        clean(
            "11 bare preview attribute",
            r#"<get path="src/*.js" preview/>"#,
            vec![call("get", &[("path", "src/*.js"), ("preview", "")], "")],
        ),
        clean(
            "12 search and replace attributes",
            r#"<set path="src/*.js" search="localhost" replace="0.0.0.0"/>"#,
            vec![call(
                "set",
                &[
                    ("path", "src/*.js"),
                    ("search", "localhost"),
                    ("replace", "0.0.0.0"),
                ],
                "",
            )],
        ),
        clean(
            "13 search attribute with body",
            "<set path=\"config.js\" search=\"3000\">8080</set>\n\
             <set path=\"config.js\" search=\"old\" replace=\"new\">ignored</set>",
            vec![
                call("set", &[("path", "config.js"), ("search", "3000")], "8080"),
                call(
                    "set",
                    &[("path", "config.js"), ("search", "old"), ("replace", "new")],
                    "ignored",
                ),
            ],
        ),
        clean(
            "14 mv target as attribute or body",
            "<mv path=\"known://env_vars\" to=\".env\"/>\n<mv path=\"src/old.js\">src/new.js</mv>",
            vec![
                call("mv", &[("path", "known://env_vars"), ("to", ".env")], ""),
                call("mv", &[("path", "src/old.js")], "src/new.js"),
            ],
        ),
        clean(
            "15 search query as attribute or body",
            "<search path=\"node.js streams\"/>\n<search>SQLite WAL mode</search>",
            vec![
                call("search", &[("path", "node.js streams")], ""),
                call("search", &[], "SQLite WAL mode"),
            ],
        ),
        clean(
            "16 path as body",
            "<get>src/app.js</get>\n<rm>src/old.js</rm>",
            vec![
                call("get", &[], "src/app.js"),
                call("rm", &[], "src/old.js"),
            ],
        ),
        clean(
            "17 body as attribute",
            r#"<set path="/:known:auth" body="OAuth2"/>"#,
            vec![call(
                "set",
                &[("path", "/:known:auth"), ("body", "OAuth2")],
                "",
            )],
        ),
    ]);
}

/// Unclosed tags and mismatched closes are recovered with a warning.
#[test]
fn reference_recovery() {
    check(vec![
        warned(
            "18 unclosed at end",
            r#"<update status="200">The answer is 42."#,
            vec![call("update", &[("status", "200")], "The answer is 42.")],
            vec![warnings::unclosed_tag("update")],
        ),
        warned(
            "19 open get alone",
            r#"<get path="src/app.js">"#,
            vec![call("get", &[("path", "src/app.js")], "")],
            vec!["Unclosed <get> tag — content captured anyway".to_owned()],
        ),
        warned(
            "19 open get before another tool",
            "<get path=\"src/app.js\">\n<update status=\"102\">reading</update>",
            vec![
                call("get", &[("path", "src/app.js")], ""),
                call("update", &[("status", "102")], "reading"),
            ],
            vec!["Unclosed <get> before <update> — recovered".to_owned()],
        ),
        clean(
            "20 prose around commands",
            "I'll read it.\n<get path=\"a.js\"/>\nThen finish.\n<update status=\"200\">done</update>",
            vec![
                call("get", &[("path", "a.js")], ""),
                call("update", &[("status", "200")], "done"),
            ],
        ),
        warned(
            "21 stray close after blank open",
            "<rm path=\"unknown://foo\"></unknown>\n<update status=\"102\">checking</update>\n\
             <search>session stores</search>",
            vec![
                call("rm", &[("path", "unknown://foo")], ""),
                call("update", &[("status", "102")], "checking"),
                call("search", &[], "session stores"),
            ],
            vec![warnings::unclosed_before("rm", "update")],
        ),
        warned(
            "22 mismatched close corrected",
            "<set path=\"a.js\">x</update>\n<set path=\"b.js\">y</set>\n<rm path=\"c.js\"/>\n\
             <update status=\"200\">done</update>",
            vec![
                call("set", &[("path", "a.js")], "x"),
                call("set", &[("path", "b.js")], "y"),
                call("rm", &[("path", "c.js")], ""),
                call("update", &[("status", "200")], "done"),
            ],
            vec!["Mismatched </update> closing <set> — corrected to </set>".to_owned()],
        ),
        clean(
            "close tag missing its >",
            r#"<update status="200">done</update"#,
            vec![call("update", &[("status", "200")], "done")],
        ),
    ]);
}

/// Quoted, nested and foreign tags are text, not commands.
#[test]
fn reference_quoting_and_bodies() {
    check(vec![
        clean(
            "23 code span neutralised",
            "Check with `<get path=\"a.js\"/>` to verify.\n<update status=\"200\">done</update>",
            vec![call("update", &[("status", "200")], "done")],
        ),
        clean(
            "24 tool examples inside a set body",
            r#"<set path="known://plan">checklist: use <get path="data.txt"/> then <set path="x">draft</set> to save</set>"#,
            vec![call(
                "set",
                &[("path", "known://plan")],
                r#"checklist: use <get path="data.txt"/> then <set path="x">draft</set> to save"#,
            )],
        ),
        clean(
            "28 foreign tags ignored",
            "<thinking>Let me check.</thinking>\n<update status=\"200\">done</update>",
            vec![call("update", &[("status", "200")], "done")],
        ),
        clean(
            "29 html body verbatim",
            r#"<set path="x.html"><div class="foo" id="bar">hello</div></set>"#,
            vec![call("set", &[("path", "x.html")], r#"<div class="foo" id="bar">hello</div>"#)],
        ),
        clean(
            "29 vue, void, boolean and deep html verbatim",
            r#"<set path="c.vue"><template><div v-if="show" :class="{ on: a }" @click="go()"><img src="a.png"><input disabled><style>a > b { c: d }</style><div><div><div>deep</div></div></div></div></template></set>"#,
            vec![call(
                "set",
                &[("path", "c.vue")],
                r#"<template><div v-if="show" :class="{ on: a }" @click="go()"><img src="a.png"><input disabled><style>a > b { c: d }</style><div><div><div>deep</div></div></div></div></template>"#,
            )],
        ),
        clean(
            "30 heredoc with html in sh",
            "<sh>cat <<EOF\n<div class=\"test\">hi</div>\nEOF</sh>",
            vec![call("sh", &[], "cat <<EOF\n<div class=\"test\">hi</div>\nEOF")],
        ),
        clean(
            "same-named set nested in a set body",
            r#"<set path="docs/tools.md">Write with <set path="x">content</set> and read with <get path="x"/>.</set>"#,
            vec![call(
                "set",
                &[("path", "docs/tools.md")],
                r#"Write with <set path="x">content</set> and read with <get path="x"/>."#,
            )],
        ),
        clean(
            "other tool's full example in a body",
            "<set path=\"d.md\">see <get>x</get> here</set>",
            vec![call("set", &[("path", "d.md")], "see <get>x</get> here")],
        ),
        clean(
            "merge-conflict edit blocks kept verbatim",
            "<set path=\"a.js\">\n<<<<<<< SEARCH\nif (a < b && c) {}\n=======\nif (a <= b) {}\n>>>>>>> REPLACE\n</set>",
            vec![call(
                "set",
                &[("path", "a.js")],
                "\n<<<<<<< SEARCH\nif (a < b && c) {}\n=======\nif (a <= b) {}\n>>>>>>> REPLACE\n",
            )],
        ),
        clean(
            "comments kept in body",
            "<set path=\"a.html\"><!-- keep --><p>x</p></set>",
            vec![call("set", &[("path", "a.html")], "<!-- keep --><p>x</p>")],
        ),
    ]);
}

/// The per-reply cap keeps the first N commands and warns once, only when exceeded.
#[test]
fn command_cap() {
    let twenty = "<get path=\"f.js\"/>\n".repeat(20);
    let parsed = parse_reply(&twenty, 5);
    assert_eq!(
        (parsed.commands, parsed.warnings),
        (
            vec![call("get", &[("path", "f.js")], ""); 5],
            vec!["Tool call limit (5) reached — remaining commands dropped".to_owned()]
        )
    );

    let three = "<get>a</get><get>b</get><get>c</get>";
    let parsed = parse_reply(three, 3);
    assert_eq!(
        (parsed.commands, parsed.warnings),
        (
            vec![
                call("get", &[], "a"),
                call("get", &[], "b"),
                call("get", &[], "c")
            ],
            vec![]
        )
    );

    let dropped_bodies = "<get>a</get><set path=\"x\">Oops <b>bold</b></set>after";
    assert_eq!(
        parse_reply(dropped_bodies, 1),
        ParsedReply {
            commands: vec![call("get", &[], "a")],
            warnings: vec![warnings::command_limit(1)],
            unparsed: "after".to_owned(),
        }
    );
}
