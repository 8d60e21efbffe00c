//! The model-facing docs: the tool-doc discipline (a syntax line, two or more examples, two or more rules), rationale kept in source and never shown, only active tools documented.

use crate::tools::{
    active_tools, doc, instructions, strip_rationale, CommandReach, ToolName, TOOL_ORDER,
};
use crate::turn::dispatch::LoopFlags;
use pretty_assertions::assert_eq;
use rummy_store::run::Mode;

const RFC_2119: [&str; 3] = ["MUST", "SHOULD", "MAY"];

/// Commands in the server's sandbox without network: what the tests that are not about the
/// network assume.
const OFFLINE: CommandReach = CommandReach::Offline;

/// How one doc measures against the discipline.
#[derive(Debug, PartialEq, Eq)]
struct Shape {
    tool: ToolName,
    syntax_line: bool,
    examples_at_least_two: bool,
    rule_bullets_at_least_two: bool,
    rationale_for_every_line: bool,
}

/// The lines a model reads that need a rationale: the syntax line, examples and rule bullets.
fn needs_rationale(line: &str) -> bool {
    line.starts_with("## ") || line.starts_with("Example:") || line.starts_with("* ")
}

/// Whether every such line of the source directly follows a `<!-- why: … -->` comment.
fn every_line_has_a_rationale(source: &str) -> bool {
    let lines: Vec<&str> = source.lines().collect();
    lines.iter().enumerate().all(|(i, line)| {
        !needs_rationale(line)
            || (i > 0 && lines[i - 1].starts_with("<!-- why:") && lines[i - 1].ends_with("-->"))
    })
}

/// Every tool has a doc with a syntax line, two or more examples, two or more RFC 2119 rules, and a rationale for each line.
#[test]
fn every_doc_follows_the_discipline() {
    let got: Vec<Shape> = TOOL_ORDER
        .iter()
        .map(|&tool| {
            let source = doc(tool);
            let text = strip_rationale(source);
            let lines: Vec<&str> = text.lines().collect();
            let examples = lines.iter().filter(|l| l.starts_with("Example:")).count();
            let rules = lines
                .iter()
                .filter(|l| {
                    l.starts_with("* ") && RFC_2119.iter().any(|w| l.contains(&format!("YOU {w}")))
                })
                .count();
            Shape {
                tool,
                syntax_line: lines
                    .first()
                    .is_some_and(|l| l.starts_with(&format!("## <{tool}"))),
                examples_at_least_two: examples >= 2,
                rule_bullets_at_least_two: rules >= 2,
                rationale_for_every_line: every_line_has_a_rationale(source),
            }
        })
        .collect();
    let want: Vec<Shape> = TOOL_ORDER
        .iter()
        .map(|&tool| Shape {
            tool,
            syntax_line: true,
            examples_at_least_two: true,
            rule_bullets_at_least_two: true,
            rationale_for_every_line: true,
        })
        .collect();
    assert_eq!(got, want);
    assert!(every_line_has_a_rationale(include_str!("../preamble.md")));
}

/// The instructions show the active tools' docs in advertised order, without rationale, with the limits filled in.
#[test]
fn instructions_show_only_active_docs() {
    let tools = active_tools(Mode::Act, LoopFlags::default(), true);
    let text = instructions(&tools, 15, None, &OFFLINE, &[]);
    let all: Vec<&str> = tools.iter().map(|t| t.as_str()).collect();
    assert!(
        !text.contains("<!--") && !text.contains("-->") && !text.contains("why:"),
        "{text}"
    );
    assert!(!text.contains("[%") && !text.contains("\n\n\n"), "{text}");
    assert!(text.contains("at most 15 per turn"));
    assert!(text.contains(&format!("Tools available: {}", all.join(", "))));
    let headings: Vec<String> = text
        .lines()
        .filter_map(|l| l.strip_prefix("## <"))
        .map(|l| {
            l.split([' ', '>', '/'])
                .next()
                .unwrap_or_default()
                .to_owned()
        })
        .collect();
    assert_eq!(
        headings,
        all.iter().map(|t| (*t).to_owned()).collect::<Vec<_>>()
    );
    let ask = instructions(
        &active_tools(Mode::Ask, LoopFlags::default(), false),
        15,
        None,
        &OFFLINE,
        &[],
    );
    assert!(!ask.contains("## <sh>") && !ask.contains("## <search>"));
    assert!(ask.contains("## <env>"));
}

