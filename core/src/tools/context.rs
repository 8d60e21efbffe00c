//! What a tool is dispatched with: the turn it writes in, the limits, the loop's mode and flags.
//!
//! `turn::dispatch` builds it for each command and hands it to the tool's handler; it lives
//! here, below both, because the handlers and the policy read it.

use crate::config::ShellRunner;
use rummy_store::entries::{TurnRef, ViewRow};
use rummy_store::flags::RunFlags;
use rummy_store::run::Mode;
use rummy_store::skill;
use rummy_text::parse::ToolName;

/// Limits a dispatch enforces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DispatchLimits {
    /// Characters per estimated token.
    pub token_divisor: u32,
    /// Largest `known://` body in tokens.
    pub max_entry_tokens: u32,
    /// What each command's `run/state` is held to.
    pub bounds: crate::wire::bounded::Bounds,
}

/// The loop's tool flags (from its [`RunFlags`]), and the tools its run's active skills allow:
/// each removes tools from the list and refuses them at dispatch.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LoopFlags {
    /// Do not attach the project's files.
    pub no_repo: bool,
    /// No `ask_user`.
    pub no_interaction: bool,
    /// No `search`.
    pub no_web: bool,
    /// No `ask_user`, `env`, `sh`.
    pub no_proposals: bool,
    /// The tools the run's active skills allow (`allowedTools`): read from the context, not
    /// the flags.
    pub skill_tools: SkillTools,
    /// Whether a client offers the run tools (`tools/offer`), which `call` calls: read from
    /// the offers as the turn starts, not the flags.
    pub client_tools: bool,
}

impl From<&RunFlags> for LoopFlags {
    fn from(flags: &RunFlags) -> Self {
        LoopFlags {
            no_repo: flags.no_repo.unwrap_or(false),
            no_interaction: flags.no_interaction.unwrap_or(false),
            no_web: flags.no_web.unwrap_or(false),
            no_proposals: flags.no_proposals.unwrap_or(false),
            skill_tools: SkillTools::ALL,
            client_tools: false,
        }
    }
}

/// The tools a run's active skills leave its loop (`allowedTools`), as a set over
/// [`super::TOOL_ORDER`]: every tool unless a skill restricts them, and the lifecycle tools
/// (`update`, `think`) always — a loop cannot end without `update`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SkillTools {
    /// Bit `i`: `TOOL_ORDER[i]` is allowed.
    allowed: u16,
}

impl Default for SkillTools {
    fn default() -> Self {
        SkillTools::ALL
    }
}

impl SkillTools {
    /// No restriction.
    pub const ALL: SkillTools = SkillTools { allowed: u16::MAX };

    /// The lifecycle tools and `names`.
    pub fn allowing<S: AsRef<str>>(names: &[S]) -> SkillTools {
        let allowed = super::TOOL_ORDER
            .iter()
            .enumerate()
            .filter(|(_, tool)| {
                super::LIFECYCLE.contains(tool) || names.iter().any(|n| n.as_ref() == tool.as_str())
            })
            .fold(0u16, |mask, (i, _)| mask | (1 << i));
        SkillTools { allowed }
    }

    /// What the active skills among a turn's context rows allow: `skill://` rows the model
    /// reads (the rows are the context's, archived ones left out).
    pub fn of_rows(rows: &[ViewRow]) -> SkillTools {
        let attributes: Vec<serde_json::Value> = rows
            .iter()
            .filter(|r| {
                r.scheme.as_deref() == Some("skill") && r.attributes.contains("allowedTools")
            })
            .filter_map(|r| serde_json::from_str(&r.attributes).ok())
            .collect();
        SkillTools::of_attributes(&attributes)
    }

    /// What active skills with these attributes allow.
    pub fn of_attributes(attributes: &[serde_json::Value]) -> SkillTools {
        match skill::allowed_tools(attributes) {
            Some(names) => SkillTools::allowing(&names),
            None => SkillTools::ALL,
        }
    }

    /// Whether `tool` is allowed.
    pub fn allows(self, tool: ToolName) -> bool {
        super::TOOL_ORDER
            .iter()
            .position(|t| *t == tool)
            .is_some_and(|i| self.allowed & (1 << i) != 0)
    }

    /// The allowed tools, in advertised order.
    pub fn names(self) -> Vec<&'static str> {
        super::TOOL_ORDER
            .iter()
            .copied()
            .filter(|t| self.allows(*t))
            .map(ToolName::as_str)
            .collect()
    }
}

/// Everything a dispatch needs to know about the turn and the loop.
#[derive(Debug, Clone)]
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
    pub runner: ShellRunner,
    /// The tools clients offer the run as the turn starts, which `call` may call.
    pub client_tools: std::sync::Arc<[rummy_protocol::params::OfferedTool]>,
    /// The domains the model's `get` of a URL fetches from without asking, when its web fetch
    /// is on for this loop (the server allows it, the project lists domains, no `noWeb`);
    /// `None`: a URL's `get` reads the stored entry alone.
    pub web_domains: Option<std::sync::Arc<[String]>>,
}
