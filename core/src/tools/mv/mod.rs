//! `mv`: move or rename an entry or a file; its handler is `cp`'s (`cp::run` with `Kind::Mv`), its doc is its own.
//!
//! Views: the result body when visible, nothing when summarized.

/// The model-facing doc.
pub const DOC: &str = include_str!("doc.md");
