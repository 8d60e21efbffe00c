//! The routing table: each protocol method with the params type it reads and its handler, one
//! module per resource; `discover` is generated from it.
//!
//! A handler takes the [`Call`] and its params, already read (a mismatch is -32602 naming the
//! field before the handler runs), and answers anything [`IntoOutcome`]; its [`Error`] becomes
//! the client's error here, once.

mod entries;
mod models;
mod project;
mod runs;
mod server;
mod skills;
mod streams;
mod tokens;

use super::call::{Call, IntoOutcome, Outcome};
use crate::errors::Error;
use futures_util::future::LocalBoxFuture;
use rummy_core::wire::catalogue::Catalogue;
use rummy_core::wire::jsonrpc;
use rummy_core::wire::methods::{self, MethodSpec};
use rummy_core::wire::params::{
    AddModelParams, AliasParams, ConstraintParams, DropParams, GetBodyParams, GetEntriesParams,
    GetParams, GetRunParams, HelloParams, MoveParams, NoParams, Page, PersonaParams,
    ProjectSetParams, ProjectsParams, RmParams, RouteCheckParams, RunParams, SetParams,
    SkillParams, StreamAbortedParams, StreamCancelParams, StreamCompletedParams, StreamParams,
    TokenCreateParams, TokenRevokeParams, UpdateParams,
};
use rummy_core::wire::results::Pong;
use rummy_core::wire::RpcError;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::future::Future;

/// A call under way: its outcome, or the client's error.
type Answer = LocalBoxFuture<'static, Result<Outcome, RpcError>>;

/// A method, its handler, and the params type the handler reads.
pub struct Route {
    /// The documented method.
    pub spec: &'static MethodSpec,
    /// Reads the params and runs the handler.
    pub handler: fn(Call, Value) -> Answer,
    /// What its params type accepts — names, aliases, types, required-ness: what `discover`
    /// must list, checked by a test.
    #[cfg(test)]
    pub shape: fn() -> Vec<rummy_core::wire::shape::FieldShape>,
}

/// Reads `params` as `P`, runs `handler`, and turns what it answers (or its error) into the
/// call's outcome.
async fn serve<P, F, A>(
    call: Call,
    params: Value,
    handler: impl FnOnce(Call, P) -> F,
) -> Result<Outcome, RpcError>
where
    P: DeserializeOwned,
    F: Future<Output = Result<A, Error>>,
    A: IntoOutcome,
{
    let p: P = jsonrpc::params(&params)?;
    let answered = match handler(call, p).await {
        Ok(answer) => answer.into_outcome(),
        Err(err) => Err(err),
    };
    answered.map_err(RpcError::from)
}

macro_rules! route {
    ($spec:expr, $handler:path, $params:ty) => {
        Route {
            spec: &$spec,
            handler: |call, params| Box::pin(serve::<$params, _, _>(call, params, $handler)),
            #[cfg(test)]
            shape: rummy_core::wire::shape::shape_of::<$params>,
        }
    };
}

