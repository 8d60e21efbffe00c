//! One turn's pure steps: assembling the messages, recording the reply, dispatching commands (in batches), healing the turn, summarising what the budget evicts, and the run/state payloads.
//!
//! The `TurnExecutor` actor drives these in order (docs/design/turns.md); each write
//! step is a function over the writing connection, run by the `StoreActor`.

pub mod assemble;
pub mod batch;
pub mod budget;
pub mod dispatch;
pub mod healer;
pub mod proposals;
pub mod record;
pub mod recovery;
pub mod render;
pub mod state;
pub mod streams;
pub mod summary;
pub mod views;

#[cfg(test)]
mod tests;

/// Where a turn writes (defined in the store, beside the run a write belongs to).
pub use rummy_store::entries::TurnRef;
