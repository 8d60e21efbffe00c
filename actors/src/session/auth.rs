//! Who a call acts for (docs/design/team.md), and the admin methods on tokens.
//!
//! A connection's caller comes from the token on its upgrade (`Authorization: Bearer`), or from
//! `rummy/hello {token}` / `getProjects {token}` for clients that cannot set headers. While no
//! token exists, a server that accepted to start (loopback, or `RUMMY_INSECURE`) serves its
//! owner, who may do everything. Once any token exists, every connection needs one: none, an
//! unknown, revoked or expired one, or one that does not open the project is -32001, and the
//! connection is closed after that answer. Admin methods refuse every other caller (-32003).

use super::call::{Call, SessionDeps};
use crate::clock::now;
use crate::errors::from_store;
use rummy_core::access::bearer::{self as authorization, Authorization};
use rummy_core::wire::{ErrorKind, RpcError};
use rummy_store::principal::{Caller, Principal};
use rummy_store::tokens::{self, Refused};

/// The -32001 a call without a usable token gets.
pub fn unauthorized(message: impl Into<String>) -> RpcError {
    RpcError::new(ErrorKind::Unauthorized, message)
}

/// Who a token's text lets in, or why not.
async fn check(deps: &SessionDeps, text: String) -> Result<Result<Principal, Refused>, RpcError> {
    deps.svc
        .store
        .read(move |c| tokens::check(c, &text, now()))
        .await
        .map_err(from_store)
}

/// The principal of an `Authorization` header (the upgrade's, `/metrics`'): `Ok(None)` without
/// one, `Err(why)` for a header that is not a valid `Bearer` token, the scheme in any case
/// (answered HTTP 401 at an upgrade, no upgrade).
pub async fn bearer(deps: &SessionDeps, header: Option<&str>) -> Result<Option<Principal>, String> {
    let Some(header) = header else {
        return Ok(None);
    };
    let Authorization::Bearer(text) = authorization::token(header) else {
        return Err("unauthorized: the Authorization header must be Bearer <token>".into());
    };
    match check(deps, text.to_owned()).await {
        Ok(Ok(principal)) => Ok(Some(principal)),
        Ok(Err(refused)) => Err(format!("unauthorized: {refused}")),
        Err(e) => Err(e.message),
    }
}

/// Who `call` acts for: the holder of `token` when the call carries one, else the session's
/// caller, else the owner while no token exists; -32001 otherwise.
pub async fn caller(call: &Call, token: Option<&str>) -> Result<Caller, RpcError> {
    if let Some(text) = token {
        return match check(&call.deps, text.to_owned()).await? {
            Ok(principal) => Ok(Caller::Holder(principal)),
            Err(refused) => Err(unauthorized(format!("unauthorized: {refused}"))),
        };
    }
    if let Some(caller) = call.caller() {
        return Ok(caller.clone());
    }
    let any = call
        .deps
        .svc
        .store
        .read(tokens::any)
        .await
        .map_err(from_store)?;
    if any {
        Err(unauthorized(
            "unauthorized: this server needs a token: send Authorization: Bearer <token> on the upgrade, or rummy/hello {token}",
        ))
    } else {
        Ok(Caller::Owner)
    }
}

/// Refuses `method` to a caller that is not an admin (-32003).
pub fn require_admin(caller: &Caller, method: &str) -> Result<(), RpcError> {
    if caller.is_admin() {
        Ok(())
    } else {
        Err(RpcError::new(
            ErrorKind::Permission,
            format!("permission denied: {method} needs an admin token"),
        ))
    }
}
