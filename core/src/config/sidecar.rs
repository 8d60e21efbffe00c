//! The sidecar's settings: which model side tasks go to, how long one may take, and how long its reply may be.

use super::{invalid, positive, ConfigError};
use std::collections::BTreeMap;

/// How side tasks are called.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SidecarSettings {
    /// `RUMMY_SIDECAR_MODEL`: the model alias side tasks go to; `None`: the model of the loop
    /// that caused the task.
    pub model: Option<String>,
    /// `RUMMY_SIDECAR_TIMEOUT` in ms: the longest a side task may take (its caller — a turn —
    /// never waits longer; past it the caller takes its fallback).
    pub timeout_ms: u64,
    /// `RUMMY_SIDECAR_MAX_TOKENS`: the reply cap of a side task that names none (never above
    /// `RUMMY_MAX_OUTPUT_TOKENS` when that is set).
    pub max_tokens: u32,
}

impl Default for SidecarSettings {
    fn default() -> Self {
        SidecarSettings {
            model: None,
            timeout_ms: 30_000,
            max_tokens: 1_024,
        }
    }
}

impl SidecarSettings {
    /// Reads the settings; the time limit and the token cap must be whole numbers above zero,
    /// the model an alias without spaces.
    pub fn from_vars(vars: &BTreeMap<String, String>) -> Result<SidecarSettings, ConfigError> {
        let defaults = SidecarSettings::default();
        let model = match vars
            .get("RUMMY_SIDECAR_MODEL")
            .map(|v| v.trim())
            .filter(|v| !v.is_empty())
        {
            None => None,
            Some(alias) if alias.contains(char::is_whitespace) => {
                return Err(invalid(
                    "RUMMY_SIDECAR_MODEL",
                    alias,
                    "expected a model alias",
                ))
            }
            Some(alias) => Some(alias.to_owned()),
        };
        Ok(SidecarSettings {
            model,
            timeout_ms: positive(vars, "RUMMY_SIDECAR_TIMEOUT", defaults.timeout_ms)?,
            max_tokens: positive(vars, "RUMMY_SIDECAR_MAX_TOKENS", defaults.max_tokens)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::vars;
    use super::*;
    use pretty_assertions::assert_eq;

    /// Unset, side tasks go to the loop's own model within 30 s and 1,024 tokens; each setting
    /// is read, and a bad one is refused with its name.
    #[test]
    fn sidecar_settings() {
        let read = |pairs: &[(&str, &str)]| {
            SidecarSettings::from_vars(&vars(pairs)).map_err(|e| (e.name, e.reason))
        };
        assert_eq!(read(&[]), Ok(SidecarSettings::default()));
        assert_eq!(
            SidecarSettings::default(),
            SidecarSettings {
                model: None,
                timeout_ms: 30_000,
                max_tokens: 1_024
            }
        );
        assert_eq!(
            read(&[
                ("RUMMY_SIDECAR_MODEL", " side "),
                ("RUMMY_SIDECAR_TIMEOUT", "5000"),
                ("RUMMY_SIDECAR_MAX_TOKENS", "300"),
            ]),
            Ok(SidecarSettings {
                model: Some("side".into()),
                timeout_ms: 5_000,
                max_tokens: 300
            })
        );
        assert_eq!(
            read(&[("RUMMY_SIDECAR_TIMEOUT", "0")]),
            Err((
                "RUMMY_SIDECAR_TIMEOUT".into(),
                "expected a number above zero".into()
            ))
        );
        assert_eq!(
            read(&[("RUMMY_SIDECAR_MODEL", "two words")]),
            Err((
                "RUMMY_SIDECAR_MODEL".into(),
                "expected a model alias".into()
            ))
        );
    }
}
