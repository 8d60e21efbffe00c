//! Model-facing texts shared by every tool: refusals, validation and listings.
//!
//! Texts that belong to one tool live at the top of that tool's module.
//! Each says what happened and what to do instead; the model reads them as
//! result bodies on its next turn.

/// The body of a command whose target is too long or holds control characters.
pub const INVALID_TARGET: &str = "Invalid path: too long or contains non-printing characters";

/// A command that needs a path and has none.
pub const PATH_REQUIRED: &str = "path is required";

/// A `visibility` attribute with a value that is no visibility.
pub const BAD_VISIBILITY: &str = "visibility must be visible, summarized or archived";

/// `search` when the server has no search backend.
pub const SEARCH_NOT_CONFIGURED: &str =
    "search is not configured on this server (set RUMMY_SEARXNG_URL)";

/// `search` in a loop started with `noWeb`.
pub const NO_WEB: &str = "Rejected <search>: this loop runs without web access (noWeb)";

/// `ask_user` in a loop started with `noInteraction`.
pub const NO_INTERACTION: &str =
    "Rejected <ask_user>: this loop runs without the user (noInteraction); decide from what you can read";

/// `sh` in an ask-mode loop.
pub const ASK_SH: &str = "Rejected <sh> in ask mode";

/// `call` in ask mode.
pub const ASK_CALL: &str =
    "Rejected <call> in ask mode: the tools clients offer are called only in act mode";

/// `call` when no client offers the run a tool.
pub const NO_CLIENT_TOOLS: &str = "Rejected <call>: no client offers this run a tool";

/// Most paths a listing shows before it says how many more there are.
pub const LISTING_MAX: usize = 100;

/// An action after a failed one.
pub fn aborted(previous: &str) -> String {
    format!("Aborted — preceding {previous} failed.")
}

/// Nothing matched the target.
pub fn not_found(target: &str) -> String {
    format!("{target} not found")
}

/// A proposing tool in a loop started with `noProposals`.
pub fn no_proposals(tool: &str) -> String {
    format!("Rejected <{tool}>: this loop takes no proposals (noProposals)")
}

/// A tool the run's active skills do not allow (`allowedTools`).
pub fn not_allowed_by_skills(tool: &str, allowed: &[&str]) -> String {
    format!(
        "Rejected <{tool}>: the active skills allow only {} (allowedTools)",
        allowed.join(", ")
    )
}

/// A `set` that would change a project file in ask mode.
pub fn ask_file_edit(path: &str) -> String {
    format!("Rejected file edit to {path} in ask mode")
}

/// An `rm` of project files in ask mode.
pub fn ask_file_rm(path: &str) -> String {
    format!("Rejected file rm of {path} in ask mode")
}

/// A `cp`/`mv` into a project file in ask mode.
pub fn ask_copy_to_file(tool: &str, to: &str) -> String {
    format!("Rejected {tool} to file {to} in ask mode")
}

/// An `mv` of a project file in ask mode.
pub fn ask_file_mv(path: &str) -> String {
    format!("Rejected file mv of {path} in ask mode")
}

/// A `known://` body over the size limit (the store's gate refuses a client with the same words).
pub use rummy_store::ops::too_large;

/// What a body-less change did, for each changed entry: "summarized", `summary "kw"`, or both.
pub fn view_change(visibility: Option<&str>, summary: Option<&str>) -> String {
    match (visibility, summary) {
        (Some(v), Some(s)) => format!("{v}, summary \"{s}\""),
        (Some(v), None) => v.to_owned(),
        (None, Some(s)) => format!("summary \"{s}\""),
        (None, None) => "unchanged".to_owned(),
    }
}

/// Lines, one per item, cut after [`LISTING_MAX`] with a count of the rest.
pub fn listing(lines: impl IntoIterator<Item = String>) -> String {
    let mut shown = Vec::new();
    let mut more = 0usize;
    for line in lines {
        if shown.len() < LISTING_MAX {
            shown.push(line);
        } else {
            more += 1;
        }
    }
    if more > 0 {
        shown.push(format!("… and {more} more"));
    }
    shown.join("\n")
}
