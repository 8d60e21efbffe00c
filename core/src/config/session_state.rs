//! The session state's settings: whether runs keep one by default, and how much
//! must happen after a loop before the sidecar updates it.

use super::{positive, switch, ConfigError};
use std::collections::BTreeMap;

/// How runs keep their session state (`session://state`); off by default.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SessionStateSettings {
    /// `RUMMY_SESSION_STATE` (default off: an update is a model call): whether a run that does
    /// not say (`attributes.sessionState`) keeps one.
    pub enabled: bool,
    /// How much must have happened since the last update before a loop's end updates the
    /// state, `RUMMY_SESSION_MIN_TURNS` (3) and `RUMMY_SESSION_MIN_COMMANDS` (10): either is
    /// enough.
    pub thresholds: Thresholds,
}

/// After a loop, the session state is updated once this many turns or commands (a command the
/// model gave, a result each) passed since its last update.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Thresholds {
    /// Turns.
    pub min_turns: u32,
    /// Commands.
    pub min_commands: u32,
}

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds {
            min_turns: 3,
            min_commands: 10,
        }
    }
}

impl SessionStateSettings {
    /// Reads the settings; the thresholds must be whole numbers above zero.
    pub fn from_vars(vars: &BTreeMap<String, String>) -> Result<SessionStateSettings, ConfigError> {
        let defaults = Thresholds::default();
        Ok(SessionStateSettings {
            enabled: switch(vars, "RUMMY_SESSION_STATE", false)?,
            thresholds: Thresholds {
                min_turns: positive(vars, "RUMMY_SESSION_MIN_TURNS", defaults.min_turns)?,
                min_commands: positive(vars, "RUMMY_SESSION_MIN_COMMANDS", defaults.min_commands)?,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::vars;
    use super::*;
    use pretty_assertions::assert_eq;

    /// Unset, runs keep no session state and the thresholds are 3 turns or 10 commands; each
    /// setting is read, and a bad one is refused with its name.
    #[test]
    fn session_state_settings() {
        let read = |pairs: &[(&str, &str)]| {
            SessionStateSettings::from_vars(&vars(pairs)).map_err(|e| (e.name, e.reason))
        };
        assert_eq!(
            read(&[]),
            Ok(SessionStateSettings {
                enabled: false,
                thresholds: Thresholds {
                    min_turns: 3,
                    min_commands: 10
                }
            })
        );
        assert_eq!(
            read(&[
                ("RUMMY_SESSION_STATE", "1"),
                ("RUMMY_SESSION_MIN_TURNS", "1"),
                ("RUMMY_SESSION_MIN_COMMANDS", "4"),
            ]),
            Ok(SessionStateSettings {
                enabled: true,
                thresholds: Thresholds {
                    min_turns: 1,
                    min_commands: 4
                }
            })
        );
        assert_eq!(
            read(&[("RUMMY_SESSION_MIN_TURNS", "0")]),
            Err((
                "RUMMY_SESSION_MIN_TURNS".into(),
                "expected a number above zero".into()
            ))
        );
        assert_eq!(
            read(&[("RUMMY_SESSION_STATE", "maybe")]),
            Err((
                "RUMMY_SESSION_STATE".into(),
                "expected on or off (1/0, true/false, yes/no)".into()
            ))
        );
    }
}
