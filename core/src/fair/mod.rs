//! Fair use (docs/design/team.md) as pure decisions: how many calls a connection may make per second
//! ([`rate`]), which calendar period a project's spending is summed over
//! (`rummy_store::period`, stored with the project), and which
//! queued run takes the next place among the runs in flight ([`admission`]).
//!
//! Every limit is off until an admin sets it; the actors ask these only when one is set.

pub mod admission;
pub mod rate;
