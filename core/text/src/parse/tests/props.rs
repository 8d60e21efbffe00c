//! Property tests: the parser never panics, and never loses a well-formed command amid arbitrary prose.

use pretty_assertions::assert_eq;
use proptest::prelude::*;

use crate::parse::{looks_like_tool_call, parse_reply, ToolCall, ToolName};

/// Pieces that make tag soup, native-call soup and JSON soup likely.
const SOUP: &[&str] = &[
    "<",
    ">",
    "/>",
    "</",
    "<set",
    "</set>",
    "<get path=\"",
    "<update status=\"200\">",
    "</update>",
    "<known>",
    "</unknown>",
    "<summarize>",
    "fidelity=\"full\"",
    "\"",
    "'",
    "=",
    " ",
    "\n",
    "&amp;",
    "&",
    "`",
    "```",
    "```tool_code\n",
    "<|tool_call>",
    "call:get{",
    "call:fake{",
    "<|\"|>",
    "<tool_call|>",
    "{",
    "}",
    "[",
    "]",
    "{\"name\": \"get\"",
    ", \"arguments\": {",
    "\"path\": ",
    "[TOOL_CALLS]",
    "[ARGS]",
    "<tool_use>",
    "<name>",
    "</name>",
    "<input>",
    "</tool_use>",
    "<invoke name=\"sh\">",
    "<parameter name=\"command\">",
    "print(",
    "set(",
    ")",
    ":",
    ",",
    "é",
    "日本",
    "\u{1}",
    "\\",
    "<![CDATA[",
    "]]>",
];

/// Attribute names a generated command may carry (not `fidelity`/`visibility`, which healing rewrites).
const ATTRIBUTES: &[&str] = &[
    "path", "status", "line", "limit", "to", "command", "question", "options", "summary",
    "results", "preview",
];

/// Attribute values: no quote, tag or entity start, and only characters XML allows
/// (a control character makes the strict tokenizer fall back to line-based recovery).
const VALUE: &str = "[^\"<&\\p{Cc}\u{FFFE}\u{FFFF}]{0,12}";

/// Arbitrary reply text, biased towards markup and native-call markers.
fn soup() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        prop::collection::vec(prop::sample::select(SOUP), 0..60).prop_map(|parts| parts.concat()),
    ]
}

/// Pieces of prose that come close to native calls without being one.
const NEAR_MISSES: &[&str] = &[
    "{",
    "}",
    "\"",
    "'",
    "[",
    "]",
    ":",
    ",",
    "&",
    "&amp;",
    "\n",
    " ",
    "(",
    ")",
    "=",
    ">",
    "/",
    "|",
    "call:get{",
    "print(",
    "get(path=",
    "{\"type\": \"function\"",
    "\"arguments\": {",
    "path:",
    "[ARGS]",
    "TOOL",
    "]]>",
    "\\",
];

/// Prose that cannot open a tag, a code span, or a native call of its own.
fn prose() -> impl Strategy<Value = String> {
    let near =
        prop::collection::vec(prop::sample::select(NEAR_MISSES), 0..12).prop_map(|p| p.concat());
    prop_oneof!["[^<`]{0,40}", near].prop_filter("holds a native-call marker", |text| {
        !text.contains("TOOL_CALLS") && !text.contains("\"name\"")
    })
}

/// A well-formed tool command and how the model wrote it.
fn command() -> impl Strategy<Value = (ToolCall, String)> {
    let attributes = prop::collection::btree_map(prop::sample::select(ATTRIBUTES), VALUE, 0..4);
    (
        prop::sample::select(ToolName::ALL.to_vec()),
        attributes,
        "[^<&`]{0,40}",
        any::<bool>(),
    )
        .prop_map(|(name, attributes, body, self_close)| {
            let written: String = attributes
                .iter()
                .map(|(key, value)| format!(" {key}=\"{value}\""))
                .collect();
            let text = if body.is_empty() && self_close {
                format!("<{name}{written}/>")
            } else {
                format!("<{name}{written}>{body}</{name}>")
            };
            let call = ToolCall {
                name,
                attributes: attributes
                    .into_iter()
                    .map(|(key, value)| (key.to_owned(), value))
                    .collect(),
                body,
            };
            (call, text)
        })
}

proptest! {
    /// Any reply parses without panicking into commands within the cap, and the spotter never panics.
    #[test]
    fn never_panics(reply in soup(), cap in 0usize..6) {
        let parsed = parse_reply(&reply, cap);
        prop_assert!(parsed.commands.len() <= cap);
        prop_assert_eq!(parsed.unparsed.trim(), parsed.unparsed.as_str());
        let _ = looks_like_tool_call(&reply);
    }

    /// Arbitrary bytes (read as a provider's text would be, lossily) parse without panicking,
    /// and in bounded time: no input makes the parser backtrack or loop.
    #[test]
    fn arbitrary_bytes_parse_in_bounded_time(bytes in prop::collection::vec(any::<u8>(), 0..4096), cap in 0usize..16) {
        let reply = String::from_utf8_lossy(&bytes);
        let started = std::time::Instant::now();
        let parsed = parse_reply(&reply, cap);
        let _ = looks_like_tool_call(&reply);
        prop_assert!(parsed.commands.len() <= cap);
        prop_assert!(started.elapsed() < std::time::Duration::from_secs(2), "took {:?}", started.elapsed());
    }

    /// Well-formed commands surrounded by arbitrary prose all come out, in order, unchanged.
    #[test]
    fn never_loses_a_command(
        commands in prop::collection::vec((prose(), command()), 1..4),
        tail in prose(),
    ) {
        let mut reply = String::new();
        for (before, (_, text)) in &commands {
            reply.push_str(before);
            reply.push_str(text);
        }
        reply.push_str(&tail);
        let expected: Vec<ToolCall> = commands.into_iter().map(|(_, (call, _))| call).collect();
        assert_eq!((reply.as_str(), parse_reply(&reply, 99).commands), (reply.as_str(), expected));
    }
}

/// Inputs that once split a multi-byte character (found by the properties above) parse and are spotted without panicking.
#[test]
fn multibyte_regressions() {
    let inputs = [
        "🌀(",
        "<|tool_call>call:get{{\"name\": \"get\"é",
        "é<|tool_call>call:get{k:é, 'é': [é, <|\"|>é]}",
        "{\"name\": \"gét\", \"arguments\": {\"é\": 1}}",
        "[TOOL_CALLS]é[ARGS]{\"é\"",
        "<tool_use>é<name>é</name><input>{é}</input>",
        "<invoke name=\"é\"><parameter name=\"é\">é</parameter>",
        "```tool_code\nget(é=\"é\")\n```",
        "call:gét{é 日本(path=é",
    ];
    for input in inputs {
        let parsed = parse_reply(input, 3);
        assert!(parsed.commands.len() <= 3, "{input}");
        let _ = looks_like_tool_call(input);
    }
}
