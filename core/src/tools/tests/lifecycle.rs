//! Dispatch rules every tool shares: target validation, aborts after a failure, lifecycle signals, names that are no tool.

use super::{fixture, seen, Seen};
use crate::turn::dispatch::{Dispatched, UpdateSignal};
use pretty_assertions::assert_eq;
use rummy_store::entry::State::{Failed, Proposed, Resolved};
use rummy_store::entry::Visibility;
use rummy_text::parse::{parse_reply, warnings, ToolCall, ToolName};

/// A target that is too long or holds control characters is refused at `<tool>://turn_N/invalid` and not run; commands may span lines.
#[test]
fn target_validation() {
    let long = "a".repeat(513);
    let invalid = |tool: &str| {
        seen(
            &format!("{tool}://turn_1/invalid"),
            Failed,
            Some("validation"),
            "Invalid path: too long or contains non-printing characters",
        )
    };
    let call = |name: ToolName, attributes: &[(&str, &str)], body: &str| ToolCall {
        name,
        attributes: attributes
            .iter()
            .map(|(k, v)| ((*k).into(), (*v).into()))
            .collect(),
        body: body.into(),
    };
    let cases: Vec<(ToolCall, Seen)> = vec![
        (call(ToolName::Get, &[("path", &long)], ""), invalid("get")),
        (
            call(ToolName::Set, &[("path", "known://a\u{7}")], "x"),
            invalid("set"),
        ),
        (
            call(ToolName::Get, &[], "src/a.js\nsrc/b.js"),
            invalid("get"),
        ),
        (
            call(
                ToolName::Mv,
                &[("path", "known://a"), ("to", "known://b\tc")],
                "",
            ),
            invalid("mv"),
        ),
        (
            call(ToolName::AskUser, &[("question", "Which\none?")], ""),
            invalid("ask_user"),
        ),
        (
            call(ToolName::Sh, &[("command", &"x".repeat(600))], ""),
            invalid("sh"),
        ),
        (
            call(ToolName::Sh, &[], "cat <<EOF\nhello\nEOF"),
            seen(
                "sh://turn_1/cat%20%3C%3CEOF%0Ahello%0AEOF",
                Proposed,
                None,
                "",
            ),
        ),
    ];
    let mut got = Vec::new();
    let mut want = Vec::new();
    for (call, expected) in cases {
        let mut f = fixture();
        let d = f.call(&call);
        got.push(f.seen(&d));
        want.push(expected);
    }
    assert_eq!(got, want);
}

/// After a failed action the rest are aborted and not run; the update still applies; think is never recorded.
#[test]
fn abort_after_failure_and_lifecycle() {
    let mut f = fixture();
    let results = f.reply(concat!(
        "<think>plan</think>",
        r#"<get path="src/app.js"/>"#,
        "<set path=\"prompt://9\">x</set>",
        r#"<get path="src/util.js"/>"#,
        "<set path=\"known://db\">never</set>",
        r#"<update status="200">done</update>"#,
    ));
    let aborted = |path: &str, tool: &str| {
        seen(
            path,
            Failed,
            Some("aborted"),
            &format!("Aborted — preceding {tool} failed."),
        )
    };
    assert_eq!(
        results,
        vec![
            seen("get://turn_1/src%2Fapp.js", Resolved, None, "src/app.js promoted (33 tokens)"),
            seen(
                "set://turn_1/prompt%3A%2F%2F9",
                Failed,
                Some("permission"),
                "permission denied: writer \"model\" may not write scheme \"prompt\" (allowed: system, plugin)",
            ),
            aborted("get://turn_1/src%2Futil.js", "set"),
            aborted("set://turn_1/known%3A%2F%2Fdb", "set"),
            seen("update://turn_1", Resolved, None, "done"),
        ]
    );
    assert_eq!(
        f.entry("src/util.js").unwrap().visibility,
        Visibility::Summarized
    );
    assert_eq!(f.entry("known://db"), None);
    let update = f.call(&ToolCall {
        name: ToolName::Update,
        attributes: vec![("status".into(), "999".into())],
        body: " going on ".into(),
    });
    assert_eq!(
        update.update,
        Some(UpdateSignal {
            status: 102,
            status_given: false,
            body: "going on".into()
        })
    );
    assert_eq!(f.view(&update.path), "# update\ngoing on");
    let think = f.call(&ToolCall {
        name: ToolName::Think,
        attributes: vec![],
        body: "x".into(),
    });
    assert_eq!(
        think,
        Dispatched {
            tool: ToolName::Think,
            path: String::new(),
            state: Resolved,
            outcome: None,
            update: None,
        }
    );
}

/// A name that is no tool never reaches dispatch: as a tag it is markup that is no command, as
/// a native call it leaves a warning and stays in the prose (which the healer judges); nothing
/// is run or recorded.
#[test]
fn unknown_tools_are_never_dispatched() {
    let mut f = fixture();
    let call = r#"{"name": "fly", "arguments": {"path": "x"}}"#;
    let reply = format!(r#"<fly path="x"/> {call}"#);
    let parsed = parse_reply(&reply, 15);
    assert_eq!(
        (parsed.commands, parsed.warnings, parsed.unparsed),
        (
            vec![],
            vec![warnings::unknown_tool("fly", warnings::FORMAT_JSON)],
            call.to_owned()
        )
    );
    assert_eq!(f.reply(&reply), vec![]);
}
