//! Memory settings: whether a loop's first turn recalls what the project
//! remembers, how much it may bring back, and the two steps that cost a model call — re-ranking
//! the recall and consolidating a loop's facts into memory. Recall is lexical (the full-text
//! index, no model call), so it is on unless turned off; the other two are off unless turned
//! on. A run's `recall`, `recallRerank` and `consolidate` attributes override them.

use super::{positive, switch, ConfigError};
use std::collections::BTreeMap;

/// How recall runs on a loop's first turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecallSettings {
    /// `RUMMY_RECALL` (on): recall on a loop's first turn, unless the run's `recall` attribute
    /// says otherwise.
    pub enabled: bool,
    /// `RUMMY_RECALL_MAX_CANDIDATES` (40): entries the full-text index may bring back to be
    /// scored.
    pub max_candidates: u32,
    /// `RUMMY_RECALL_MAX_INJECTED` (6): items the block may hold.
    pub max_injected: u32,
    /// `RUMMY_RECALL_MAX_CHARS` (4,000): characters the block's items may take.
    pub max_chars: u32,
    /// `RUMMY_RECALL_RERANK` (off): the sidecar re-ranks the lexical candidates before the caps.
    pub rerank: bool,
    /// `RUMMY_CONSOLIDATE` (off): at a loop's end the sidecar turns the run's facts (and
    /// session state) into project memories, added or superseded at once.
    pub consolidate: bool,
}

impl Default for RecallSettings {
    fn default() -> Self {
        RecallSettings {
            enabled: true,
            max_candidates: 40,
            max_injected: 6,
            max_chars: 4_000,
            rerank: false,
            consolidate: false,
        }
    }
}

impl RecallSettings {
    /// Reads the settings over the defaults; the caps must be whole numbers above zero.
    pub fn from_vars(vars: &BTreeMap<String, String>) -> Result<RecallSettings, ConfigError> {
        let d = RecallSettings::default();
        Ok(RecallSettings {
            enabled: switch(vars, "RUMMY_RECALL", d.enabled)?,
            max_candidates: positive(vars, "RUMMY_RECALL_MAX_CANDIDATES", d.max_candidates)?,
            max_injected: positive(vars, "RUMMY_RECALL_MAX_INJECTED", d.max_injected)?,
            max_chars: positive(vars, "RUMMY_RECALL_MAX_CHARS", d.max_chars)?,
            rerank: switch(vars, "RUMMY_RECALL_RERANK", d.rerank)?,
            consolidate: switch(vars, "RUMMY_CONSOLIDATE", d.consolidate)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::vars;
    use super::*;
    use pretty_assertions::assert_eq;

    /// Recall is on with its three caps by default, re-ranking and consolidation off; each is
    /// read, and a cap must be above zero.
    #[test]
    fn reads_recall_and_its_caps() {
        let read = |pairs: &[(&str, &str)]| {
            RecallSettings::from_vars(&vars(pairs)).map_err(|e| (e.name, e.reason))
        };
        assert_eq!(read(&[]), Ok(RecallSettings::default()));
        assert_eq!(
            read(&[
                ("RUMMY_RECALL", "0"),
                ("RUMMY_RECALL_MAX_CANDIDATES", "10"),
                ("RUMMY_RECALL_MAX_INJECTED", "2"),
                ("RUMMY_RECALL_MAX_CHARS", "500"),
                ("RUMMY_RECALL_RERANK", "on"),
                ("RUMMY_CONSOLIDATE", "1"),
            ]),
            Ok(RecallSettings {
                enabled: false,
                max_candidates: 10,
                max_injected: 2,
                max_chars: 500,
                rerank: true,
                consolidate: true,
            })
        );
        assert_eq!(
            read(&[("RUMMY_RECALL_MAX_INJECTED", "0")]),
            Err((
                "RUMMY_RECALL_MAX_INJECTED".to_owned(),
                "expected a number above zero".to_owned()
            ))
        );
    }
}
