//! rummy's wire types: the method table ([`methods`], [`for_each_method!`]: every method once,
//! with its params ([`params`]) and result), what the server answers ([`results`], [`acks`]),
//! what it pushes ([`notifications`]) and how it describes itself ([`catalogue`], the
//! `discover` answer).
//! The closed sets of words in them (an entry's state, a stop reason, a proposal's kind, …) are
//! the enums of [`values`], which read a word they do not know as `Unknown`.
//!
//! The server builds its answers from these types and its clients (`rummy-client`, and through
//! it the CLI, the testkit and the benchmarks) read them back into the same types, so the two
//! halves of the wire cannot drift apart. This crate holds data only — no behaviour, and no
//! dependency beyond serde — so a client does not pull in the server's store; the server fills
//! the method table with its handlers in its own crate.
//!
//! Reading is tolerant: a field an older server does not send is `None`, empty or zero
//! (`#[serde(default)]`), and a field a newer server adds is ignored. Writing is exact: what
//! the server sends is what these types serialise to (`null` where a value is absent, unless a
//! field says it is left out).

pub mod acks;
pub mod catalogue;
pub mod methods;
pub mod notifications;
pub mod params;
pub mod results;
pub mod shape;
pub mod values;

pub use values::{FailureKind, NotifyLevel, ProposalKind, State, StopReason, ToolName, Visibility};
