//! A typed client of rummy's protocol: JSON-RPC 2.0 over one WebSocket.
//!
//! - [`Connection`] is the wire: it connects (an optional token goes out as
//!   `Authorization: Bearer` on the upgrade), sends requests and reads each message, sorted
//!   into answers and notifications, only when its owner asks.
//! - [`Client`] builds on it: a typed call for every method of the protocol's table ([`Client::request`], and a named one each: [`METHODS`]),
//!   typed [`Notification`]s, and reconnection that says the same hello again and replays
//!   what each followed run pushed meanwhile (`getRun {run, sinceSeq}`), so nothing is missed
//!   and nothing is seen twice.
//! - [`params`] and [`results`] are the requests and answers, camelCase on the wire.
//! - [`bodies`] keeps entries' bodies from the pushes: whole, cut (`bodyTruncated`, the rest
//!   read with `getBody`) or appended to (`append: true, offset`: a command's output).
//!
//! The `rummy` command line, the testkit's test client and the benchmarks all speak through
//! this crate.

pub mod bodies;
mod calls;
mod client;
pub mod connection;
mod error;
pub mod notifications;
pub mod params;
pub mod results;

pub use client::{Client, ClientOptions, Decision, Reconnect, METHODS};
pub use connection::{ConnectOptions, Connection, Incoming};
pub use error::{CallError, ClientError, RpcError};
pub use notifications::Notification;
