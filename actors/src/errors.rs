//! The one mapping from internal errors to the small set of errors a client sees.

use rummy_core::store::StoreError;
use rummy_core::wire::{ErrorKind, RpcError};

/// Maps a store error to a client error: the kinds that are the client's doing keep their
/// message; every failure of the server's own (a database error, a unit that panicked, a writer
/// that stopped, …) is logged here and answered -32603 without detail. Exhaustive, so a new
/// kind must be placed.
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
        StoreError::Db(_)
        | StoreError::Connection(_)
        | StoreError::Migration(_)
        | StoreError::Pool(_)
        | StoreError::Json(_)
        | StoreError::Panicked
        | StoreError::Stopped(_)
        | StoreError::Uncommitted(_)
        | StoreError::Task(_)
        | StoreError::Spawn(_) => internal(&err),
    }
}

/// An HTTP client (a provider's, the search backend's) could not be built — its TLS set-up
/// failed. Returned at start-up, which gives up.
#[derive(Debug, thiserror::Error)]
#[error("cannot build the HTTP client: {0}")]
pub struct HttpClientError(#[from] reqwest::Error);

/// An internal error: logged with its detail, answered with none.
pub fn internal(err: &dyn std::fmt::Display) -> RpcError {
    tracing::error!(error = %err, "internal error");
    RpcError::new(ErrorKind::Internal, "internal error")
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use std::sync::Arc;

    /// The kinds that are the client's doing keep their message under their own code; every
    /// failure of the server's own is -32603 "internal error", whatever its detail says.
    #[test]
    fn each_store_kind_maps_to_its_wire_error() {
        let cases = [
            (
                StoreError::NotFound("run \"a\" not found".into()),
                -32004,
                "run \"a\" not found",
            ),
            (StoreError::Conflict("taken".into()), -32005, "taken"),
            (
                StoreError::Invalid("path: empty".into()),
                -32602,
                "invalid params: path: empty",
            ),
            (StoreError::Panicked, -32603, "internal error"),
            (
                StoreError::Stopped("the store writer"),
                -32603,
                "internal error",
            ),
            (
                StoreError::Uncommitted(Arc::new(StoreError::Db(diesel::result::Error::NotFound))),
                -32603,
                "internal error",
            ),
            (
                StoreError::Db(diesel::result::Error::RollbackTransaction),
                -32603,
                "internal error",
            ),
        ];
        for (err, code, message) in cases {
            let wire = from_store(err);
            assert_eq!((wire.kind.code(), wire.message.as_str()), (code, message));
        }
    }
}
