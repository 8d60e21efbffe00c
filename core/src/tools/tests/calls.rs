//! `call`: a call of a tool a client offers — a proposal when the tool is offered and its
//! arguments are a JSON object with every required field, an error the model reads otherwise;
//! offered only in act mode and only while a client offers tools; once accepted, one channel
//! for the answer, which the client offering the tool fills.

use super::{fixture, fixture_with, seen, Fixture, NOW};
use crate::config::ShellRunner;
use crate::tools::{active_tools, instructions, CommandReach};
use crate::turn::dispatch::LoopFlags;
use crate::turn::proposals::{self, Decision, Recorded};
use crate::turn::streams::{self, StreamEnd, StreamWrite};
use pretty_assertions::assert_eq;
use rummy_protocol::params::OfferedTool;
use rummy_store::entries::WriteCtx;
use rummy_store::entry::State::{Failed, Proposed};
use rummy_store::entry::{State, Visibility};
use rummy_store::run::Mode;
use serde_json::json;

/// The tools the fixtures' client offers: an echo that requires `message`, and a clock.
fn offered() -> Vec<OfferedTool> {
    vec![
        OfferedTool {
            server: "everything".into(),
            name: "echo".into(),
            description: Some("Echoes back the input.".into()),
            input_schema: Some(json!({"type": "object",
                "properties": {"message": {"type": "string"}}, "required": ["message"]})),
        },
        OfferedTool {
            server: "everything".into(),
            name: "time".into(),
            description: None,
            input_schema: None,
        },
    ]
}

fn offering(mode: Mode) -> Fixture {
    let flags = LoopFlags {
        client_tools: true,
        ..LoopFlags::default()
    };
    let mut f = fixture_with(mode, flags, false);
    f.ctx.client_tools = offered().into();
    f
}

