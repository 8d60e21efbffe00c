//! What the RPC log (`rpc_log`) keeps of a call: recorded off the response path, and only for
//! calls in a project.

use super::call::Outcome;
use crate::clock::now;
use crate::store::Store;
use rummy_core::wire::RpcError;
use rummy_store::ids::ProjectId;
use rummy_store::rpc_log;
use serde_json::Value;

/// One call as the log keeps it.
pub struct CallLog {
    /// The store.
    pub store: Store,
    /// The session's project at call time.
    pub project_id: Option<ProjectId>,
    /// The method.
    pub method: &'static str,
    /// The request id as JSON text.
    pub rpc_id: Option<String>,
    /// The params as sent.
    pub params: Value,
    /// The user the session acts for, if a token names one.
    pub user: Option<String>,
}

impl CallLog {
    /// Writes the call and its outcome to `rpc_log` (redacted, truncated) without delaying the
    /// response. Only calls in a project are logged — those of a bound session, and the hello
    /// that binds it: what a client sends before (or instead of) a hello never reaches the
    /// database, so an unauthenticated client cannot fill it.
    pub fn record(self, result: &Result<Outcome, RpcError>) {
        let mut user = self.user;
        let (value, error, project_id) = match result {
            Ok(Outcome::Bind(binding, v)) => {
                user = binding.caller.user().map(str::to_owned);
                (Some(v.clone()), None, Some(binding.project_id))
            }
            Ok(Outcome::Reply(v)) => (Some(v.clone()), None, self.project_id),
            Err(e) => (
                None,
                Some(format!("{}: {}", e.kind.code(), e.message)),
                self.project_id,
            ),
        };
        let Some(project_id) = project_id else {
            return;
        };
        actix_rt::spawn(async move {
            let written = self
                .store
                .write(move |c| {
                    let call = rpc_log::LoggedCall {
                        project_id: Some(project_id),
                        user: user.as_deref(),
                        method: self.method,
                        rpc_id: self.rpc_id,
                        params: &self.params,
                        result: value.as_ref(),
                        error: error.as_deref(),
                    };
                    rpc_log::record(c, &call, now())
                })
                .await;
            if let Err(e) = written {
                tracing::warn!(error = %e, "rpc_log write failed");
            }
        });
    }
}
