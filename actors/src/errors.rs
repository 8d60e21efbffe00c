//! The actors' errors, and the one mapping from every internal error to the small set of
//! errors a client sees.
//!
//! Each layer has its error enum, each variant saying who returns it and how the caller reacts:
//! `rummy_store::StoreError` (store calls), `rummy_core::wire::RpcError` with its
//! `ErrorKind` (what a client is answered), [`Error`] here (what a session's handler meets:
//! any of those, an actor that stopped, a blocking task that did not finish), and `ServeError`
//! in the `rummy` crate (start-up). Model calls and turns end loops rather than calls:
//! `provider::ProviderError` and `turn::TurnFailure` become the loop's `error://` entry. A
//! handler's [`Error`] becomes an [`RpcError`] in one place, `From<Error> for RpcError`, where
//! every failure of the server's own is logged and answered -32603 without detail.

use actix::MailboxError;
use rummy_core::wire::{ErrorKind, RpcError};
use rummy_store::StoreError;

/// Why a session's call failed: returned by its handler (and the helpers it calls), turned
/// into the client's error once, by the routing table.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Refused in the client's own terms — bad params, no such run, not allowed, not now:
    /// answered as it is.
    #[error("{}", .0.message)]
    Rpc(RpcError),
    /// A store call failed: its kind decides the answer ([`from_store`]).
    #[error(transparent)]
    Store(#[from] StoreError),
    /// An actor the call needed (the run registry, a run) has stopped: the server is stopping
    /// (-32603).
    #[error("an actor stopped: {0}")]
    Stopped(#[from] MailboxError),
    /// Work handed to the blocking pool (a path check, a file read) panicked or was cancelled
    /// (-32603).
    #[error("a blocking task did not finish: {0}")]
    Blocking(#[from] actix_rt::task::JoinError),
    /// The answer could not be turned into JSON (-32603).
    #[error("cannot encode the answer: {0}")]
    Encode(#[from] serde_json::Error),
}

impl From<RpcError> for Error {
    fn from(err: RpcError) -> Self {
        Error::Rpc(err)
    }
}

impl From<Error> for RpcError {
    /// The client's error for a failed call: a refusal as it is, a store error by its kind,
    /// anything else -32603 without detail (the detail goes to the log).
    fn from(err: Error) -> Self {
        match err {
            Error::Rpc(err) => err,
            Error::Store(err) => from_store(err),
            Error::Stopped(_) | Error::Blocking(_) | Error::Encode(_) => internal(&err),
        }
    }
}

/// Maps a store error to a client error: the kinds that are the client's doing keep their
/// message; every failure of the server's own (a database error, a unit that panicked, a writer
/// that stopped, …) is logged here and answered -32603 without detail. Exhaustive, so a new
/// kind must be placed.
pub fn from_store(err: StoreError) -> RpcError {
    match err {
        StoreError::Permission { .. } => RpcError::new(ErrorKind::Permission, err.to_string()),
        StoreError::Refused(m) => RpcError::new(ErrorKind::Permission, m),
        StoreError::NotFound(m) => RpcError::new(ErrorKind::NotFound, m),
        StoreError::Conflict(m) => RpcError::new(ErrorKind::Conflict, m),
        StoreError::TooLarge {
            message,
            tokens,
            limit,
        } => RpcError::new(ErrorKind::TooLarge, message)
            .with("tokens", tokens.into())
            .with("limit", limit.into()),
        StoreError::TooMany { message, limit } => {
            RpcError::new(ErrorKind::TooLarge, message).with("limit", limit.into())
        }
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
        | StoreError::Spawn(_)
        | StoreError::Unjudged(_) => internal(&err),
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
                StoreError::Refused("a.txt is a project file".into()),
                -32003,
                "a.txt is a project file",
            ),
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
