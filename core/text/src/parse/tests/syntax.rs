//! Tolerant syntax, markdown quoting, prose collection and lookups.

use pretty_assertions::assert_eq;

use super::{call, check, clean, warned, NO_CAP};
use crate::parse::{parse_reply, warnings, ToolName};

/// Entities, CDATA, case, quoting styles and broken quotes are all read the way the model meant.
#[test]
fn tolerant_syntax() {
    check(vec![
        clean(
            "entities in body",
            "<set path=\"t\">&lt;tag&gt; &amp; &quot;q&quot; &apos;a&apos; &#65;&#x42; &copy; &bogus &#xZZ;</set>",
            vec![call(
                "set",
                &[("path", "t")],
                "<tag> & \"q\" 'a' AB &copy; &bogus &#xZZ;",
            )],
        ),
        clean(
            "entities in attributes",
            r#"<set path="a&amp;b.txt" search="x &lt; y" replace='&quot;z&quot;'/>"#,
            vec![call(
                "set",
                &[("path", "a&b.txt"), ("search", "x < y"), ("replace", "\"z\"")],
                "",
            )],
        ),
        clean(
            "CDATA content kept, not decoded",
            "<set path=\"t\">a &amp; <![CDATA[x < y && </set> &amp;]]> b</set>",
            vec![call("set", &[("path", "t")], "a & x < y && </set> &amp; b")],
        ),
        clean(
            "upper-case tags and attributes",
            "<GET PATH=\"a.js\"/>\n<Update Status=\"200\">ok</UPDATE>",
            vec![
                call("get", &[("path", "a.js")], ""),
                call("update", &[("status", "200")], "ok"),
            ],
        ),
        warned(
            "unquoted attributes",
            "<get path=src/app.js limit=20/>\n<get path=b.js>",
            vec![
                call("get", &[("path", "src/app.js"), ("limit", "20")], ""),
                call("get", &[("path", "b.js")], ""),
            ],
            vec![warnings::unclosed_tag("get")],
        ),
        clean(
            "single-quoted attribute",
            "<get path='a \"quoted\" name.js'/>",
            vec![call("get", &[("path", "a \"quoted\" name.js")], "")],
        ),
        warned(
            "unclosed quote cut at >",
            r#"<set path="k" summary="unclosed>body</set><get>a</get>"#,
            vec![
                call("set", &[("path", "k"), ("summary", "unclosed")], "body"),
                call("get", &[], "a"),
            ],
            vec![warnings::repaired_attributes(1)],
        ),
        warned(
            "unclosed quotes cut at /> and at line end, counted once",
            "<get path=\"a.js/>\n<set path=\"notes.md\nhello</set>",
            vec![
                call("get", &[("path", "a.js")], ""),
                call("set", &[("path", "notes.md")], "\nhello"),
            ],
            vec!["Repaired 2 malformed attribute(s) — close all attribute values with a quote."
                .to_owned()],
        ),
        clean(
            "spaced self-closing slash",
            "<get path=\"a.js\" / >",
            vec![call("get", &[("path", "a.js")], "")],
        ),
        clean(
            "bare comparison prose",
            "Note: a < b && c > d, so x<y.\n<get path=\"a.js\"/> and 1 <2",
            vec![call("get", &[("path", "a.js")], "")],
        ),
    ]);
}

/// Inline code and ordinary fences quote tags; `tool_code`/`tool_command`/`xml` fences are calls.
#[test]
fn code_spans_and_fences() {
    check(vec![
        clean(
            "double-backtick span neutralised",
            "Never run ``<rm path=\"a\"/>`` blindly. <get path=\"b\"/>",
            vec![call("get", &[("path", "b")], "")],
        ),
        clean(
            "unmatched backtick is text",
            "It's `odd\n<get path=\"b\"/>",
            vec![call("get", &[("path", "b")], "")],
        ),
        clean(
            "tool_code fence parsed",
            "```tool_code\n<get path=\"a.js\"/>\n```\n",
            vec![call("get", &[("path", "a.js")], "")],
        ),
        clean(
            "xml and tool_command fences parsed",
            "```xml\n<update status=\"200\">done</update>\n```\n```tool_command\n<sh>ls</sh>\n```",
            vec![
                call("update", &[("status", "200")], "done"),
                call("sh", &[], "ls"),
            ],
        ),
        clean(
            "rust fence quoted",
            "```rust\nlet s = \"<get path=\\\"a.js\\\"/>\";\n```\n<update status=\"200\">done</update>",
            vec![call("update", &[("status", "200")], "done")],
        ),
        clean(
            "unclosed fence is text",
            "```rust\n<get path=\"a.js\"/>",
            vec![call("get", &[("path", "a.js")], "")],
        ),
        warned(
            "tool fence bounds an unclosed tool",
            "```xml\n<update status=\"200\">done\n```\nafter `x`",
            vec![call("update", &[("status", "200")], "done")],
            vec![warnings::unclosed_tag("update")],
        ),
        clean(
            "close tag quoted in a body does not close it",
            "<update status=\"200\">Done; `</update>` ends it.</update>",
            vec![call("update", &[("status", "200")], "Done; `</update>` ends it.")],
        ),
        clean(
            "backticks inside a body are body text",
            "<set path=\"r.md\">Use `<get/>` and\n```\ncode\n```\n</set>",
            vec![call("set", &[("path", "r.md")], "Use `<get/>` and\n```\ncode\n```\n")],
        ),
    ]);
}

/// `unparsed` is the top-level prose in order, trimmed, entities decoded outside code.
#[test]
fn unparsed_prose() {
    let cases = [
        (
            "20 both prose pieces",
            "I'll read it.\n<get path=\"a.js\"/>\nThen finish.\n<update status=\"200\">done</update>",
            "I'll read it.\n\nThen finish.",
        ),
        (
            "28 foreign tag text kept",
            "<thinking>Let me check.</thinking>\n<update status=\"200\">done</update>",
            "Let me check.",
        ),
        (
            "bare prose survives",
            "  Note: a < b && c > d, so x<y.\n<get path=\"a.js\"/>",
            "Note: a < b && c > d, so x<y.",
        ),
        (
            "code span kept literally",
            "Use `<get/>` &amp; `&amp;`.",
            "Use `<get/>` & `&amp;`.",
        ),
        (
            "quoted fence kept, tool fence markers dropped",
            "A:\n```js\nx <y>\n```\n```xml\nB <get/>\n```\nC",
            "A:\n```js\nx <y>\n```\nB \nC",
        ),
        ("empty reply", "", ""),
    ];
    for (name, input, expected) in cases {
        assert_eq!(
            (name, parse_reply(input, NO_CAP).unparsed.as_str()),
            (name, expected)
        );
    }
}

/// `attr` finds the first attribute by name, `ToolName::parse` reads tag names in any case.
#[test]
fn lookups() {
    let parsed = parse_reply(r#"<get path="a" PATH="b" preview/>"#, NO_CAP);
    let get = &parsed.commands[0];
    assert_eq!(
        (get.attr("path"), get.attr("Preview"), get.attr("limit")),
        (Some("a"), Some(""), None)
    );
    assert_eq!(
        (
            ToolName::parse("ASK_USER"),
            ToolName::parse("thinking"),
            ToolName::parse("")
        ),
        (Some(ToolName::AskUser), None, None)
    );
}
