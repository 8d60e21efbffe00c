//! Dispatch rules: the tool list per mode and flags, refusals at dispatch, target validation, aborts, lifecycle signals, and search.

use super::{fixture_with, seen, Seen, APP};
use crate::tools::{active_tools, ToolName};
use crate::turn::dispatch::LoopFlags;
use pretty_assertions::assert_eq;
use rummy_store::entry::State::{Failed, Resolved};
use rummy_store::entry::Visibility;
use rummy_store::flags::RunFlags;
use rummy_store::run::Mode;
use serde_json::json;

const NO_FLAGS: LoopFlags = LoopFlags {
    client_tools: false,
    no_repo: false,
    no_interaction: false,
    no_web: false,
    no_proposals: false,
    skill_tools: crate::tools::context::SkillTools::ALL,
};

/// Mode, flags and the search backend decide the advertised tools, always in the same order.
#[test]
fn active_tools_per_mode_and_flags() {
    let flags = |f: fn(&mut LoopFlags)| {
        let mut flags = NO_FLAGS;
        f(&mut flags);
        flags
    };
    let names = |tools: Vec<ToolName>| tools.into_iter().map(ToolName::as_str).collect();
    let cases: Vec<(&str, Vec<&str>)> = vec![
        ("act", names(active_tools(Mode::Act, NO_FLAGS, false))),
        ("act+search", names(active_tools(Mode::Act, NO_FLAGS, true))),
        ("ask+search", names(active_tools(Mode::Ask, NO_FLAGS, true))),
        (
            "noInteraction",
            names(active_tools(
                Mode::Act,
                flags(|f| f.no_interaction = true),
                true,
            )),
        ),
        (
            "noWeb",
            names(active_tools(Mode::Act, flags(|f| f.no_web = true), true)),
        ),
        (
            "noProposals",
            names(active_tools(
                Mode::Act,
                flags(|f| f.no_proposals = true),
                false,
            )),
        ),
    ];
    assert_eq!(
        cases,
        vec![
            (
                "act",
                vec!["get", "env", "think", "set", "cp", "mv", "rm", "sh", "update", "ask_user"]
            ),
            (
                "act+search",
                vec![
                    "get", "search", "env", "think", "set", "cp", "mv", "rm", "sh", "update",
                    "ask_user"
                ]
            ),
            (
                "ask+search",
                vec![
                    "get", "search", "env", "think", "set", "cp", "mv", "rm", "update", "ask_user"
                ]
            ),
            (
                "noInteraction",
                vec!["get", "search", "env", "think", "set", "cp", "mv", "rm", "sh", "update"]
            ),
            (
                "noWeb",
                vec!["get", "env", "think", "set", "cp", "mv", "rm", "sh", "update", "ask_user"]
            ),
            (
                "noProposals",
                vec!["get", "think", "set", "cp", "mv", "rm", "update"]
            ),
        ]
    );
}

/// Active skills' `allowedTools` narrow the advertised tools to those every restricting skill
/// lists, lifecycle tools kept, and refuse the others with the list the model may use.
#[test]
fn skills_narrow_the_tools() {
    use crate::tools::context::SkillTools;
    use crate::tools::policy::{tool_refusal, Refused};
    use rummy_store::entry::FailureKind;
    let review = json!({"name": "review", "allowedTools": ["get", "env", "sh"]});
    let narrower = json!({"name": "quiet", "allowedTools": ["get", "env"]});
    let free = json!({"name": "style"});
    let flags = |skills: &[serde_json::Value]| LoopFlags {
        skill_tools: SkillTools::of_attributes(skills),
        ..NO_FLAGS
    };
    assert_eq!(
        (
            active_tools(Mode::Act, flags(std::slice::from_ref(&free)), false),
            active_tools(Mode::Act, flags(&[review.clone(), free]), false),
            active_tools(Mode::Act, flags(&[review.clone(), narrower]), false),
            active_tools(Mode::Ask, flags(std::slice::from_ref(&review)), false),
        ),
        (
            active_tools(Mode::Act, NO_FLAGS, false),
            vec![
                ToolName::Get,
                ToolName::Env,
                ToolName::Think,
                ToolName::Sh,
                ToolName::Update
            ],
            vec![
                ToolName::Get,
                ToolName::Env,
                ToolName::Think,
                ToolName::Update
            ],
            vec![
                ToolName::Get,
                ToolName::Env,
                ToolName::Think,
                ToolName::Update
            ],
        )
    );
    assert_eq!(
        (
            tool_refusal(Mode::Act, flags(std::slice::from_ref(&review)), false, ToolName::Set),
            tool_refusal(Mode::Act, flags(std::slice::from_ref(&review)), false, ToolName::Update),
            tool_refusal(Mode::Ask, flags(&[review]), false, ToolName::Sh),
        ),
        (
            Some(Refused {
                outcome: FailureKind::Permission,
                reason: "Rejected <set>: the active skills allow only get, env, think, sh, update (allowedTools)".into(),
            }),
            None,
            Some(Refused {
                outcome: FailureKind::Permission,
                reason: "Rejected <sh> in ask mode".into(),
            }),
        )
    );
}

