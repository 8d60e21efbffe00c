//! Running an accepted `sh`/`env` command, the parts that need no process:
//! the environment it gets ([`env`]), its output on the way into the channels ([`output`]),
//! and how the way it ended settles them ([`Finish`] → [`StreamEnd`]).
//!
//! The server runs a command as `sh -c <command>` in the project root, in a process group of
//! its own (killed whole on timeout, on `stream/cancel`, on a run's cancel and at shutdown;
//! nothing it starts outlives it), with stdin closed and the environment of [`env`]. Texts
//! the model and clients read about how a command ended are here.

pub mod env;
pub mod output;

use std::time::Duration;

/// How a stream ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StreamEnd {
    /// The producer finished with an exit code (0 = success).
    Completed {
        /// The exit code.
        exit_code: i32,
        /// How long it ran, as the producer reports it.
        duration: Option<String>,
    },
    /// The client stopped it.
    Aborted {
        /// Why.
        reason: Option<String>,
        /// How long it ran.
        duration: Option<String>,
    },
    /// The client cancelled it (clients also get `stream/cancelled`).
    Cancelled {
        /// Why.
        reason: Option<String>,
    },
    /// It could not finish: timed out, could not start, or a restart interrupted it.
    Failed {
        /// Why (the channels' outcome).
        reason: String,
        /// How long it ran, if it started.
        duration: Option<String>,
    },
}

/// A run's cancel stopped the command.
pub const RUN_CANCELLED: &str = "run cancelled";

/// Why a command ran no more.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Finish {
    /// The shell exited with this code.
    Exited(i32),
    /// The shell was killed by this signal (not by the server).
    Signalled(i32),
    /// It ran past the timeout; the server killed it.
    TimedOut(Duration),
    /// Someone stopped it (a run's cancel): the reason.
    Stopped(String),
    /// It could not be started: why.
    NotStarted(String),
    /// Waiting for it failed (the process could not be observed any more): why.
    Lost(String),
}

/// How a stream ends for a command that finished as `finish` after running `elapsed`.
pub fn end_of(finish: &Finish, elapsed: Duration) -> StreamEnd {
    let duration = Some(seconds(elapsed));
    match finish {
        Finish::Exited(code) => StreamEnd::Completed {
            exit_code: *code,
            duration,
        },
        // The shells' own convention for a command a signal ended.
        Finish::Signalled(signal) => StreamEnd::Completed {
            exit_code: 128 + signal,
            duration,
        },
        Finish::TimedOut(limit) => StreamEnd::Failed {
            reason: timed_out(*limit),
            duration,
        },
        Finish::Stopped(reason) => StreamEnd::Cancelled {
            reason: Some(reason.clone()),
        },
        Finish::NotStarted(why) => StreamEnd::Failed {
            reason: format!("could not start: {why}"),
            duration: None,
        },
        Finish::Lost(why) => StreamEnd::Failed {
            reason: format!("lost track of the command: {why}"),
            duration,
        },
    }
}

/// The reason a command that ran past `limit` fails with.
pub fn timed_out(limit: Duration) -> String {
    format!(
        "timed out after {} (RUMMY_COMMAND_TIMEOUT); its processes were killed",
        seconds(limit)
    )
}

/// A duration as people write it: `3 s`, `0.25 s`.
pub fn seconds(d: Duration) -> String {
    if d.subsec_millis() == 0 {
        format!("{} s", d.as_secs())
    } else {
        let text = format!("{:.2}", d.as_secs_f64());
        format!("{} s", text.trim_end_matches('0').trim_end_matches('.'))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    /// Each way a command can end settles its stream: an exit code (a signal as 128 + its
    /// number), a timeout or a failed start as failed with the reason, a stop as cancelled.
    #[test]
    fn endings() {
        let ran = Duration::from_millis(1500);
        let took = Some("1.5 s".to_owned());
        assert_eq!(
            [
                end_of(&Finish::Exited(3), ran),
                end_of(&Finish::Signalled(9), ran),
                end_of(&Finish::TimedOut(Duration::from_secs(5)), ran),
                end_of(&Finish::Stopped(RUN_CANCELLED.to_owned()), ran),
                end_of(&Finish::NotStarted("No such file".to_owned()), ran),
                end_of(&Finish::Lost("EINTR".to_owned()), ran),
            ],
            [
                StreamEnd::Completed {
                    exit_code: 3,
                    duration: took.clone()
                },
                StreamEnd::Completed {
                    exit_code: 137,
                    duration: took.clone()
                },
                StreamEnd::Failed {
                    reason:
                        "timed out after 5 s (RUMMY_COMMAND_TIMEOUT); its processes were killed"
                            .to_owned(),
                    duration: took.clone(),
                },
                StreamEnd::Cancelled {
                    reason: Some("run cancelled".to_owned())
                },
                StreamEnd::Failed {
                    reason: "could not start: No such file".to_owned(),
                    duration: None
                },
                StreamEnd::Failed {
                    reason: "lost track of the command: EINTR".to_owned(),
                    duration: Some("1.5 s".to_owned())
                },
            ]
        );
    }

    /// Whole seconds without decimals, fractions without trailing zeros.
    #[test]
    fn durations() {
        let cases = [0, 250, 1000, 1500, 600_000].map(|ms| seconds(Duration::from_millis(ms)));
        assert_eq!(
            cases,
            ["0 s", "0.25 s", "1 s", "1.5 s", "600 s"].map(String::from)
        );
    }
}
