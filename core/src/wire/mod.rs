//! The client protocol's wire types: JSON-RPC 2.0 framing, error codes, the method catalogue and params.

pub mod jsonrpc;
pub mod methods;
pub mod params;

pub use jsonrpc::{ErrorKind, Request, RpcError};
