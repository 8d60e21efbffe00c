//! What the model reads of the project's memory: the recall block's header, the marker of a cut item, and the history lines' wording.

/// The first line of a recall block: where the items come from and how far to trust them.
pub const RECALL_HEADER: &str = "Recalled for this prompt from the project's memory, its history and its other runs. It may be out of date: check what you rely on.";

/// Ends an item cut to fit the block.
pub const CUT: &str = " …[cut]";

/// How a history line says a loop ended, by its stop reason (`run::StopReason`).
pub fn outcome(stop_reason: &str, update: Option<&str>, error: Option<&str>) -> String {
    match (stop_reason, update, error) {
        ("concluded", Some(update), _) => format!("concluded: {update}"),
        ("concluded", None, _) => "concluded".to_owned(),
        ("max_turns", _, _) => "stopped at the turn limit".to_owned(),
        ("cancelled", _, _) => "cancelled".to_owned(),
        ("failed", _, Some(error)) => format!("failed: {error}"),
        ("abandoned", _, _) => "abandoned, going round in circles".to_owned(),
        ("context_full", _, _) => "context full, the model was not called".to_owned(),
        ("interrupted", _, _) => "interrupted by a restart".to_owned(),
        (other, _, _) => other.replace('_', " "),
    }
}

/// A history line: the run, the loop, its mode, the prompt's gist and how it ended.
pub fn history_line(
    run: &str,
    loop_number: i32,
    mode: &str,
    prompt: &str,
    outcome: &str,
) -> String {
    format!("{run} loop {loop_number} ({mode}): \"{prompt}\" → {outcome}")
}
