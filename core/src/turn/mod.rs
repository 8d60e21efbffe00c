//! One turn's pure steps: assembling the messages, recording the reply, dispatching commands, healing the turn, and the run/state payloads.
//!
//! The `TurnExecutor` actor drives these in order (ENGINE.md §3); each write
//! step is a function over the writing connection, run by the `StoreActor`.

pub mod assemble;
pub mod budget;
pub mod dispatch;
pub mod healer;
pub mod proposals;
pub mod record;
pub mod recovery;
pub mod render;
pub mod state;
pub mod streams;
pub mod views;

#[cfg(test)]
mod tests;

use crate::store::entries::RunRef;

/// Where a turn writes: its run, loop and number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TurnRef {
    /// The run and its project.
    pub run: RunRef,
    /// The active loop.
    pub loop_id: i32,
    /// The turn number (per run).
    pub turn: i32,
}