/// An offered tool called with a JSON object holding its required fields is a proposal of
/// kind `call` that the offering client makes (`runner: "client"`); an empty body is `{}`.
#[test]
fn a_call_of_an_offered_tool_is_a_proposal() {
    let mut f = offering(Mode::Act);
    let echo = f.one(r#"<call server="everything" tool="echo">{"message": "hi"}</call>"#);
    let attributes = f.entry(&echo.path).unwrap().attributes();
    let time = f.one(r#"<call server="everything" tool="time"/>"#);
    assert_eq!(
        (echo, time.state),
        (
            seen("call://turn_1/everything%2Fecho", Proposed, None, ""),
            Proposed
        )
    );
    assert_eq!(
        attributes,
        json!({"kind": "call", "server": "everything", "tool": "echo",
               "arguments": {"message": "hi"}, "summary": "everything/echo {\"message\":\"hi\"}",
               "runner": "client", "commandIndex": 0})
    );
}

/// Arguments that are not one JSON object or lack a required field, a tool no client offers,
/// and a call without its server or tool are errors the model reads: nothing is proposed.
#[test]
fn a_bad_call_is_an_error_not_a_proposal() {
    let mut f = offering(Mode::Act);
    let cases = [
        r#"<call server="everything" tool="echo">{"message": </call>"#,
        r#"<call server="everything" tool="echo">["hi"]</call>"#,
        r#"<call server="everything" tool="echo">{"text": "hi"}</call>"#,
        r#"<call server="everything" tool="fly">{}</call>"#,
        r#"<call tool="echo">{}</call>"#,
    ];
    let seen_: Vec<(State, Option<String>, String)> = cases
        .iter()
        .map(|reply| {
            let s = f.one(reply);
            (s.state, s.outcome, s.body)
        })
        .collect();
    let failed = |outcome: &str, body: &str| (Failed, Some(outcome.to_owned()), body.to_owned());
    assert_eq!(
        seen_,
        vec![
            failed("validation", "everything/echo was not called: the arguments are not JSON (EOF while parsing a value at line 1 column 11)"),
            failed("validation", "everything/echo was not called: the arguments must be one JSON object ({…}), not another JSON value"),
            failed("validation", "everything/echo was not called: its arguments lack the required message"),
            failed("not_found", "no client offers the tool everything/fly; the offered tools are: everything/echo, everything/time"),
            failed("validation", crate::tools::call::TOOL_REQUIRED),
        ]
    );
}

/// Ask mode neither offers nor dispatches client tools, and a loop no client offers tools has
/// no `call`: each refusal says why.
#[test]
fn call_is_offered_in_act_mode_while_a_client_offers_tools() {
    let call = r#"<call server="everything" tool="time"/>"#;
    let mut ask = offering(Mode::Ask);
    let mut none = fixture();
    let refused = (ask.one(call), none.one(call));
    assert_eq!(
        (
            (refused.0.state, refused.0.outcome, refused.0.body),
            (refused.1.state, refused.1.outcome, refused.1.body)
        ),
        (
            (
                Failed,
                Some("permission".to_owned()),
                crate::tools::wording::ASK_CALL.to_owned()
            ),
            (
                Failed,
                Some("501".to_owned()),
                crate::tools::wording::NO_CLIENT_TOOLS.to_owned()
            ),
        )
    );
    let offers = LoopFlags {
        client_tools: true,
        ..LoopFlags::default()
    };
    let has_call =
        |mode, flags| active_tools(mode, flags, false).contains(&rummy_text::parse::ToolName::Call);
    assert_eq!(
        [
            has_call(Mode::Act, offers),
            has_call(Mode::Ask, offers),
            has_call(Mode::Act, LoopFlags::default())
        ],
        [true, false, false]
    );
}

/// The `call` doc lists each offered tool as `server/tool`, its description and its
/// arguments' schema; without offers the instructions say nothing of `call`.
#[test]
fn the_call_doc_lists_the_offered_tools() {
    let offers = LoopFlags {
        client_tools: true,
        ..LoopFlags::default()
    };
    let with = instructions(
        &active_tools(Mode::Act, offers, false),
        15,
        None,
        &CommandReach::Offline,
        &offered(),
    );
    let listed: Vec<&str> = with
        .lines()
        .filter(|l| l.starts_with("- everything/"))
        .collect();
    assert_eq!(
        listed,
        [
            r#"- everything/echo: Echoes back the input. Arguments: {"properties":{"message":{"type":"string"}},"required":["message"],"type":"object"}"#,
            "- everything/time: arguments {}",
        ]
    );
    assert!(with.contains("## <call server="), "{with}");
    let without = instructions(
        &active_tools(Mode::Act, LoopFlags::default(), false),
        15,
        None,
        &CommandReach::Offline,
        &[],
    );
    assert!(!without.contains("call"), "{without}");
}

/// The listing keeps each description, each schema and the whole list within their bounds;
/// the tools past the list's bound are still named.
#[test]
fn the_listing_is_capped() {
    use crate::tools::call::{listing, DESCRIPTION_CHARS, LIST_BYTES, SCHEMA_BYTES};
    let long = "word ".repeat(200);
    let big_schema =
        json!({"properties": {"a": {"description": "x".repeat(SCHEMA_BYTES)}}, "required": ["a"]});
    let many: Vec<OfferedTool> = (0..100)
        .map(|i| OfferedTool {
            server: "s".into(),
            name: format!("t{i}"),
            description: Some(long.clone()),
            input_schema: Some(big_schema.clone()),
        })
        .collect();
    let text = listing(&many);
    let first = text.lines().next().unwrap_or_default().to_owned();
    let expected_description: String = long.trim().chars().take(DESCRIPTION_CHARS).collect();
    assert_eq!(
        first,
        format!("- s/t0: {expected_description}… Arguments: (schema too long to show) properties: a; required: a")
    );
    let last = text.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("- (not described: the list is full) "),
        "{last}"
    );
    assert!(last.ends_with(", s/t99"), "{last}");
    assert!(text.len() <= LIST_BYTES + last.len() + 1, "{}", text.len());
}

/// Accepting a call opens one visible channel for its answer, awaited and made by a client;
/// the client's answer settles it, and the log says the tool answered.
#[test]
fn an_accepted_call_opens_one_channel_for_the_answer() {
    let mut f = offering(Mode::Act);
    let path = f
        .one(r#"<call server="everything" tool="echo">{"message": "hi"}</call>"#)
        .path;
    let run = f.ctx.t.run;
    let proposal = proposals::read(&mut f.conn, run, &path).unwrap();
    let resolution = proposals::apply(&proposal, Decision::Accept(None), std::path::Path::new("/"));
    let ctx = WriteCtx {
        divisor: 2,
        now: NOW,
    };
    let recorded = proposals::record(&mut f.conn, run, &proposal, &resolution, None, ctx).unwrap();
    assert!(matches!(recorded, Recorded::Resolved(_)), "{recorded:?}");
    let at = StreamWrite { run, ctx };
    streams::await_output(&mut f.conn, at, &path, ShellRunner::Client).unwrap();
    let channel = format!("{path}_1");
    let open = f.entry(&channel).unwrap();
    assert_eq!(
        (open.state, open.visibility, open.attributes()),
        (
            State::Streaming,
            Visibility::Visible,
            json!({"tool": "everything/echo", "summary": "everything/echo", "channel": 1})
        )
    );
    streams::append_capped(&mut f.conn, at, &path, 1, "Echo: hi", 1024).unwrap();
    let end = StreamEnd::Completed {
        exit_code: 0,
        duration: None,
    };
    let settled = streams::settle(&mut f.conn, at, &path, &end).unwrap();
    let answered = f.entry(&channel).unwrap();
    assert_eq!(
        (settled, answered.state, answered.body, f.body(&path)),
        (
            vec![channel.clone()],
            State::Resolved,
            "Echo: hi".to_owned(),
            format!("called 'everything/echo': it answered. Output: {channel} (4 tokens)")
        )
    );
}
