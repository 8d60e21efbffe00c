//! Healer verdicts: each rule, cycles of period 1–3, repeated updates, strike streaks and abandoning.

use pretty_assertions::assert_eq;

use super::warnings::{self as w, cycle_warning, missing_update, strike};
use super::{Healer, HealerLimits, TurnFacts, Verdict};
use crate::turn::dispatch::UpdateSignal;
use rummy_text::parse::{looks_like_tool_call, parse_reply, ToolCall, ToolName};

/// The configured defaults: 3 strikes, 3 repetitions, period up to 4.
const DEFAULTS: HealerLimits = HealerLimits {
    max_strikes: 3,
    min_cycles: 3,
    max_cycle_period: 4,
};

/// Room for many strikes, so cycles can be watched without abandoning.
const PATIENT: HealerLimits = HealerLimits {
    max_strikes: 10,
    ..DEFAULTS
};

/// One turn as the executor would report it.
#[derive(Debug, Clone)]
struct Turn {
    commands: Vec<ToolCall>,
    failed: bool,
    update: Option<UpdateSignal>,
    prose: &'static str,
}

/// A command with a path.
fn cmd(name: &str, path: &str) -> ToolCall {
    ToolCall {
        name: ToolName::parse(name).unwrap_or_else(|| panic!("{name} is no tool")),
        attributes: vec![("path".to_owned(), path.to_owned())],
        body: String::new(),
    }
}

/// A turn of `commands` ending with an update of `status` (`None`: no valid status).
fn with_update(mut commands: Vec<ToolCall>, status: Option<i32>, body: &str) -> Turn {
    let written = status.map_or_else(|| "soon".to_owned(), |s| s.to_string());
    commands.push(ToolCall {
        name: ToolName::Update,
        attributes: vec![("status".to_owned(), written)],
        body: body.to_owned(),
    });
    Turn {
        commands,
        failed: false,
        update: Some(UpdateSignal {
            status: status.unwrap_or(102),
            status_given: status.is_some(),
            body: body.to_owned(),
        }),
        prose: "",
    }
}

/// A turn reading `path` and continuing with a matching update.
fn reading(path: &str) -> Turn {
    with_update(
        vec![cmd("get", path)],
        Some(102),
        &format!("reading {path}"),
    )
}

/// A turn of commands with no update.
fn without_update(commands: Vec<ToolCall>) -> Turn {
    Turn {
        commands,
        failed: false,
        update: None,
        prose: "",
    }
}

/// A turn with prose only.
fn prose(text: &'static str) -> Turn {
    Turn {
        prose: text,
        ..without_update(vec![])
    }
}

/// The same turn, with a failed action.
fn failing(turn: Turn) -> Turn {
    Turn {
        failed: true,
        ..turn
    }
}

/// The facts the executor would give for `turn`.
fn facts(turn: &Turn) -> TurnFacts<'_> {
    TurnFacts {
        commands: &turn.commands,
        any_failed: turn.failed,
        update: turn.update.as_ref(),
        prose: turn.prose,
    }
}

/// Feeds `turns` to one healer and collects the verdicts.
fn run(limits: HealerLimits, turns: &[Turn]) -> Vec<Verdict> {
    let mut healer = Healer::new(limits);
    turns
        .iter()
        .map(|turn| healer.assess(facts(turn)))
        .collect()
}

/// `turns` one after another, `n` times over.
fn times(turns: &[Turn], n: usize) -> Vec<Turn> {
    turns
        .iter()
        .cycle()
        .take(turns.len() * n)
        .cloned()
        .collect()
}

/// A clean continue.
fn go() -> Verdict {
    Verdict::Continue { warnings: vec![] }
}

/// A continue with warnings (the strike notice included).
fn warned(warnings: &[String]) -> Verdict {
    Verdict::Continue {
        warnings: warnings.to_vec(),
    }
}

