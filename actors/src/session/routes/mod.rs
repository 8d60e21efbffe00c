//! The routing: each method of the protocol's table (`rummy_protocol::for_each_method!`) with
//! its handler, one module per resource; `discover` is generated from the same table.
//!
//! A handler takes the [`Call`] and its params, already read (a mismatch is -32602 naming the
//! field before the handler runs), and answers anything [`IntoCallAnswer`]; its [`Error`] becomes
//! the client's error here, once.

mod entries;
mod models;
mod project;
mod runs;
mod server;
mod skills;
mod streams;
mod tokens;
mod tools;

use super::call::{Call, CallAnswer, IntoCallAnswer, Json};
use crate::errors::Error;
use futures_util::future::LocalBoxFuture;
use rummy_core::wire::catalogue::Catalogue;
use rummy_core::wire::jsonrpc;
use rummy_core::wire::methods as catalogue_of;
use rummy_core::wire::params::NoParams;
use rummy_core::wire::results::{
    Ack, ChannelsAck, CountAck, Done, Hello, PathAck, PathsAck, PatternAck, Pong, RunSnapshot,
    SkillAck,
};
use rummy_core::wire::RpcError;
use rummy_protocol::methods::{self, Method, MethodInfo};
use serde_json::Value;
use std::future::Future;

/// A call under way: its outcome, or the client's error.
type Answer = LocalBoxFuture<'static, Result<CallAnswer, RpcError>>;

/// A method of the table and its handler.
pub struct Route {
    /// The method, as the table describes it.
    pub spec: &'static MethodInfo,
    /// Reads the params and runs the handler.
    pub handler: fn(Call, Value) -> Answer,
}

/// What a handler's answer is, as the method table names it: the table's result type itself,
/// or a type the server writes that clients read as it (a writing method's own `{ok, …}` is
/// read as [`Ack`]). A handler whose answer is not its method's result does not compile.
trait Answers<R> {}

impl<T> Answers<T> for T {}
impl Answers<Ack> for Done {}
impl Answers<Ack> for PathAck {}
impl Answers<Ack> for CountAck {}
impl Answers<Ack> for PathsAck {}
impl Answers<Ack> for PatternAck {}
impl Answers<Ack> for SkillAck {}
impl Answers<Ack> for ChannelsAck {}
impl Answers<Ack> for entries::SetAnswer {}
impl Answers<Hello> for CallAnswer {}
impl Answers<RunSnapshot> for Json {}

/// Reads `params` as method `M`'s params, runs `handler`, and turns what it answers (or its
/// error) into the call's outcome.
async fn serve<M, F, A>(
    call: Call,
    params: Value,
    handler: impl FnOnce(Call, M::Params) -> F,
) -> Result<CallAnswer, RpcError>
where
    M: Method,
    F: Future<Output = Result<A, Error>>,
    A: IntoCallAnswer + Answers<M::Result>,
{
    let p: M::Params = jsonrpc::params(&params)?;
    let answered = match handler(call, p).await {
        Ok(answer) => answer.into_answer(),
        Err(err) => Err(err),
    };
    answered.map_err(RpcError::from)
}

/// The handler of each method, under the table's name for it: a method without one here does
/// not compile.
mod handlers {
    pub(super) use super::entries::{cp, get, get_body, get_entries, mv, rm, set, update};
    pub(super) use super::models::{add_model, get_models, get_routes, remove_model, route_check};
    pub(super) use super::project::{
        file_constraint, file_drop, get_constraints, get_projects, hello, project_set,
    };
    pub(super) use super::runs::{get_run, get_runs};
    pub(super) use super::server::server_doctor;
    pub(super) use super::skills::{
        get_skills, list_personas, list_skills, persona_set, skill_add, skill_remove,
    };
    pub(super) use super::streams::{stream, stream_aborted, stream_cancel, stream_completed};
    pub(super) use super::tokens::{token_create, token_list, token_revoke};
    pub(super) use super::tools::{tool_result, tools_offer};
    pub(super) use super::{discover, ping};
}

/// [`ROUTES`] from the method table: each method's handler reads the table's params type.
macro_rules! routes {
    ($($variant:ident $handler:ident $wire:literal ($params:ty) -> $result:ty { $($facts:tt)* }),* $(,)?) => {
        /// Every method this server serves: the whole table, in its order.
        pub(super) static ROUTES: &[Route] = &[$(
            Route {
                spec: &<methods::$variant as Method>::INFO,
                handler: |call, params| {
                    Box::pin(serve::<methods::$variant, _, _>(
                        call,
                        params,
                        handlers::$handler,
                    ))
                },
            },
        )*];
    };
}

rummy_protocol::for_each_method!(routes);

/// The route of a method.
pub fn find(method: &str) -> Option<&'static Route> {
    ROUTES.iter().find(|r| r.spec.name == method)
}

/// The `discover` answer.
pub fn catalogue() -> Catalogue {
    catalogue_of::catalogue()
}

/// `ping`: `{}`.
async fn ping(_: Call, _: NoParams) -> Result<Pong, Error> {
    Ok(Pong {})
}

/// `discover`: the catalogue of what the table serves.
async fn discover(_: Call, _: NoParams) -> Result<Catalogue, Error> {
    Ok(catalogue())
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    /// The server serves every method of the table, in its order.
    #[test]
    fn the_table_serves_every_documented_method() {
        let served: Vec<&str> = ROUTES.iter().map(|r| r.spec.name).collect();
        assert_eq!(served, rummy_protocol::methods::NAMES);
    }
}
