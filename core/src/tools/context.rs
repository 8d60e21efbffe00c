//! What a tool is dispatched with: the turn it writes in, the limits, the loop's mode and flags.
//!
//! `turn::dispatch` builds it for each command and hands it to the tool's handler; it lives
//! here, below both, because the handlers and the policy read it.

use crate::config::CommandRunner;
use crate::run::Mode;
use crate::store::entries::TurnRef;

/// Limits a dispatch enforces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DispatchLimits {
    /// Characters per estimated token.
    pub token_divisor: u32,
    /// Largest `known://` body in tokens.
    pub max_entry_tokens: u32,
}

/// The loop's flags (from its config JSON): each removes tools from the list and refuses them at dispatch.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct LoopFlags {
    /// Do not attach the project's files.
    pub no_repo: bool,
    /// No `ask_user`.
    pub no_interaction: bool,
    /// No `search`.
    pub no_web: bool,
    /// No `ask_user`, `env`, `sh`.
    pub no_proposals: bool,
}

/// Everything a dispatch needs to know about the turn and the loop.
#[derive(Debug, Clone, Copy)]
pub struct DispatchCtx {
    /// Where results are written.
    pub t: TurnRef,
    /// Size and token limits.
    pub limits: DispatchLimits,
    /// The loop's mode.
    pub mode: Mode,
    /// The loop's flags.
    pub flags: LoopFlags,
    /// The command's position among the turn's commands (stored on proposals to resume after them).
    pub command_index: usize,
    /// Whether a search backend is configured.
    pub search_enabled: bool,
    /// Who runs an accepted `sh`/`env` (the `runner` attribute of their proposals).
    pub runner: CommandRunner,
}
