//! `update`: the turn's status report and lifecycle signal; dispatch applies it always (`turn::dispatch`), even after a failed action.
//!
//! Views: `# update` and the body, at both visibilities (feedback the model
//! keeps seeing).

use crate::store::entries::ViewRow;

/// The model-facing doc.
pub const DOC: &str = include_str!("doc.md");

/// The view at every visibility.
pub fn view(row: &ViewRow) -> String {
    format!("# update\n{}", row.body)
}
