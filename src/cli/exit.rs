//! The exit codes of `rummy` (documented in `rummy --help` and the README).

use rummy_client::results::StopReason;
use std::process::ExitCode;

/// How a command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// 0: done; for a run, it concluded (200).
    Ok = 0,
    /// 1: something failed on this side (I/O, the server could not start).
    Failure = 1,
    /// 2: the command line was wrong.
    Usage = 2,
    /// 3: the server could not be reached, or the connection was lost and retrying failed.
    Connection = 3,
    /// 4: the server refused a call (no such run, a name taken, …), or no pending proposal
    /// matches what `approve` or `reject` was given.
    Refused = 4,
    /// 5: the run failed (500).
    RunFailed = 5,
    /// 6: the run was abandoned: it went round in circles (508).
    Abandoned = 6,
    /// 7: the run's context was full (413).
    ContextFull = 7,
    /// 8: the run was cancelled (499).
    Cancelled = 8,
    /// 9: the run stopped at the turn limit (`RUMMY_MAX_TURNS`) without concluding.
    MaxTurns = 9,
    /// 10: the command left while the run waits on a proposal ([q]uit, or no answer on stdin).
    Waiting = 10,
    /// 11: the server does not allow this token: unknown, revoked or expired, none given where
    /// one is needed, or one that does not open this project or allow this call.
    NotAllowed = 11,
    /// 12: `cancel` found the run had already ended: nothing was cancelled.
    AlreadyEnded = 12,
    /// 130: interrupted (Ctrl-C) before the run ended.
    Interrupted = 130,
}

impl Exit {
    /// The exit code for a run that ended with `status` (and, when the server says, why).
    pub fn of_run(status: i64, stop_reason: Option<StopReason>) -> Exit {
        match (status, stop_reason) {
            (_, Some(StopReason::MaxTurns)) => Exit::MaxTurns,
            (200, _) => Exit::Ok,
            (413, _) => Exit::ContextFull,
            (499, _) => Exit::Cancelled,
            (508, _) => Exit::Abandoned,
            (202, _) => Exit::Waiting,
            _ => Exit::RunFailed,
        }
    }
}

impl From<Exit> for ExitCode {
    fn from(exit: Exit) -> ExitCode {
        ExitCode::from(exit as u8)
    }
}

#[cfg(test)]
mod tests {
    use super::{Exit, StopReason};
    use pretty_assertions::assert_eq;

    /// Each final status has its own code, and the turn limit wins over the status.
    #[test]
    fn run_statuses_map_to_distinct_codes() {
        let codes: Vec<u8> = [
            (200, None),
            (413, None),
            (499, None),
            (500, None),
            (508, None),
            (200, Some(StopReason::MaxTurns)),
            (202, None),
        ]
        .into_iter()
        .map(|(status, reason)| Exit::of_run(status, reason) as u8)
        .collect();
        assert_eq!(codes, vec![0, 7, 8, 5, 6, 9, 10]);
    }
}
