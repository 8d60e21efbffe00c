//! The client protocol's wire types: JSON-RPC 2.0 framing, error codes, the method catalogue,
//! params, and what the server answers and pushes — the protocol's own types (`rummy-protocol`,
//! shared with clients), `run/state` / `getRun` written straight from the store's rows, and the
//! wording of the `ui/notify` notices.

pub mod bounded;
pub mod jsonrpc;
pub mod methods;
pub mod notices;
pub mod params;
pub mod state;

pub use rummy_protocol::{catalogue, notifications, results, shape};

pub use jsonrpc::{ErrorKind, Request, RpcError};
