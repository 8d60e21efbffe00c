//! Tests for the reply parser: table helpers shared by the test modules.

mod cases;
mod dialects;
mod fuzz;
mod healing;
mod linear;
mod props;
mod reference;
mod syntax;

use super::{parse_reply, ToolCall, ToolName};

/// The cap used where a test is not about the cap.
const NO_CAP: usize = 99;

/// An expected command.
fn call(name: &str, attributes: &[(&str, &str)], body: &str) -> ToolCall {
    ToolCall {
        name: ToolName::parse(name).unwrap_or_else(|| panic!("{name} is no tool")),
        attributes: attributes
            .iter()
            .map(|(key, value)| ((*key).to_owned(), (*value).to_owned()))
            .collect(),
        body: body.to_owned(),
    }
}

/// One row of a table: a reply and the commands and warnings it must give.
struct Case {
    /// Shown on failure.
    name: &'static str,
    /// The model's reply.
    input: &'static str,
    /// Expected commands, in order.
    commands: Vec<ToolCall>,
    /// Expected warnings, in order.
    warnings: Vec<String>,
}

/// A case that must parse cleanly.
fn clean(name: &'static str, input: &'static str, commands: Vec<ToolCall>) -> Case {
    warned(name, input, commands, vec![])
}

/// A case that must give these warnings.
fn warned(
    name: &'static str,
    input: &'static str,
    commands: Vec<ToolCall>,
    warnings: Vec<String>,
) -> Case {
    Case {
        name,
        input,
        commands,
        warnings,
    }
}

/// Parses every case and compares commands and warnings as one value.
fn check(cases: Vec<Case>) {
    for case in cases {
        let parsed = parse_reply(case.input, NO_CAP);
        assert_eq!(
            (case.name, parsed.commands, parsed.warnings),
            (case.name, case.commands, case.warnings)
        );
    }
}
