//! Thirty-five representative replies the original server met, at the level of final commands, with two fixes: every attribute a tool's doc teaches reaches its handler, and sed takes any delimiter.

use pretty_assertions::assert_eq;

use super::{call, NO_CAP};
use crate::parse::{parse_reply, warnings, ToolCall};

/// A merge-conflict block for case 6.
const ONE_BLOCK: &str =
    "\n<<<<<<< SEARCH\nconst port = 3000;\n=======\nconst port = 8080;\n>>>>>>> REPLACE\n";

/// Two blocks with five-character markers for case 7.
const TWO_BLOCKS: &str =
    "\n<<<<< SEARCH\na\n=====\nb\n>>>>> REPLACE\n<<<<< SEARCH\nc\n=====\nd\n>>>>> REPLACE\n";

/// One row: the case number, the reply, the command cap, and what it gives.
type Row = (&'static str, String, usize, Vec<ToolCall>, Vec<String>);

/// A row under no cap.
fn row(case: &'static str, input: &str, commands: Vec<ToolCall>, warns: Vec<String>) -> Row {
    (case, input.to_owned(), NO_CAP, commands, warns)
}

/// A `set` on `path` with `body` and no other attribute.
fn set(path: &str, body: &str) -> ToolCall {
    call("set", &[("path", path)], body)
}

/// Every case (and the two fixes) gives exactly these commands and warnings.
#[test]
fn reference_cases_final_commands() {
    let search = |query: &str| call("search", &[("path", query)], "");
    let done = |body: &str| call("update", &[("status", "200")], body);
    let rows: Vec<Row> = vec![
        row(
            "1",
            r#"<update status="200">The answer is 42.</update>"#,
            vec![done("The answer is 42.")],
            vec![],
        ),
        row(
            "2",
            r#"<set path="unknown://session_store">which session store</set>"#,
            vec![set("unknown://session_store", "which session store")],
            vec![],
        ),
        row(
            "3",
            "<get path=\"src/config.js\"/>\n<rm path=\"src/old.js\"/>",
            vec![
                call("get", &[("path", "src/config.js")], ""),
                call("rm", &[("path", "src/old.js")], ""),
            ],
            vec![],
        ),
        row(
            "4",
            "<sh command=\"npm test\"/><sh>npm test</sh><env>ls -la src/</env>",
            vec![
                call("sh", &[("command", "npm test")], ""),
                call("sh", &[], "npm test"),
                call("env", &[], "ls -la src/"),
            ],
            vec![],
        ),
        row(
            "5",
            "<ask_user question=\"Which DB?\" options=\"PG, SQLite\"/><ask_user question=\"Which DB?\">PG, SQLite, MySQL</ask_user>",
            vec![
                call("ask_user", &[("question", "Which DB?"), ("options", "PG, SQLite")], ""),
                call("ask_user", &[("question", "Which DB?")], "PG, SQLite, MySQL"),
            ],
            vec![],
        ),
        row(
            "6",
            &format!("<set path=\"config.js\">{ONE_BLOCK}</set>"),
            vec![set("config.js", ONE_BLOCK)],
            vec![],
        ),
        row(
            "7",
            &format!("<set path=\"a.js\">{TWO_BLOCKS}</set>"),
            vec![set("a.js", TWO_BLOCKS)],
            vec![],
        ),
        row(
            "8",
            "<set path=\"new.js\">=======\nexport default {};\n>>>>>>> REPLACE</set>",
            vec![set("new.js", "=======\nexport default {};\n>>>>>>> REPLACE")],
            vec![],
        ),
        row(
            "9",
            "<get path=\"a.js\"/>\n<set path=\"b.js\">one</set>\n<set path=\"c.js\">two</set>\n<update status=\"102\">working</update>",
            vec![
                call("get", &[("path", "a.js")], ""),
                set("b.js", "one"),
                set("c.js", "two"),
                call("update", &[("status", "102")], "working"),
            ],
            vec![],
        ),
        row(
            "10",
            r#"<get path="*.js" body="TODO"/>"#,
            vec![call("get", &[("path", "*.js"), ("body", "TODO")], "")],
            vec![],
        ),
        row(
            "11",
            r#"<get path="src/*.js" preview/>"#,
            vec![call("get", &[("path", "src/*.js"), ("preview", "")], "")],
            vec![],
        ),
        row(
            "12",
            r#"<set path="src/*.js" search="localhost" replace="0.0.0.0"/>"#,
            vec![
                call("set", &[("path", "src/*.js"), ("search", "localhost"), ("replace", "0.0.0.0")], ""),
            ],
            vec![],
        ),
        row(
            "13",
            "<set path=\"config.js\" search=\"3000\">8080</set><set path=\"config.js\" search=\"old\" replace=\"new\">ignored</set>",
            vec![
                call("set", &[("path", "config.js"), ("search", "3000")], "8080"),
                call("set", &[("path", "config.js"), ("search", "old"), ("replace", "new")], "ignored"),
            ],
            vec![],
        ),
        row(
            "14",
            "<mv path=\"known://env_vars\" to=\".env\"/><mv path=\"src/old.js\">src/new.js</mv>",
            vec![
                call("mv", &[("path", "known://env_vars"), ("to", ".env")], ""),
                call("mv", &[("path", "src/old.js")], "src/new.js"),
            ],
            vec![],
        ),
        row(
            "15",
            "<search path=\"node.js streams\"/><search>SQLite WAL mode</search>",
            vec![search("node.js streams"), call("search", &[], "SQLite WAL mode")],
            vec![],
        ),
        row(
            "16",
            "<get>src/app.js</get><rm>src/old.js</rm>",
            vec![call("get", &[], "src/app.js"), call("rm", &[], "src/old.js")],
            vec![],
        ),
        row(
            "17",
            r#"<set path="/:known:auth" body="OAuth2"/>"#,
            vec![call("set", &[("path", "/:known:auth"), ("body", "OAuth2")], "")],
            vec![],
        ),
        row(
            "18",
            r#"<update status="200">The answer is 42."#,
            vec![done("The answer is 42.")],
            vec![warnings::unclosed_tag("update")],
        ),
        row(
            "19",
            r#"<get path="src/app.js">"#,
            vec![call("get", &[("path", "src/app.js")], "")],
            vec![warnings::unclosed_tag("get")],
        ),
        row(
            "20",
            "I'll read it.\n<get path=\"a.js\"/>\nThen finish.\n<update status=\"200\">done</update>",
            vec![call("get", &[("path", "a.js")], ""), done("done")],
            vec![],
        ),
        row(
            "21",
            "<rm path=\"unknown://foo\"></unknown>\n<update status=\"102\">checking</update>\n<search>stores</search>",
            vec![
                call("rm", &[("path", "unknown://foo")], ""),
                call("update", &[("status", "102")], "checking"),
                call("search", &[], "stores"),
            ],
            vec![warnings::unclosed_before("rm", "update")],
        ),
        row(
            "22",
            "<set path=\"a.js\">x</update>\n<set path=\"b.js\">y</set>\n<rm path=\"c.js\"/>\n<update status=\"200\">done</update>",
            vec![
                set("a.js", "x"),
                set("b.js", "y"),
                call("rm", &[("path", "c.js")], ""),
                done("done"),
            ],
            vec![warnings::mismatched_close("update", "set")],
        ),
        row(
            "23",
            "Verify with `<get path=\"a.js\"/>` to verify.\n<update status=\"200\">done</update>",
            vec![done("done")],
            vec![],
        ),
        row(
            "24",
            r#"<set path="known://plan">checklist: use <get path="data.txt"/> then <set path="x">draft</set></set>"#,
            vec![
                set("known://plan", r#"checklist: use <get path="data.txt"/> then <set path="x">draft</set>"#),
            ],
            vec![],
        ),
        row(
            "25",
            "<|tool_call>call:search{query:\"Mass Effect 1 release date\"}<tool_call|>\n<update status=\"102\">searching</update>",
            vec![
                search("Mass Effect 1 release date"),
                call("update", &[("status", "102")], "searching"),
            ],
            vec![],
        ),
        row(
            "26",
            "{\"name\":\"search\",\"arguments\":{\"query\":\"test query\"}}\n<tool_use><name>search</name><input>{\"query\":\"test query\"}</input></tool_use>\n[TOOL_CALLS] [{\"name\":\"search\",\"arguments\":{\"query\":\"test query\"}}]",
            vec![search("test query"), search("test query"), search("test query")],
            vec![],
        ),
        row(
            "27",
            "<|tool_call>call:fakeTool{x:\"y\"}<tool_call|>\n<update status=\"200\">done</update>",
            vec![done("done")],
            vec![warnings::unknown_tool("fakeTool", warnings::FORMAT_NATIVE)],
        ),
        row(
            "28",
            "<thinking>Let me check.</thinking>\n<update status=\"200\">done</update>",
            vec![done("done")],
            vec![],
        ),
        row(
            "29",
            r#"<set path="x.html"><div class="foo" id="bar"><img src="a.png"><input disabled> <b v-if="on" :class="c">hi</b></div></set>"#,
            vec![
                set("x.html", r#"<div class="foo" id="bar"><img src="a.png"><input disabled> <b v-if="on" :class="c">hi</b></div>"#),
            ],
            vec![],
        ),
        row(
            "30",
            "<sh>cat <<EOF\n<div class=\"test\">hi</div>\nEOF</sh>",
            vec![call("sh", &[], "cat <<EOF\n<div class=\"test\">hi</div>\nEOF")],
            vec![],
        ),
        row(
            "31",
            "<set path=\"a\">s/3000/8080/</set><set path=\"a\">s/localhost/0.0.0.0/g</set><set path=\"a\">s/old/new</set><set path=\"a\">s/7 - a = /7 - a = 5/g</set><set path=\"a\">s/debugger;//</set>",
            vec![
                set("a", "s/3000/8080/"),
                set("a", "s/localhost/0.0.0.0/g"),
                set("a", "s/old/new"),
                set("a", "s/7 - a = /7 - a = 5/g"),
                set("a", "s/debugger;//"),
            ],
            vec![],
        ),
        row(
            "32",
            "<set path=\"a\">s/foo/bar/g;s/baz/qux/g</set><set path=\"a\">s/old/new/ s/foo/bar/</set><set path=\"a\">s/a/b/\ns/c/d/</set>",
            vec![
                set("a", "s/foo/bar/g;s/baz/qux/g"),
                set("a", "s/old/new/ s/foo/bar/"),
                set("a", "s/a/b/\ns/c/d/"),
            ],
            vec![],
        ),
        row(
            "33",
            r"<set path='a'>s/b \/ 4 = 3/12 \/ 4 = 3/</set>",
            vec![set("a", r"s/b \/ 4 = 3/12 \/ 4 = 3/")],
            vec![],
        ),
        row(
            "34",
            "<set path=\"a\">s/7 - a =$/7 - a = 5/</set>",
            vec![set("a", "s/7 - a =$/7 - a = 5/")],
            vec![],
        ),
        (
            "35",
            "<get path=\"f.js\"/>\n".repeat(20),
            5,
            vec![call("get", &[("path", "f.js")], ""); 5],
            vec![warnings::command_limit(5)],
        ),
        row(
            "0.1 body filter kept",
            r#"<get path="known://*">auth</get>"#,
            vec![call("get", &[("path", "known://*")], "auth")],
            vec![],
        ),
        row(
            "0.1 line, limit, visibility",
            r#"<get path="src/a.js" line="-50" limit="80" visibility="summarized"/><cp path="a" to="b" visibility="archived"/>"#,
            vec![
                call("get", &[("path", "src/a.js"), ("line", "-50"), ("limit", "80"), ("visibility", "summarized")], ""),
                call("cp", &[("path", "a"), ("to", "b"), ("visibility", "archived")], ""),
            ],
            vec![],
        ),
        row(
            "0.2 sed delimiters",
            "<set path=\"a\">s|a|b|</set><set path=\"a\">s#x#y#g</set>",
            vec![set("a", "s|a|b|"), set("a", "s#x#y#g")],
            vec![],
        ),
    ];
    for (case, input, cap, commands, warns) in rows {
        let parsed = parse_reply(&input, cap);
        assert_eq!(
            (case, parsed.commands, parsed.warnings),
            (case, commands, warns)
        );
    }
}