/// The `sh` and `env` docs say where an accepted command may write and whether it reaches the
/// network — off, or TCP to the allowed ports — and that env is read-only in every mode (ask
/// mode offers env alone); where the client runs commands they say neither.
#[test]
fn command_docs_say_what_a_command_reaches() {
    let reach_lines = |mode: Mode, reach: CommandReach| -> Vec<String> {
        instructions(
            &active_tools(mode, LoopFlags::default(), false),
            15,
            None,
            &reach,
            &[],
        )
        .lines()
        .filter(|l| l.starts_with("* It runs confined") || l.starts_with("* It is read-only"))
        .map(str::to_owned)
        .collect()
    };
    let sh =
        "* It runs confined: it writes only the project root, its HOME and a private /tmp, with";
    let env = "* It is read-only in every mode: it writes nothing but a private /tmp, with";
    let online = CommandReach::Online(vec![80, 443]);
    assert_eq!(
        [
            reach_lines(Mode::Act, CommandReach::Offline),
            reach_lines(Mode::Act, online.clone()),
            reach_lines(Mode::Ask, online),
            reach_lines(Mode::Ask, CommandReach::sandboxed(false, &[443])),
            reach_lines(Mode::Act, CommandReach::Unconfined),
        ],
        [
            vec![format!("{env} no network."), format!("{sh} no network."),],
            vec![
                format!("{env} network only by TCP to ports 80, 443."),
                format!("{sh} network only by TCP to ports 80, 443."),
            ],
            vec![format!("{env} network only by TCP to ports 80, 443.")],
            vec![format!("{env} no network.")],
            vec![],
        ]
    );
    let client = instructions(
        &active_tools(Mode::Act, LoopFlags::default(), false),
        15,
        None,
        &CommandReach::Unconfined,
        &[],
    );
    assert!(!client.contains("[%NETWORK%]"), "{client}");
}

/// Docs follow advertised order even when the caller lists tools in another; a persona is appended.
#[test]
fn order_and_persona() {
    let text = instructions(
        &[ToolName::Update, ToolName::Get],
        15,
        Some("  Be terse. "),
        &OFFLINE,
        &[],
    );
    assert!(text.contains("Tools available: get, update"));
    let get = text.find("## <get").unwrap_or(usize::MAX);
    let update = text.find("## <update").unwrap_or(0);
    assert!(get < update);
    assert!(text.ends_with("## Persona\n\nBe terse."));
}

/// The preamble teaches the workflow, not the old limit to known:// and unknown:// paths.
#[test]
fn preamble_teaches_the_workflow() {
    let text = instructions(&[ToolName::Update], 15, None, &OFFLINE, &[]);
    assert!(!text.contains("only `known://` and `unknown://`"));
    let steps: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with(|c: char| c.is_ascii_digit()))
        .map(|l| l.split(':').next().unwrap_or_default())
        .collect();
    assert_eq!(
        steps,
        vec![
            "1. Record each open question as an `unknown",
            "2. Gather",
            "3. Record what you learn as `known",
            "4. Act",
            "5. When the prompt is answered, conclude with `<update status=\"200\">the answer</update>`."
        ]
    );
}

/// Stripping removes comments, even several on a line or across lines, and the lines they leave empty.
#[test]
fn strip_rationale_cases() {
    let cases = [
        ("a\n<!-- why: x -->\nb", "a\nb"),
        ("a <!-- x --> b <!-- y -->c", "a  b c"),
        ("<!-- one\ntwo -->\nkept", "kept"),
        ("text\n\nmore", "text\n\nmore"),
    ];
    let got: Vec<String> = cases.iter().map(|(s, _)| strip_rationale(s)).collect();
    let want: Vec<String> = cases.iter().map(|(_, w)| (*w).to_owned()).collect();
    assert_eq!(got, want);
}
