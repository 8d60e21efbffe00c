//! Fair-use limits: runs in flight per user and per project, and calls per second
//! per connection. Each is unlimited until set.

use super::{invalid, number, ConfigError};
use crate::fair::admission::RunLimits;
use std::collections::BTreeMap;

/// The limits an admin sets in the environment; `None` is unlimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FairUse {
    /// `RUMMY_MAX_RUNS_PER_USER`: runs in flight one user may have; a new loop past it queues.
    pub max_runs_per_user: Option<u32>,
    /// `RUMMY_MAX_RUNS_PER_PROJECT`: runs in flight one project may have; a new loop past it
    /// queues.
    pub max_runs_per_project: Option<u32>,
    /// `RUMMY_MAX_REQUESTS_PER_SECOND`: calls one connection may make per second (a second's
    /// worth at once); past it a call is answered -32006 with `retryAfterMs`.
    pub max_requests_per_second: Option<u32>,
}

impl FairUse {
    /// Reads the limits; each must be a whole number above zero when set.
    pub fn from_vars(vars: &BTreeMap<String, String>) -> Result<FairUse, ConfigError> {
        Ok(FairUse {
            max_runs_per_user: limit(vars, "RUMMY_MAX_RUNS_PER_USER")?,
            max_runs_per_project: limit(vars, "RUMMY_MAX_RUNS_PER_PROJECT")?,
            max_requests_per_second: limit(vars, "RUMMY_MAX_REQUESTS_PER_SECOND")?,
        })
    }

    /// The runs-in-flight limits, as admission reads them.
    pub fn run_limits(&self) -> RunLimits {
        RunLimits {
            per_user: self.max_runs_per_user,
            per_project: self.max_runs_per_project,
        }
    }
}

/// A limit: unset (or empty) is unlimited; otherwise a whole number above zero.
fn limit(vars: &BTreeMap<String, String>, name: &str) -> Result<Option<u32>, ConfigError> {
    let Some(value) = vars.get(name).map(|v| v.trim()).filter(|v| !v.is_empty()) else {
        return Ok(None);
    };
    match number::<u32>(vars, name, 0)? {
        0 => Err(invalid(
            name,
            value,
            "expected a number above zero (leave it unset for no limit)",
        )),
        n => Ok(Some(n)),
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::vars;
    use super::*;
    use pretty_assertions::assert_eq;

    /// Every limit is off unless set; set ones must be whole numbers above zero.
    #[test]
    fn limits_are_off_until_set() {
        let read = |pairs: &[(&str, &str)]| {
            FairUse::from_vars(&vars(pairs)).map_err(|e| (e.name, e.reason))
        };
        assert_eq!(read(&[]), Ok(FairUse::default()));
        assert_eq!(
            read(&[
                ("RUMMY_MAX_RUNS_PER_USER", "2"),
                ("RUMMY_MAX_RUNS_PER_PROJECT", " 5 "),
                ("RUMMY_MAX_REQUESTS_PER_SECOND", ""),
            ]),
            Ok(FairUse {
                max_runs_per_user: Some(2),
                max_runs_per_project: Some(5),
                max_requests_per_second: None,
            })
        );
        assert_eq!(
            read(&[("RUMMY_MAX_REQUESTS_PER_SECOND", "0")]),
            Err((
                "RUMMY_MAX_REQUESTS_PER_SECOND".to_owned(),
                "expected a number above zero (leave it unset for no limit)".to_owned()
            ))
        );
        assert_eq!(
            read(&[("RUMMY_MAX_RUNS_PER_USER", "lots")]),
            Err((
                "RUMMY_MAX_RUNS_PER_USER".to_owned(),
                "expected a whole number".to_owned()
            ))
        );
    }
}