/// Each rule on a fresh loop gives its verdict and exactly the warnings the model reads.
#[test]
fn single_turn_rules() {
    let first = strike(1, 3);
    let rows: Vec<(&str, Turn, Verdict)> = vec![
        (
            "200 concludes",
            with_update(vec![cmd("get", "a")], Some(200), "42"),
            Verdict::Conclude {
                status: 200,
                prose_answer: None,
                warnings: vec![],
            },
        ),
        (
            "204 concludes",
            with_update(vec![], Some(204), "none"),
            Verdict::Conclude {
                status: 204,
                prose_answer: None,
                warnings: vec![],
            },
        ),
        (
            "422 concludes",
            with_update(vec![], Some(422), "cannot"),
            Verdict::Conclude {
                status: 422,
                prose_answer: None,
                warnings: vec![],
            },
        ),
        (
            "failed action overrides 200",
            failing(with_update(vec![cmd("set", "a")], Some(200), "done")),
            warned(&[w::OVERRIDDEN.to_owned(), first.clone()]),
        ),
        ("102 continues", reading("a"), go()),
        ("a failure alone is no strike", failing(reading("a")), go()),
        (
            "update without status",
            with_update(vec![cmd("get", "a")], None, "x"),
            warned(&[w::MISSING_STATUS.to_owned(), first.clone()]),
        ),
        (
            "commands without update",
            without_update(vec![cmd("get", "a"), cmd("set", "b"), cmd("get", "c")]),
            warned(&[missing_update(&["get", "set"]), first.clone()]),
        ),
        (
            "prose is the answer",
            prose("  The port is 8080.\n"),
            Verdict::Conclude {
                status: 200,
                prose_answer: Some("The port is 8080.".to_owned()),
                warnings: vec![w::PROSE_ANSWER.to_owned()],
            },
        ),
        (
            "prose quoting a tag is an answer",
            prose("Read files with `<get path=\"a\"/>`."),
            Verdict::Conclude {
                status: 200,
                prose_answer: Some("Read files with `<get path=\"a\"/>`.".to_owned()),
                warnings: vec![w::PROSE_ANSWER.to_owned()],
            },
        ),
        (
            "mangled call is not an answer",
            prose("Checking. <|tool_call>call:get{path"),
            warned(&[w::UNREADABLE_COMMAND.to_owned(), first.clone()]),
        ),
        (
            "empty reply",
            prose(" \n "),
            warned(&[w::EMPTY_REPLY.to_owned(), first.clone()]),
        ),
    ];
    for (name, turn, expected) in rows {
        assert_eq!((name, run(DEFAULTS, &[turn])), (name, vec![expected]));
    }
}

/// Repeating one turn (period 1), two (period 2) or three (period 3) three times is a cycle strike; period 5 is beyond the limit.
#[test]
fn cycles_of_period_one_two_three() {
    let (a, b, c) = (reading("a"), reading("b"), reading("c"));
    let cycle = |period| warned(&[cycle_warning(period, 3), strike(1, 10)]);
    let cases: Vec<(&str, Vec<Turn>, Vec<Verdict>)> = vec![
        ("period 1", vec![a.clone(); 3], vec![go(), go(), cycle(1)]),
        (
            "period 2",
            times(&[a.clone(), b.clone()], 3),
            [vec![go(); 5], vec![cycle(2)]].concat(),
        ),
        (
            "period 3",
            times(&[a.clone(), b.clone(), c.clone()], 3),
            [vec![go(); 8], vec![cycle(3)]].concat(),
        ),
        (
            "period 5 not looked for",
            times(&[a.clone(), b.clone(), c, reading("d"), reading("e")], 3),
            vec![go(); 15],
        ),
        (
            "order within a turn does not matter",
            vec![
                with_update(vec![cmd("get", "x"), cmd("get", "y")], Some(102), "r"),
                with_update(vec![cmd("get", "y"), cmd("get", "x")], Some(102), "r"),
                with_update(vec![cmd("get", "x"), cmd("get", "y")], Some(102), "r"),
            ],
            vec![go(), go(), cycle(1)],
        ),
        (
            "turns without commands do not break a cycle",
            vec![a.clone(), prose("  "), a.clone(), a.clone()],
            vec![
                go(),
                warned(&[w::EMPTY_REPLY.to_owned(), strike(1, 10)]),
                go(),
                cycle(1),
            ],
        ),
    ];
    for (name, turns, expected) in cases {
        assert_eq!((name, run(PATIENT, &turns)), (name, expected));
    }
}

