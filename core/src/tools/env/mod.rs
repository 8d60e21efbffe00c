//! `env`: a shell command without side effects; its handler is `sh`'s (`sh::run`), its doc is its own.
//!
//! Views: the result body when visible, nothing when summarized.

/// The model-facing doc.
pub const DOC: &str = include_str!("doc.md");
