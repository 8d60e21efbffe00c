//! Every model-facing text the referee produces, in one place.
//!
//! The model reads these on its next turn as `error://` entries, so each
//! says what happened and what to do instead. None quotes a tool tag or a
//! native-call marker: a notice must never itself look like a mangled
//! command, and the tool docs already teach the syntax.

/// A concluding update was overridden because an action in the same turn failed.
pub const OVERRIDDEN: &str = "Overridden — an action in this turn failed, so the loop continues. Deal with the failure first, then conclude with an update with status=\"200\".";

/// The update had no valid status.
pub const MISSING_STATUS: &str = "The update had no valid status. Use status=\"102\" to continue, or status=\"200\" (204, 422) to conclude.";

/// Commands but no update; `{tools}` lists them.
pub const MISSING_UPDATE: &str = "Missing update. Tools used: {tools}. End every turn with an update: status=\"102\" to continue, status=\"200\" when done.";

/// Prose only, taken as the final answer.
pub const PROSE_ANSWER: &str =
    "Plain text response with no tool commands. Treated as final answer.";

/// Prose that looks like a command that could not be read (alone, or beside commands that ran).
pub const UNREADABLE_COMMAND: &str = "Part of your reply looks like a tool command that could not be read, so it was not run. Write commands as the XML tool tags listed above, and end with an update.";

/// Nothing at all: no commands and no prose.
pub const EMPTY_REPLY: &str = "Empty reply: no tool commands and no answer. Act with tool commands and end with an update (status=\"102\" to continue, status=\"200\" when done).";

/// The same update text as last turn, and no other command.
pub const REPEATED_UPDATE: &str = "Same update as last turn and no other command: the work is stuck or done. Take a different action, or conclude with status=\"200\".";

/// The last turns repeat one pattern of commands; also the abandon reason.
pub const CYCLE: &str = "Cyclic tool pattern (period {period}, {repetitions} repetitions)";

/// Advice added to the cycle warning the model reads.
pub const CYCLE_ADVICE: &str =
    ": the last turns repeat the same commands. Take a different action, or conclude.";

/// How close the loop is to being abandoned.
pub const STRIKE: &str =
    "Strike {count} of {max}: the loop is abandoned after {max} consecutive turns like this.";

/// The abandon reason when no cycle explains it.
pub const ABANDONED: &str = "Abandoned after {count} consecutive strikes.";

/// Replaces each `{key}` in `template` with its value.
fn fill(template: &str, values: &[(&str, &str)]) -> String {
    let mut out = template.to_owned();
    for (key, value) in values {
        out = out.replace(&format!("{{{key}}}"), value);
    }
    out
}

/// The warning for commands `tools` sent without an update.
pub fn missing_update(tools: &[&str]) -> String {
    fill(MISSING_UPDATE, &[("tools", &tools.join(", "))])
}

/// The reason for a cycle of `period` turns seen `repetitions` times.
pub fn cycle_reason(period: usize, repetitions: usize) -> String {
    fill(
        CYCLE,
        &[
            ("period", &period.to_string()),
            ("repetitions", &repetitions.to_string()),
        ],
    )
}

/// The warning the model reads for that cycle.
pub fn cycle_warning(period: usize, repetitions: usize) -> String {
    cycle_reason(period, repetitions) + CYCLE_ADVICE
}

/// The notice for strike `count` of `max`.
pub fn strike(count: u32, max: u32) -> String {
    fill(
        STRIKE,
        &[("count", &count.to_string()), ("max", &max.to_string())],
    )
}

/// The abandon reason after `count` strikes in a row.
pub fn abandoned(count: u32) -> String {
    fill(ABANDONED, &[("count", &count.to_string())])
}
