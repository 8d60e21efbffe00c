//! Legacy healing (`<known>`, `<unknown>`, `<summarize>`, `fidelity=`) and spotting mangled calls in prose.

use pretty_assertions::assert_eq;

use super::{call, check, clean, warned};
use crate::parse::{looks_like_tool_call, warnings};

/// Retired tags become today's commands silently, in order with the others; `think` stays a command.
#[test]
fn legacy_tags_healed() {
    check(vec![
        clean(
            "known with a bare path, attributes kept",
            r#"<known path="auth" summary="oauth,login">OAuth2 via Keycloak</known>"#,
            vec![call(
                "set",
                &[("path", "known://auth"), ("summary", "oauth,login")],
                "OAuth2 via Keycloak",
            )],
        ),
        clean(
            "known with a scheme path is kept as written",
            r#"<KNOWN path="known://people/ada">born 1815</KNOWN>"#,
            vec![call("set", &[("path", "known://people/ada")], "born 1815")],
        ),
        clean(
            "path-less known and unknown are named by summary or body",
            "<known summary=\"DB, Postgres 16!\">The database is Postgres.</known>\n\
             <unknown>Which session store is used?</unknown>",
            vec![
                call(
                    "set",
                    &[
                        ("path", "known://db_postgres_16"),
                        ("summary", "DB, Postgres 16!"),
                    ],
                    "The database is Postgres.",
                ),
                call(
                    "set",
                    &[("path", "unknown://which_session_store_is_used")],
                    "Which session store is used?",
                ),
            ],
        ),
        clean(
            "summarize concludes, think stays",
            "<think>plan it</think><summarize>The port is 8080.</summarize>",
            vec![
                call("think", &[], "plan it"),
                call("update", &[("status", "200")], "The port is 8080."),
            ],
        ),
        clean(
            "fidelity becomes visibility with old level names mapped, on every tool",
            r#"<set path="known://a" fidelity="demoted"/><mv path="known://b" fidelity="full"/><get path="c" fidelity="archive"/><cp path="d" to="e" fidelity="index"/><set path="f" fidelity="stored"/><set path="g" fidelity="promoted"/>"#,
            vec![
                call(
                    "set",
                    &[("path", "known://a"), ("visibility", "summarized")],
                    "",
                ),
                call(
                    "mv",
                    &[("path", "known://b"), ("visibility", "visible")],
                    "",
                ),
                call("get", &[("path", "c"), ("visibility", "archived")], ""),
                call(
                    "cp",
                    &[("path", "d"), ("to", "e"), ("visibility", "summarized")],
                    "",
                ),
                call("set", &[("path", "f"), ("visibility", "archived")], ""),
                call("set", &[("path", "g"), ("visibility", "visible")], ""),
            ],
        ),
        clean(
            "visibility wins over fidelity; unknown levels are left for the handler",
            r#"<set path="a" fidelity="full" visibility="summary"/><set path="b" fidelity="sideways"/>"#,
            vec![
                call("set", &[("path", "a"), ("visibility", "summarized")], ""),
                call("set", &[("path", "b"), ("visibility", "sideways")], ""),
            ],
        ),
        clean(
            "dialect calls are healed too",
            r#"{"name": "summarize", "arguments": {"text": "done"}} {"name": "known", "arguments": {"path": "x", "content": "y"}}"#,
            vec![
                call("update", &[("status", "200")], "done"),
                call("set", &[("path", "known://x")], "y"),
            ],
        ),
        clean(
            "a retired close tag in a body does not end the tool",
            "<set path=\"doc.md\">Close it with </known> as before.</set>",
            vec![call(
                "set",
                &[("path", "doc.md")],
                "Close it with </known> as before.",
            )],
        ),
        warned(
            "an unclosed known runs to the end like any tag",
            "<known path=\"a\">fact",
            vec![call("set", &[("path", "known://a")], "fact")],
            vec![warnings::unclosed_tag("known")],
        ),
    ]);
}

/// `looks_like_tool_call` flags markers, tag fragments, JSON and call syntax naming our tools, never quotes or plain prose.
#[test]
fn mangled_calls_spotted() {
    let cases = [
        ("native marker", "Let me check <|tool_call>call:get{", true),
        ("native closer alone", "path:a}<tool_call|>", true),
        ("bare call syntax", "call:get{path:\"a.js\"}", true),
        ("Mistral marker", "[TOOL_CALLS] oops", true),
        ("tool_use", "<tool_use><name>x", true),
        ("Hermes tag", "<tool_call>{\"name\": \"x\"", true),
        (
            "JSON naming a tool",
            "{ \"name\" : \"rummy.get\", \"arguments\": ",
            true,
        ),
        ("tag fragment", "<get path=\"a.js\"", true),
        ("close tag", "done </UPDATE>", true),
        ("legacy tag", "<known path=x", true),
        (
            "python style",
            "print(default_api.get(path=\"a.js\"))",
            true,
        ),
        ("qwen coder style", "<function=get><parameter=path>a", true),
        ("inside a tool fence", "```tool_code\ncall:set{\n```", true),
        ("plain answer", "The answer is 42.", false),
        ("comparison", "a < b && c > d, x<get_it>", false),
        (
            "quoted tag",
            "Use `<get path=\"a\"/>` to read and ``call:get{}``.",
            false,
        ),
        ("quoted fence", "```html\n<get path=\"a\"/>\n```", false),
        ("data JSON", "{\"name\": \"John\", \"arguments\": 3}", false),
        (
            "ordinary words",
            "I will get(the) file and set it; getters are fine.",
            false,
        ),
        ("comparison call", "if get(x == 1)", false),
    ];
    for (name, text, expected) in cases {
        assert_eq!((name, looks_like_tool_call(text)), (name, expected));
    }
}

/// The notice for unread prose quotes it, trimmed, and cuts a long one at 400 characters.
#[test]
fn unread_text_notice() {
    let long = "é".repeat(401);
    assert_eq!(
        (
            warnings::unread_text("  <|tool_call>call:get{  "),
            warnings::unread_text(&long).chars().count(),
        ),
        (
            "Not run — this part of your reply looks like a tool command but could not be read:\n<|tool_call>call:get{".to_owned(),
            "Not run — this part of your reply looks like a tool command but could not be read:\n".chars().count() + 401,
        )
    );
}
