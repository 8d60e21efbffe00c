//! Run statuses (HTTP codes on the wire) and the transitions the store allows between them.

use serde::{Deserialize, Serialize};

/// A run's status as the HTTP code clients and the database use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(into = "i32", try_from = "i32")]
pub enum RunStatus {
    /// 100: a loop is queued and has not started.
    Queued,
    /// 102: a loop is running.
    Running,
    /// 200: idle, the last loop concluded.
    Completed,
    /// 202: waiting on a proposal.
    Proposed,
    /// 413: the context did not fit the budget.
    ContextFull,
    /// 499: cancelled by a client.
    Cancelled,
    /// 500: failed.
    Failed,
    /// 508: abandoned by the healer (strikes or a cycle).
    LoopDetected,
}

impl RunStatus {
    /// Every status, for exhaustive checks.
    pub const ALL: [RunStatus; 8] = [
        Self::Queued,
        Self::Running,
        Self::Completed,
        Self::Proposed,
        Self::ContextFull,
        Self::Cancelled,
        Self::Failed,
        Self::LoopDetected,
    ];

    /// The HTTP code of this status.
    pub fn code(self) -> i32 {
        match self {
            Self::Queued => 100,
            Self::Running => 102,
            Self::Completed => 200,
            Self::Proposed => 202,
            Self::ContextFull => 413,
            Self::Cancelled => 499,
            Self::Failed => 500,
            Self::LoopDetected => 508,
        }
    }

    /// Whether a loop is under way (queued, running or waiting on a proposal).
    pub fn is_active(self) -> bool {
        matches!(self, Self::Queued | Self::Running | Self::Proposed)
    }

    /// Whether the store lets a run go from `self` to `next` (docs/design/turns.md).
    ///
    /// The migration's `runs_status_transition` trigger encodes the same table;
    /// `store::runs` tests check the two agree for every pair.
    pub fn may_become(self, next: RunStatus) -> bool {
        use RunStatus::*;
        if self == next {
            return true;
        }
        match self {
            Queued => matches!(next, Running | Cancelled),
            Running => matches!(
                next,
                Completed | Proposed | ContextFull | Cancelled | Failed | LoopDetected
            ),
            Proposed => matches!(next, Running | Cancelled | Failed),
            Completed | ContextFull | Cancelled | Failed | LoopDetected => {
                matches!(next, Queued | Running)
            }
        }
    }
}

impl From<RunStatus> for i32 {
    fn from(status: RunStatus) -> i32 {
        status.code()
    }
}

impl TryFrom<i32> for RunStatus {
    type Error = String;

    fn try_from(code: i32) -> Result<Self, Self::Error> {
        RunStatus::ALL
            .into_iter()
            .find(|s| s.code() == code)
            .ok_or_else(|| format!("{code} is not a run status"))
    }
}

/// Why a run's last loop ended, as `stopReason` in `run/state` and `getRun`:
/// stored in the loop's result, so it survives a restart. `null` on the wire while a loop is
/// queued, running or waiting on a proposal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StopReason {
    /// The model ended the loop with a terminal `<update>` (or a prose answer): 200, 204 or 422.
    Concluded,
    /// The loop reached `RUMMY_MAX_TURNS` without concluding (the run is 200; the work may be
    /// unfinished).
    MaxTurns,
    /// A client cancelled it (499).
    Cancelled,
    /// It failed: a provider error, an undefined model, an internal error (500, with an
    /// `error://` entry saying why).
    Failed,
    /// The healer abandoned it: strikes or a cycle (508).
    Abandoned,
    /// Its context did not fit even after demotion, so the model could not be called (413).
    ContextFull,
    /// The server stopped while it ran; recovery ended it at the next start (500).
    Interrupted,
}

