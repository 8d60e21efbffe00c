//! Judging a finished turn: continue or conclude, with the warnings the model reads next turn.
//!
//! The full healer (strikes, cycles, repeated updates) deepens this; the rules
//! here are the ones every turn needs from the start (ENGINE.md §6).

use super::dispatch::UpdateSignal;

/// What a turn did, as the verdict needs it.
#[derive(Debug, Clone, Copy)]
pub struct TurnFacts<'a> {
    /// Commands dispatched (think excluded).
    pub commands: usize,
    /// Whether any action failed.
    pub any_failed: bool,
    /// The turn's last update, if any.
    pub update: Option<&'a UpdateSignal>,
    /// Text outside tool tags.
    pub prose: &'a str,
}

/// The decision for the loop after a turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Run another turn.
    Continue {
        /// Warnings to record as `error://` entries.
        warnings: Vec<String>,
    },
    /// End the loop.
    Conclude {
        /// The loop's result status (the update's 200/204/422).
        status: i32,
        /// The answer when the model replied in prose only.
        prose_answer: Option<String>,
        /// Warnings to record.
        warnings: Vec<String>,
    },
}

/// Warning: a concluding update was overridden because an action failed.
pub const OVERRIDDEN: &str = "Overridden — actions in this turn failed. Continue with <update status=\"102\"/> until they succeed.";
/// Warning: the update had no usable status.
pub const MISSING_STATUS: &str =
    "update missing status attribute. Use status=\"102\" to continue or status=\"200\" when done.";
/// Warning: commands but no update.
pub const MISSING_UPDATE: &str =
    "Missing update (status=\"102\" to continue, status=\"200\" to conclude).";
/// Warning: prose only, taken as the answer.
pub const PROSE_ANSWER: &str =
    "Plain text response with no tool commands. Treated as final answer.";
/// Warning: nothing at all.
pub const EMPTY_REPLY: &str = "Empty reply. Respond with tool commands and end with an update.";

/// Decides whether the loop goes on after a turn.
pub fn judge(facts: TurnFacts<'_>) -> Verdict {
    if facts.commands == 0 {
        let prose = facts.prose.trim();
        if prose.is_empty() {
            return Verdict::Continue {
                warnings: vec![EMPTY_REPLY.to_owned()],
            };
        }
        return Verdict::Conclude {
            status: 200,
            prose_answer: Some(prose.to_owned()),
            warnings: vec![PROSE_ANSWER.to_owned()],
        };
    }
    let Some(update) = facts.update else {
        return Verdict::Continue {
            warnings: vec![MISSING_UPDATE.to_owned()],
        };
    };
    if !update.status_given {
        return Verdict::Continue {
            warnings: vec![MISSING_STATUS.to_owned()],
        };
    }
    match update.status {
        102 => Verdict::Continue {
            warnings: Vec::new(),
        },
        _ if facts.any_failed => Verdict::Continue {
            warnings: vec![OVERRIDDEN.to_owned()],
        },
        status => Verdict::Conclude {
            status,
            prose_answer: None,
            warnings: Vec::new(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn update(status: i32, given: bool) -> UpdateSignal {
        UpdateSignal {
            status,
            status_given: given,
            body: "x".into(),
        }
    }

    /// Each rule gives its verdict and the warning the model will read.
    #[test]
    fn verdict_per_rule() {
        let done = update(200, true);
        let going = update(102, true);
        let unknown = update(102, false);
        let no_answer = update(422, true);
        let cases: Vec<(TurnFacts<'_>, Verdict)> = vec![
            (
                TurnFacts {
                    commands: 2,
                    any_failed: false,
                    update: Some(&done),
                    prose: "",
                },
                Verdict::Conclude {
                    status: 200,
                    prose_answer: None,
                    warnings: vec![],
                },
            ),
            (
                TurnFacts {
                    commands: 1,
                    any_failed: false,
                    update: Some(&no_answer),
                    prose: "",
                },
                Verdict::Conclude {
                    status: 422,
                    prose_answer: None,
                    warnings: vec![],
                },
            ),
            (
                TurnFacts {
                    commands: 2,
                    any_failed: true,
                    update: Some(&done),
                    prose: "",
                },
                Verdict::Continue {
                    warnings: vec![OVERRIDDEN.into()],
                },
            ),
            (
                TurnFacts {
                    commands: 2,
                    any_failed: false,
                    update: Some(&going),
                    prose: "",
                },
                Verdict::Continue { warnings: vec![] },
            ),
            (
                TurnFacts {
                    commands: 1,
                    any_failed: false,
                    update: Some(&unknown),
                    prose: "",
                },
                Verdict::Continue {
                    warnings: vec![MISSING_STATUS.into()],
                },
            ),
            (
                TurnFacts {
                    commands: 1,
                    any_failed: false,
                    update: None,
                    prose: "",
                },
                Verdict::Continue {
                    warnings: vec![MISSING_UPDATE.into()],
                },
            ),
            (
                TurnFacts {
                    commands: 0,
                    any_failed: false,
                    update: None,
                    prose: " The answer is 4. ",
                },
                Verdict::Conclude {
                    status: 200,
                    prose_answer: Some("The answer is 4.".into()),
                    warnings: vec![PROSE_ANSWER.into()],
                },
            ),
            (
                TurnFacts {
                    commands: 0,
                    any_failed: false,
                    update: None,
                    prose: "  ",
                },
                Verdict::Continue {
                    warnings: vec![EMPTY_REPLY.into()],
                },
            ),
        ];
        for (facts, expected) in cases {
            assert_eq!(judge(facts), expected, "{facts:?}");
        }
    }
}
