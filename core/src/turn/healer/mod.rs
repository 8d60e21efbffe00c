//! The healer: after each turn, continue, conclude or abandon the loop, with the warnings the model reads next turn.
//!
//! One [`Healer`] lives for one loop. The turn executor feeds
//! it the facts of each turn — what was dispatched, whether an action
//! failed, the update, the prose — and acts on its [`Verdict`]. It is pure:
//! no store, no clock, only the little memory repetition needs.
//!
//! Rules, in order:
//! - no commands: prose is the answer (conclude 200, with a warning), unless
//!   it looks like a mangled command; an empty reply is a strike;
//! - commands without an update, or an update without a valid status: strike;
//! - a concluding update (200, 204, 422) concludes, unless an action failed
//!   in the same turn: then it is overridden to continue, with a strike;
//! - repetition is a strike: the same cycle of per-turn fingerprints (period
//!   ≤ `max_cycle_period`, seen `min_cycles` times), or the same update text
//!   as last turn with no other command.
//!
//! One strike at most per turn; a clean turn resets the streak;
//! `max_strikes` in a row abandon the loop (which then ends 508). A failed
//! action alone is no strike: reading a missing file and adapting is work.

pub mod warnings;

#[cfg(test)]
mod tests;

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};

use super::dispatch::UpdateSignal;
use rummy_text::parse::{looks_like_tool_call, ToolCall, ToolName};

/// Update statuses that conclude a loop.
pub const TERMINAL_STATUSES: [i32; 3] = [200, 204, 422];

/// The update status that continues a loop.
pub const CONTINUE_STATUS: i32 = 102;

/// The healer's configuration (`RUMMY_MAX_STRIKES`, `RUMMY_MIN_CYCLES`, `RUMMY_MAX_CYCLE_PERIOD`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HealerLimits {
    /// Consecutive strikes that abandon the loop (at least 1 is used).
    pub max_strikes: u32,
    /// Repetitions of a pattern that make a cycle (at least 2 are used).
    pub min_cycles: u32,
    /// Longest cycle period looked for, in turns.
    pub max_cycle_period: u32,
}

impl From<&crate::config::Limits> for HealerLimits {
    fn from(limits: &crate::config::Limits) -> Self {
        HealerLimits {
            max_strikes: limits.max_strikes,
            min_cycles: limits.min_cycles,
            max_cycle_period: limits.max_cycle_period,
        }
    }
}

/// What one turn did, as the healer needs it.
#[derive(Debug, Clone, Copy)]
pub struct TurnFacts<'a> {
    /// The commands dispatched this turn, in order, `think` excluded.
    pub commands: &'a [ToolCall],
    /// Whether any action failed (or was aborted).
    pub any_failed: bool,
    /// The turn's last update, if any.
    pub update: Option<&'a UpdateSignal>,
    /// The reply's text outside tool commands.
    pub prose: &'a str,
}

/// The decision for the loop after a turn; each carries the warnings the
/// model reads next turn (as `error://` entries).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Run another turn.
    Continue {
        /// Warnings to record.
        warnings: Vec<String>,
    },
    /// End the loop with the model's answer.
    Conclude {
        /// The loop's status: the update's 200/204/422, or 200 for a prose answer.
        status: i32,
        /// The answer when the model replied in prose only (record it as an update).
        prose_answer: Option<String>,
        /// Warnings to record.
        warnings: Vec<String>,
    },
    /// End the loop as abandoned (508): too many strikes in a row.
    Abandon {
        /// Why, for the `error://` entry and `run/state`.
        reason: String,
        /// Warnings about this last turn, to record.
        warnings: Vec<String>,
    },
}

impl Verdict {
    /// The warnings to record, whatever the decision.
    pub fn warnings(&self) -> &[String] {
        match self {
            Verdict::Continue { warnings }
            | Verdict::Conclude { warnings, .. }
            | Verdict::Abandon { warnings, .. } => warnings,
        }
    }
}

/// Judges the turns of one loop; keeps the strike streak and the recent
/// turn fingerprints between turns.
#[derive(Debug, Clone)]
pub struct Healer {
    /// The configured limits.
    limits: HealerLimits,
    /// Strikes in a row so far.
    streak: u32,
    /// Fingerprints of the latest turns that had commands, oldest first,
    /// only as many as the longest cycle needs.
    history: Vec<u64>,
    /// The text of the last update seen, for the repeated-update rule.
    last_update: Option<String>,
}

impl Healer {
    /// A healer for a new loop.
    pub fn new(limits: HealerLimits) -> Self {
        Healer {
            limits,
            streak: 0,
            history: Vec::new(),
            last_update: None,
        }
    }

    /// The current number of strikes in a row.
    pub fn streak(&self) -> u32 {
        self.streak
    }