impl StopReason {
    /// Every reason, for catalogues and exhaustive checks.
    pub const ALL: [StopReason; 7] = [
        Self::Concluded,
        Self::MaxTurns,
        Self::Cancelled,
        Self::Failed,
        Self::Abandoned,
        Self::ContextFull,
        Self::Interrupted,
    ];

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Concluded => "concluded",
            Self::MaxTurns => "max_turns",
            Self::Cancelled => "cancelled",
            Self::Failed => "failed",
            Self::Abandoned => "abandoned",
            Self::ContextFull => "context_full",
            Self::Interrupted => "interrupted",
        }
    }

    /// What it means, for `discover` and the protocol reference.
    pub fn meaning(self) -> &'static str {
        match self {
            Self::Concluded => "the model ended the loop (its final update's status is the loop's: 200, 204 or 422)",
            Self::MaxTurns => "the loop reached RUMMY_MAX_TURNS without concluding; the run is 200 but the work may be unfinished",
            Self::Cancelled => "a client cancelled the loop (499)",
            Self::Failed => "the loop failed: provider error, undefined model or internal error (500; an error:// entry says why)",
            Self::Abandoned => "the healer abandoned the loop: repeated strikes or a cycle (508)",
            Self::ContextFull => "the context did not fit even after demotion, so the model could not be called (413)",
            Self::Interrupted => "the server stopped while the loop ran; it was ended at the next start (500)",
        }
    }

    /// Reads a wire name.
    pub fn parse(text: &str) -> Option<StopReason> {
        Self::ALL.into_iter().find(|r| r.as_str() == text)
    }
}

impl RunStatus {
    /// What the status means, for `discover` and the protocol reference.
    pub fn meaning(self) -> &'static str {
        match self {
            Self::Queued => "a loop is queued and has not started",
            Self::Running => "a loop is running",
            Self::Completed => {
                "idle: the last loop concluded or reached the turn limit (see stopReason)"
            }
            Self::Proposed => "waiting on a proposal: a client must accept, reject or error it",
            Self::ContextFull => "idle: the last loop's context did not fit the budget",
            Self::Cancelled => "idle: a client cancelled the last loop",
            Self::Failed => "idle: the last loop failed (an error:// entry says why)",
            Self::LoopDetected => "idle: the healer abandoned the last loop (strikes or a cycle)",
        }
    }
}

/// A loop's mode: `ask` may not change the user's world, `act` may propose changes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Answer questions; file-changing tools and `sh` are removed (the default: safe).
    #[default]
    Ask,
    /// Work on the project; side effects become proposals.
    Act,
}

impl Mode {
    /// The mode's wire and database name.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Ask => "ask",
            Mode::Act => "act",
        }
    }

    /// Parses `ask` or `act`.
    pub fn parse(text: &str) -> Option<Mode> {
        match text {
            "ask" => Some(Mode::Ask),
            "act" => Some(Mode::Act),
            _ => None,
        }
    }
}

/// Whether `alias` is a valid run alias: 1–128 characters of `[A-Za-z0-9_]`.
pub fn valid_alias(alias: &str) -> bool {
    (1..=128).contains(&alias.len())
        && alias
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// Turns a model alias into the stem of a server-made run alias (`gpt-4o` → `gpt_4o`).
pub fn alias_stem(model: &str) -> String {
    let stem: String = model
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .take(100)
        .collect();
    if stem.is_empty() {
        "run".to_owned()
    } else {
        stem
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Codes round-trip and unknown codes are refused.
    #[test]
    fn codes_round_trip() {
        for s in RunStatus::ALL {
            assert_eq!(RunStatus::try_from(s.code()), Ok(s));
        }
        assert!(RunStatus::try_from(201).is_err());
    }

    /// Every terminal status can start again; a queued run cannot complete without running.
    #[test]
    fn terminal_statuses_restart() {
        use RunStatus::*;
        for s in [Completed, ContextFull, Cancelled, Failed, LoopDetected] {
            assert!(s.may_become(Running) && s.may_become(Queued));
        }
        assert!(!Queued.may_become(Completed));
        assert!(!Proposed.may_become(Completed));
    }

    /// Stop reasons round-trip through their wire names, which are unique.
    #[test]
    fn stop_reasons_round_trip() {
        for r in StopReason::ALL {
            assert_eq!(StopReason::parse(r.as_str()), Some(r));
        }
        assert_eq!(StopReason::parse("done"), None);
    }

    /// Aliases are word characters only; model names become safe alias stems.
    #[test]
    fn aliases() {
        assert!(valid_alias("my_run_1"));
        assert!(!valid_alias(""));
        assert!(!valid_alias("a-b"));
        assert!(!valid_alias(&"a".repeat(129)));
        assert_eq!(alias_stem("gpt-4o.mini"), "gpt_4o_mini");
        assert_eq!(alias_stem(""), "run");
    }
}
