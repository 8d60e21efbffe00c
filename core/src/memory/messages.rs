//! What the model reads of the project's memory: the recall block's header, the marker of a cut item, and the history lines' wording.

use rummy_store::run::StopReason;

/// The first line of a recall block: where the items come from and how far to trust them.
pub const RECALL_HEADER: &str = "Recalled for this prompt from the project's memory, its history and its other runs. It may be out of date: check what you rely on.";

/// Ends an item cut to fit the block.
pub const CUT: &str = " …[cut]";

/// How a history line says a loop ended, by its stop reason.
pub fn outcome(stop_reason: StopReason, update: Option<&str>, error: Option<&str>) -> String {
    match (stop_reason, update, error) {
        (StopReason::Concluded, Some(update), _) => format!("concluded: {update}"),
        (StopReason::Concluded, None, _) => "concluded".to_owned(),
        (StopReason::MaxTurns, _, _) => "stopped at the turn limit".to_owned(),
        (StopReason::Cancelled, _, _) => "cancelled".to_owned(),
        (StopReason::Failed, _, Some(error)) => format!("failed: {error}"),
        (StopReason::Failed, _, None) => "failed".to_owned(),
        (StopReason::Abandoned, _, _) => "abandoned, going round in circles".to_owned(),
        (StopReason::ContextFull, _, _) => "context full, the model was not called".to_owned(),
        (StopReason::Interrupted, _, _) => "interrupted by a restart".to_owned(),
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