    /// Judges one turn and remembers what repetition needs.
    pub fn assess(&mut self, facts: TurnFacts<'_>) -> Verdict {
        let mut notices = Vec::new();
        let mut cycle = None;
        if facts.commands.is_empty() {
            let prose = facts.prose.trim();
            if prose.is_empty() {
                notices.push(warnings::EMPTY_REPLY.to_owned());
            } else if looks_like_tool_call(prose) {
                notices.push(warnings::UNREADABLE_COMMAND.to_owned());
            } else {
                self.streak = 0;
                return Verdict::Conclude {
                    status: 200,
                    prose_answer: Some(prose.to_owned()),
                    warnings: vec![warnings::PROSE_ANSWER.to_owned()],
                };
            }
        } else {
            match facts.update {
                None => notices.push(warnings::missing_update(&tool_names(facts.commands))),
                Some(update) if !update.status_given => {
                    notices.push(warnings::MISSING_STATUS.to_owned());
                }
                Some(update) if update.status == CONTINUE_STATUS => {}
                Some(update) if TERMINAL_STATUSES.contains(&update.status) => {
                    if !facts.any_failed {
                        self.streak = 0;
                        return Verdict::Conclude {
                            status: update.status,
                            prose_answer: None,
                            warnings: Vec::new(),
                        };
                    }
                    notices.push(warnings::OVERRIDDEN.to_owned());
                }
                Some(_) => notices.push(warnings::MISSING_STATUS.to_owned()),
            }
            if let Some(update) = facts.update {
                if self.repeats_update(update, facts.commands) {
                    notices.push(warnings::REPEATED_UPDATE.to_owned());
                }
            }
            cycle = self.record_and_detect(facts.commands);
            if let Some((period, repetitions)) = cycle {
                notices.push(warnings::cycle_warning(period, repetitions));
            }
        }
        // Every rule that warns above is a strike; one per turn at most.
        if notices.is_empty() {
            self.streak = 0;
            return Verdict::Continue { warnings: notices };
        }
        self.streak += 1;
        let max_strikes = self.limits.max_strikes.max(1);
        if self.streak >= max_strikes {
            let reason = match cycle {
                Some((period, repetitions)) => warnings::cycle_reason(period, repetitions),
                None => warnings::abandoned(self.streak),
            };
            return Verdict::Abandon {
                reason,
                warnings: notices,
            };
        }
        notices.push(warnings::strike(self.streak, max_strikes));
        Verdict::Continue { warnings: notices }
    }

    /// Whether `update` repeats the last update's text with no other
    /// command beside it; remembers its text either way.
    fn repeats_update(&mut self, update: &UpdateSignal, commands: &[ToolCall]) -> bool {
        let text = update.body.trim();
        let progress = commands
            .iter()
            .any(|command| command.name != ToolName::Update);
        let repeated = !progress && self.last_update.as_deref() == Some(text);
        self.last_update = Some(text.to_owned());
        repeated
    }

    /// Adds this turn's fingerprint and returns the shortest cycle the
    /// latest turns now form, as (period, repetitions).
    fn record_and_detect(&mut self, commands: &[ToolCall]) -> Option<(usize, usize)> {
        let repetitions = usize::try_from(self.limits.min_cycles.max(2)).unwrap_or(usize::MAX);
        let longest = usize::try_from(self.limits.max_cycle_period).unwrap_or(usize::MAX);
        let keep = longest.saturating_mul(repetitions);
        self.history.push(fingerprint(commands));
        if self.history.len() > keep {
            let excess = self.history.len() - keep;
            self.history.drain(..excess);
        }
        (1..=longest)
            .take_while(|period| period * repetitions <= self.history.len())
            .find(|&period| {
                let window = &self.history[self.history.len() - period * repetitions..];
                window
                    .chunks(period)
                    .all(|chunk| chunk == &window[..period])
            })
            .map(|period| (period, repetitions))
    }
}

/// The distinct tool names of `commands`, in order of first use.
fn tool_names(commands: &[ToolCall]) -> Vec<&'static str> {
    let mut names: Vec<&'static str> = Vec::new();
    for command in commands {
        if !names.contains(&command.name.as_str()) {
            names.push(command.name.as_str());
        }
    }
    names
}

/// A turn's fingerprint: the sorted canonical strings of its commands
/// (name, attributes sorted, body), hashed. Order within a turn does not
/// matter; any change to a command does. Only compared within one loop's
/// memory, so the std hasher's unspecified algorithm is fine.
fn fingerprint(commands: &[ToolCall]) -> u64 {
    let mut canonical: Vec<String> = commands
        .iter()
        .map(|command| {
            let mut attributes: Vec<String> = command
                .attributes
                .iter()
                .map(|(key, value)| format!("{key}\u{1f}{value}"))
                .collect();
            attributes.sort_unstable();
            format!(
                "{}\u{1e}{}\u{1e}{}",
                command.name,
                attributes.join("\u{1d}"),
                command.body
            )
        })
        .collect();
    canonical.sort_unstable();
    let mut hasher = DefaultHasher::new();
    canonical.hash(&mut hasher);
    hasher.finish()
}