/// A loop's tool flags are its run flags' (missing ones false).
#[test]
fn loop_flags_from_config() {
    let flags = LoopFlags::from(&RunFlags::parse(
        r#"{"noWeb": true, "noProposals": true, "noRepo": false, "other": 1}"#,
    ));
    assert_eq!(
        flags,
        LoopFlags {
            no_web: true,
            no_proposals: true,
            ..NO_FLAGS
        }
    );
}

/// Tools the loop does not offer, and file changes in ask mode, are refused with a visible reason and not run.
#[test]
fn refusals_by_mode_and_flags() {
    let flags = |f: fn(&mut LoopFlags)| {
        let mut flags = NO_FLAGS;
        f(&mut flags);
        flags
    };
    let perm = |path: &str, body: &str| seen(path, Failed, Some("permission"), body);
    let cases: Vec<(Mode, LoopFlags, bool, &str, Seen)> = vec![
        (Mode::Ask, NO_FLAGS, false, "<sh>rm -rf /</sh>", perm("sh://turn_1/rm%20-rf%20%2F", "Rejected <sh> in ask mode")),
        (
            Mode::Ask,
            NO_FLAGS,
            false,
            r#"<set path="src/app.js" search="3000" replace="1"/>"#,
            perm("set://turn_1/src%2Fapp.js", "Rejected file edit to src/app.js in ask mode"),
        ),
        (
            Mode::Ask,
            NO_FLAGS,
            false,
            "<set path=\"src/new.js\">x</set>",
            perm("set://turn_1/src%2Fnew.js", "Rejected file edit to src/new.js in ask mode"),
        ),
        (Mode::Ask, NO_FLAGS, false, r#"<rm path="src/*.js"/>"#, perm("rm://turn_1/src%2F*.js", "Rejected file rm of src/*.js in ask mode")),
        (
            Mode::Ask,
            NO_FLAGS,
            false,
            "<cp path=\"known://port\">port.txt</cp>",
            perm("cp://turn_1/known%3A%2F%2Fport", "Rejected cp to file port.txt in ask mode"),
        ),
        (
            Mode::Ask,
            NO_FLAGS,
            false,
            "<mv path=\"src/app.js\" to=\"src/main.js\"/>",
            perm("mv://turn_1/src%2Fapp.js", "Rejected mv to file src/main.js in ask mode"),
        ),
        (
            Mode::Ask,
            NO_FLAGS,
            false,
            "<mv path=\"src/app.js\" to=\"known://app\"/>",
            perm("mv://turn_1/src%2Fapp.js", "Rejected file mv of src/app.js in ask mode"),
        ),
        (
            Mode::Act,
            flags(|f| f.no_interaction = true),
            false,
            r#"<ask_user question="Which?">a; b</ask_user>"#,
            perm(
                "ask_user://turn_1/Which%3F",
                "Rejected <ask_user>: this loop runs without the user (noInteraction); decide from what you can read",
            ),
        ),
        (
            Mode::Act,
            flags(|f| f.no_proposals = true),
            false,
            "<env>ls</env>",
            perm("env://turn_1/ls", "Rejected <env>: this loop takes no proposals (noProposals)"),
        ),
        (
            Mode::Act,
            flags(|f| f.no_proposals = true),
            false,
            "<sh>make</sh>",
            perm("sh://turn_1/make", "Rejected <sh>: this loop takes no proposals (noProposals)"),
        ),
        (
            Mode::Act,
            flags(|f| f.no_web = true),
            true,
            "<search>rust</search>",
            perm("search://turn_1/rust", "Rejected <search>: this loop runs without web access (noWeb)"),
        ),
        (
            Mode::Act,
            NO_FLAGS,
            false,
            "<search>rust</search>",
            seen(
                "search://turn_1/rust",
                Failed,
                Some("501"),
                "search is not configured on this server (set RUMMY_SEARXNG_URL)",
            ),
        ),
    ];
    let mut got = Vec::new();
    let mut want = Vec::new();
    for (mode, flags, search, reply, expected) in cases {
        let mut f = fixture_with(mode, flags, search);
        let result = f.one(reply);
        let untouched = (
            f.body("src/app.js"),
            f.entry("src/main.js").is_some(),
            f.entry("known://app").is_some(),
        );
        got.push((reply, result, untouched));
        want.push((reply, expected, (APP.to_owned(), false, false)));
    }
    assert_eq!(got, want);
}

/// Ask mode still writes and removes scheme entries and changes file visibility.
#[test]
fn ask_mode_keeps_scheme_writes() {
    let mut f = fixture_with(Mode::Ask, NO_FLAGS, false);
    let results = f.reply(concat!(
        "<set path=\"known://db\">Postgres</set>",
        r#"<set path="src/app.js" visibility="visible"/>"#,
        r#"<get path="src/util.js"/>"#,
        r#"<cp path="known://db">known://db2</cp>"#,
        r#"<rm path="known://db"/>"#,
    ));
    let states: Vec<_> = results
        .iter()
        .map(|s| (s.state, s.outcome.clone()))
        .collect();
    assert_eq!(states, vec![(Resolved, None); 5]);
    assert_eq!(
        f.entry("src/app.js").unwrap().visibility,
        Visibility::Visible
    );
}
