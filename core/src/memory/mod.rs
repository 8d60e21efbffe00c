//! What a project remembers across its runs: recall on a loop's first turn, and the history of its loops.
//!
//! - [`recall`]: the candidates the full-text index finds for a prompt, scored per section,
//!   capped, rendered as one block before the prompt and stored as the loop's `recall://<loop>`;
//! - [`rerank`]: the sidecar's re-ranking of the candidates, when asked for;
//! - [`consolidate`]: at a loop's end, the sidecar's memories from the run's facts, when asked
//!   for;
//! - [`history`]: one `history://<date>/<run>/<loop>` entry per finished loop;
//! - [`terms`], [`sections`]: the words a prompt is looked up by, and a text's sections;
//! - [`wording`]: what the model reads of them.
//!
//! Memory itself — `memory://` entries with their provenance, superseded rather than
//! overwritten — is written by `store::memory`, where the full-text index's SQL lives too.

pub mod consolidate;
pub mod history;
pub mod recall;
pub mod rerank;
pub mod sections;
pub mod terms;
pub mod wording;