/// Every method this server serves, in catalogue order.
pub(super) static ROUTES: &[Route] = &[
    route!(methods::PING, ping, NoParams),
    route!(methods::DISCOVER, discover, NoParams),
    route!(methods::GET_PROJECTS, project::get_projects, ProjectsParams),
    route!(methods::HELLO, project::hello, HelloParams),
    route!(methods::GET_MODELS, models::get_models, Page),
    route!(methods::ADD_MODEL, models::add_model, AddModelParams),
    route!(methods::REMOVE_MODEL, models::remove_model, AliasParams),
    route!(methods::GET_ROUTES, models::get_routes, NoParams),
    route!(methods::ROUTE_CHECK, models::route_check, RouteCheckParams),
    route!(methods::GET_RUNS, runs::get_runs, Page),
    route!(methods::GET_RUN, runs::get_run, GetRunParams),
    route!(methods::GET_ENTRIES, entries::get_entries, GetEntriesParams),
    route!(methods::GET_BODY, entries::get_body, GetBodyParams),
    route!(methods::SET, entries::set, SetParams),
    route!(methods::GET, entries::get, GetParams),
    route!(methods::RM, entries::rm, RmParams),
    route!(methods::CP, entries::cp, MoveParams),
    route!(methods::MV, entries::mv, MoveParams),
    route!(methods::UPDATE, entries::update, UpdateParams),
    route!(
        methods::FILE_CONSTRAINT,
        project::file_constraint,
        ConstraintParams
    ),
    route!(methods::FILE_DROP, project::file_drop, DropParams),
    route!(methods::GET_CONSTRAINTS, project::get_constraints, NoParams),
    route!(methods::SKILL_ADD, skills::skill_add, SkillParams),
    route!(methods::SKILL_REMOVE, skills::skill_remove, SkillParams),
    route!(methods::GET_SKILLS, skills::get_skills, RunParams),
    route!(methods::LIST_SKILLS, skills::list_skills, NoParams),
    route!(methods::PERSONA_SET, skills::persona_set, PersonaParams),
    route!(methods::LIST_PERSONAS, skills::list_personas, NoParams),
    route!(methods::STREAM, streams::stream, StreamParams),
    route!(
        methods::STREAM_COMPLETED,
        streams::stream_completed,
        StreamCompletedParams
    ),
    route!(
        methods::STREAM_ABORTED,
        streams::stream_aborted,
        StreamAbortedParams
    ),
    route!(
        methods::STREAM_CANCEL,
        streams::stream_cancel,
        StreamCancelParams
    ),
    route!(
        methods::TOKEN_CREATE,
        tokens::token_create,
        TokenCreateParams
    ),
    route!(methods::TOKEN_LIST, tokens::token_list, NoParams),
    route!(
        methods::TOKEN_REVOKE,
        tokens::token_revoke,
        TokenRevokeParams
    ),
    route!(methods::PROJECT_SET, project::project_set, ProjectSetParams),
    route!(methods::SERVER_DOCTOR, server::server_doctor, NoParams),
];

/// The route of a method.
pub fn find(method: &str) -> Option<&'static Route> {
    ROUTES.iter().find(|r| r.spec.name == method)
}

/// The `discover` answer.
pub fn catalogue() -> Catalogue {
    let specs: Vec<&MethodSpec> = ROUTES.iter().map(|r| r.spec).collect();
    methods::catalogue(&specs)
}

/// `ping`: `{}`.
async fn ping(_: Call, _: NoParams) -> Result<Pong, Error> {
    Ok(Pong {})
}

/// `discover`: the catalogue of what this table serves.
async fn discover(_: Call, _: NoParams) -> Result<Catalogue, Error> {
    Ok(catalogue())
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use rummy_core::wire::params::RunAttributes;
    use rummy_core::wire::shape::FieldShape;

    /// `discover` lists exactly the params each method's params type reads — each with its
    /// aliases, its JSON type and whether the call is refused without it: a field added to a
    /// params struct and not to the catalogue, or typed or required differently, fails here.
    #[test]
    fn the_catalogue_lists_what_each_params_type_accepts() {
        for route in ROUTES {
            let mut listed: Vec<FieldShape> = route
                .spec
                .params
                .iter()
                .map(|p| FieldShape {
                    name: p.name,
                    aliases: p.aliases.to_vec(),
                    ty: p.ty,
                    required: p.required,
                })
                .collect();
            let mut accepted = (route.shape)();
            listed.sort_unstable_by_key(|f| f.name);
            accepted.sort_unstable_by_key(|f| f.name);
            assert_eq!(listed, accepted, "{}", route.spec.name);
        }
    }

    /// The run attributes `set` lists are those a run start or configure accepts.
    #[test]
    fn the_run_attributes_listed_are_those_accepted() {
        let set = methods::SET.params.iter().find(|p| p.name == "attributes");
        let listed = set.map(|p| p.description).unwrap_or_default();
        for field in rummy_core::wire::params::fields_of::<RunAttributes>() {
            assert!(listed.contains(field), "attributes.{field} is not listed");
        }
    }

    /// The catalogue lists every method of the table, in its order.
    #[test]
    fn the_table_serves_every_documented_method() {
        let served: Vec<&str> = ROUTES.iter().map(|r| r.spec.name).collect();
        let documented: Vec<&str> = methods::METHODS.iter().map(|m| m.name).collect();
        assert_eq!(served, documented);
    }
}