/// The same update text with no other command is a strike; with other commands it is progress.
#[test]
fn repeated_update_without_progress() {
    let waiting = with_update(vec![], Some(102), "waiting for tests");
    let checking = with_update(vec![], Some(102), "checking again");
    let turns = vec![
        waiting.clone(),
        waiting.clone(),
        with_update(vec![cmd("get", "log")], Some(102), "waiting for tests"),
        waiting,
        checking.clone(),
        checking,
    ];
    assert_eq!(
        run(PATIENT, &turns),
        vec![
            go(),
            warned(&[w::REPEATED_UPDATE.to_owned(), strike(1, 10)]),
            go(),
            warned(&[w::REPEATED_UPDATE.to_owned(), strike(1, 10)]),
            go(),
            warned(&[w::REPEATED_UPDATE.to_owned(), strike(1, 10)]),
        ]
    );
}

/// Strikes count only in a row: a clean turn resets the streak, and the third in a row abandons.
#[test]
fn streak_resets_then_abandons() {
    let missing = |path: &str| without_update(vec![cmd("get", path)]);
    let turns = vec![
        missing("a"),
        missing("b"),
        reading("c"),
        missing("d"),
        missing("e"),
        missing("f"),
    ];
    let warn = |tool: &str| missing_update(&[tool]);
    assert_eq!(
        run(DEFAULTS, &turns),
        vec![
            warned(&[warn("get"), strike(1, 3)]),
            warned(&[warn("get"), strike(2, 3)]),
            go(),
            warned(&[warn("get"), strike(1, 3)]),
            warned(&[warn("get"), strike(2, 3)]),
            Verdict::Abandon {
                reason: "Abandoned after 3 consecutive strikes.".to_owned(),
                warnings: vec![warn("get")],
            },
        ]
    );
}

/// A cycle kept up strikes every turn and abandons with the cycle as the reason; a conclusion resets the streak.
#[test]
fn cycle_abandons_and_conclusion_resets() {
    let a = reading("a");
    let verdicts = run(DEFAULTS, &vec![a; 5]);
    assert_eq!(
        verdicts,
        vec![
            go(),
            go(),
            warned(&[cycle_warning(1, 3), strike(1, 3)]),
            warned(&[cycle_warning(1, 3), strike(2, 3)]),
            Verdict::Abandon {
                reason: "Cyclic tool pattern (period 1, 3 repetitions)".to_owned(),
                warnings: vec![cycle_warning(1, 3)],
            },
        ]
    );

    let mut healer = Healer::new(DEFAULTS);
    let empty = prose("");
    healer.assess(facts(&empty));
    healer.assess(facts(&empty));
    let streak_before = healer.streak();
    healer.assess(facts(&prose("The answer.")));
    assert_eq!((streak_before, healer.streak()), (2, 0));
}

/// No healer text reads as a mangled call or parses into a command.
#[test]
fn healer_warnings_are_not_calls() {
    let texts = vec![
        w::OVERRIDDEN.to_owned(),
        w::MISSING_STATUS.to_owned(),
        missing_update(&["get", "set", "ask_user"]),
        w::PROSE_ANSWER.to_owned(),
        w::UNREADABLE_COMMAND.to_owned(),
        w::EMPTY_REPLY.to_owned(),
        w::REPEATED_UPDATE.to_owned(),
        cycle_warning(2, 3),
        strike(2, 3),
        w::abandoned(3),
    ];
    let flagged: Vec<&String> = texts.iter().filter(|t| looks_like_tool_call(t)).collect();
    assert_eq!(flagged, Vec::<&String>::new());
    assert_eq!(parse_reply(&texts.join("\n"), 99).commands, vec![]);
}
