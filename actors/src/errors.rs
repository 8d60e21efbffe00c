//! The one mapping from internal errors to the small set of errors a client sees.

use rummy_core::store::StoreError;
use rummy_core::wire::{ErrorKind, RpcError};

/// Maps a store error to a client error; internal failures are logged here and reported without detail.
pub fn from_store(err: StoreError) -> RpcError {
    match err {
        StoreError::Permission { .. } => RpcError::new(ErrorKind::Permission, err.to_string()),
        StoreError::NotFound(m) => RpcError::new(ErrorKind::NotFound, m),
        StoreError::Conflict(m) => RpcError::new(ErrorKind::Conflict, m),
        StoreError::TooLarge {
            message,
            tokens,
            limit,
        } => RpcError::new(ErrorKind::TooLarge, message)
            .with("tokens", tokens.into())
            .with("limit", limit.into()),
        StoreError::Invalid(m) => {
            RpcError::new(ErrorKind::InvalidParams, format!("invalid params: {m}"))
        }
        other => internal(&other),
    }
}

/// An internal error: logged with its detail, answered with none.
pub fn internal(err: &dyn std::fmt::Display) -> RpcError {
    tracing::error!(error = %err, "internal error");
    RpcError::new(ErrorKind::Internal, "internal error")
}
