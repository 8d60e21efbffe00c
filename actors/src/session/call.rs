//! One call as a handler sees it: what the session holds (its services, its project, who it
//! acts for), the helpers every handler shares (store reads and writes, the run a call names,
//! a client's write context) and what a handler answers.

use crate::errors::Error;
use crate::registry::RunRegistry;
use crate::services::Services;
use crate::store::Store;
use actix::Addr;
use rummy_core::wire::{ErrorKind, RpcError};
use rummy_store::db::Db;
use rummy_store::entries::RunRef;
use rummy_store::entry::Writer;
use rummy_store::ids::ProjectId;
use rummy_store::ops::Op;
use rummy_store::principal::Caller;
use rummy_store::runs::{self, Run};
use rummy_store::StoreError;
use serde::Serialize;
use serde_json::Value;
use std::path::PathBuf;

/// What a session's handlers reach.
#[derive(Clone)]
pub struct SessionDeps {
    /// Shared services.
    pub svc: Services,
    /// Runs.
    pub registry: Addr<RunRegistry>,
    /// Places for sessions (`RUMMY_MAX_CONNECTIONS`).
    pub seats: super::Seats,
    /// Places for sessions that have not shown a valid token while one exists
    /// (`RUMMY_MAX_ANONYMOUS_CONNECTIONS`).
    pub anonymous: super::Seats,
    /// Ends the sessions of tokens that lapse.
    pub tokens: Addr<crate::tokens::TokenWatch>,
}

/// The project a session is bound to, and who it acts for there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Binding {
    /// Project id.
    pub project_id: ProjectId,
    /// Project name.
    pub name: String,
    /// Project root.
    pub root: String,
    /// Who the session acts for.
    pub caller: Caller,
}

/// One call as a handler sees it (its params are handed over apart, typed).
pub struct Call {
    /// Services.
    pub deps: SessionDeps,
    /// The session's project, if bound.
    pub project: Option<Binding>,
    /// Who the session acts for, when known before a hello (a Bearer token on the upgrade).
    pub caller: Option<Caller>,
    /// The session's id (its connection's, for what only that connection may do).
    pub session: u64,
}

impl Call {
    /// Who the session acts for, when known: its binding's caller, or its upgrade's.
    pub fn caller(&self) -> Option<&Caller> {
        self.project
            .as_ref()
            .map(|b| &b.caller)
            .or(self.caller.as_ref())
    }

    /// The user the caller's token names, if any (the owner has none): who started a run or
    /// resolved a proposal.
    pub fn user(&self) -> Option<String> {
        self.caller().and_then(Caller::user).map(str::to_owned)
    }

    /// The session's project; -32000 before a hello (the routing table refuses methods that
    /// need one earlier, so this only guards handlers reached without it).
    pub fn project(&self) -> Result<&Binding, RpcError> {
        self.project.as_ref().ok_or_else(|| {
            RpcError::new(
                ErrorKind::NotInitialized,
                "not initialized: call rummy/hello first",
            )
        })
    }

    /// The services.
    pub fn svc(&self) -> &Services {
        &self.deps.svc
    }

    /// The store.
    pub fn store(&self) -> &Store {
        &self.deps.svc.store
    }

    /// Runs `f` on a read-only connection off the async threads.
    pub async fn read<R, F>(&self, f: F) -> Result<R, Error>
    where
        R: Send + 'static,
        F: FnOnce(&mut Db) -> Result<R, StoreError> + Send + 'static,
    {
        Ok(self.store().read(f).await?)
    }

    /// Runs `f` on the writer; it commits whole or not at all, and this resolves after the
    /// commit.
    pub async fn write<R, F>(&self, f: F) -> Result<R, Error>
    where
        R: Send + 'static,
        F: FnOnce(&mut Db) -> Result<R, StoreError> + Send + 'static,
    {
        Ok(self.store().write(f).await?)
    }

    /// The run with that alias in the session's project, or -32004.
    pub async fn run(&self, alias: &str) -> Result<Run, Error> {
        let project = self.project()?;
        let (project_id, name) = (project.project_id, project.name.clone());
        let lookup = alias.to_owned();
        self.read(move |c| runs::by_alias(c, project_id, &lookup))
            .await?
            .ok_or_else(|| {
                Error::Rpc(RpcError::new(
                    ErrorKind::NotFound,
                    format!("run \"{alias}\" not found in project \"{name}\""),
                ))
            })
    }

    /// A client's operation on `run`, now, within the server's limits.
    pub fn op(&self, run: RunRef) -> Op {
        let limits = &self.deps.svc.config.limits;
        Op {
            run,
            writer: Writer::Client,
            max_entry_tokens: limits.max_entry_tokens,
            at: crate::clock::write_ctx(limits.token_divisor),
        }
    }

    /// The token estimate's divisor.
    pub fn divisor(&self) -> u32 {
        self.deps.svc.config.limits.token_divisor
    }

    /// A directory of the server's home (`skills`, `personas`).
    pub fn home(&self, sub: &str) -> PathBuf {
        self.deps.svc.config.home.join(sub)
    }
}

/// A handler's success.
pub enum CallAnswer {
    /// Answer with this result.
    Reply(Value),
    /// Bind the session to a project, then answer.
    Bind(Binding, Value),
}

/// What a handler answers, turned into the result's JSON once, by the routing table: one of
/// the protocol's answer types (`rummy_core::wire::results`), a [`Json`] value built already,
/// or a hello's [`CallAnswer::Bind`].
pub trait IntoCallAnswer {
    /// The outcome: the answer as JSON (and for a hello, the binding).
    fn into_answer(self) -> Result<CallAnswer, Error>;
}

impl<T: Serialize> IntoCallAnswer for T {
    fn into_answer(self) -> Result<CallAnswer, Error> {
        Ok(CallAnswer::Reply(serde_json::to_value(self)?))
    }
}

impl IntoCallAnswer for CallAnswer {
    fn into_answer(self) -> Result<CallAnswer, Error> {
        Ok(self)
    }
}

/// An answer already built as JSON (`getRun`'s, written from rows that live only as long as
/// the read): answered as it is, not serialised again.
pub struct Json(pub Value);

impl IntoCallAnswer for Json {
    fn into_answer(self) -> Result<CallAnswer, Error> {
        Ok(CallAnswer::Reply(self.0))
    }
}
