//! `think`: private reasoning before acting; never dispatched (the executor merges its body into the turn's reasoning), so it has only a doc.

/// The model-facing doc.
pub const DOC: &str = include_str!("doc.md");
