//! Summarisation on eviction (docs/design/memory.md): whether runs summarise what the budget evicts unless they say, and how long the summary may grow.

use super::{positive, switch, ConfigError};
use std::collections::BTreeMap;

/// The server's summarisation settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SummarySettings {
    /// `RUMMY_SUMMARIZE` (default off): runs that do not say (`attributes.summarize`) summarise
    /// on eviction — at a cost of a side task per eviction.
    pub enabled: bool,
    /// `RUMMY_SUMMARY_MAX_CHARS`: past this the summary is compressed (and never kept longer).
    pub max_chars: usize,
}

impl Default for SummarySettings {
    fn default() -> Self {
        SummarySettings {
            enabled: false,
            max_chars: 2_000,
        }
    }
}

impl SummarySettings {
    /// Reads the settings; the cap must be a whole number above zero.
    pub fn from_vars(vars: &BTreeMap<String, String>) -> Result<SummarySettings, ConfigError> {
        let defaults = SummarySettings::default();
        Ok(SummarySettings {
            enabled: switch(vars, "RUMMY_SUMMARIZE", defaults.enabled)?,
            max_chars: positive(vars, "RUMMY_SUMMARY_MAX_CHARS", defaults.max_chars)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::vars;
    use super::*;
    use pretty_assertions::assert_eq;

    /// Off by default with a 2,000-character cap; both are read, a bad value refused by name.
    #[test]
    fn summary_settings() {
        let read = |pairs: &[(&str, &str)]| {
            SummarySettings::from_vars(&vars(pairs)).map_err(|e| (e.name, e.reason))
        };
        assert_eq!(
            read(&[]),
            Ok(SummarySettings {
                enabled: false,
                max_chars: 2_000
            })
        );
        assert_eq!(
            read(&[("RUMMY_SUMMARIZE", "1"), ("RUMMY_SUMMARY_MAX_CHARS", "500")]),
            Ok(SummarySettings {
                enabled: true,
                max_chars: 500
            })
        );
        assert_eq!(
            read(&[("RUMMY_SUMMARIZE", "maybe")]).map_err(|e| e.0),
            Err("RUMMY_SUMMARIZE".into())
        );
        assert_eq!(
            read(&[("RUMMY_SUMMARY_MAX_CHARS", "0")]),
            Err((
                "RUMMY_SUMMARY_MAX_CHARS".into(),
                "expected a number above zero".into()
            ))
        );
    }
}
