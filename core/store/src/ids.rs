//! Row ids as types of their own — a project's, a run's, a loop's, a turn's — so one cannot be passed where another is meant.
//!
//! Each is the `INTEGER` primary key of its table, and stored as one (`store::types` binds,
//! compares and loads them through diesel). A turn's id is its row; a turn's *number* within
//! its run (`sequence`, what `turn_N` paths and `TurnRef::turn` hold) stays a plain integer.
//! On the wire and in logs an id is its number.

use serde::{Deserialize, Serialize};
use std::fmt;

/// Declares an id newtype over the row's `i32` key.
macro_rules! row_id {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(
            Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
        )]
        #[serde(transparent)]
        #[repr(transparent)]
        pub struct $name(pub i32);

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Display::fmt(&self.0, f)
            }
        }
    };
}

row_id!(
    /// A project's id (`projects.id`).
    ProjectId
);
row_id!(
    /// A run's id (`runs.id`).
    RunId
);
row_id!(
    /// A loop's id (`loops.id`).
    LoopId
);
row_id!(
    /// A turn's row id (`turns.id`), not its number within the run.
    TurnId
);

/// The run a write belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunRef {
    /// The run's id.
    pub run_id: RunId,
    /// Its project's id (for project-scoped file entries).
    pub project_id: ProjectId,
}
