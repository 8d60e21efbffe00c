//! The server's model aliases: `getModels`, and the admin's `addModel` and `removeModel`; and
//! how runs are routed among them: `getRoutes` and `route/check`.

use crate::clock::now;
use crate::errors::Error;
use crate::session::auth;
use crate::session::call::Call;
use rummy_core::wire::params::{
    self, AddModelParams, AliasParams, NoParams, Page, RouteCheckParams,
};
use rummy_core::wire::results::{AddedModel, Done, Model, RouteCheck, RouteClass};
use rummy_core::wire::RpcError;
use rummy_provider::routing::{self, CheckedRun};
use rummy_store::models;
use rummy_store::models::ModelSeed;

/// `getModels`: a page of the aliases, each saying whether the environment defines it now.
/// Served before `rummy/hello` (models are the server's, not a project's) to any caller the
/// server lets in.
pub async fn get_models(call: Call, page: Page) -> Result<Vec<Model>, Error> {
    auth::caller(&call, None).await?;
    let (limit, offset) = params::bounds(page);
    let list = call.read(move |c| models::list(c, limit, offset)).await?;
    let configured = &call.svc().config.models;
    Ok(list
        .into_iter()
        .map(|m| Model {
            configured: Some(configured.iter().any(|seed| seed.alias == m.alias)),
            alias: m.alias,
            actual: m.actual,
            context_length: m.context_length.map(i64::from),
            fallback: m.fallback,
        })
        .collect())
}

/// Whether a client may name a model so: 1-128 characters of `[A-Za-z0-9_.-]`.
fn valid_model_alias(alias: &str) -> bool {
    (1..=128).contains(&alias.len())
        && alias
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
}

/// `addModel`: adds or re-points an alias.
pub async fn add_model(call: Call, p: AddModelParams) -> Result<AddedModel, Error> {
    // Models are the server's, shared by every project: once tokens exist, only an admin may
    // re-point one (a member could otherwise redirect every project's runs).
    auth::require_admin(&auth::caller(&call, None).await?, "addModel")?;
    if !valid_model_alias(&p.alias) {
        return Err(RpcError::invalid_param("alias", "1-128 characters of [A-Za-z0-9_.-]").into());
    }
    let (provider, model) = p.actual.split_once('/').unwrap_or(("", ""));
    if provider.is_empty() || model.is_empty() {
        return Err(RpcError::invalid_param("actual", "expected <provider>/<model>").into());
    }
    if p.context_length.is_some_and(|n| n <= 0) {
        return Err(RpcError::invalid_param("contextLength", "expected a positive number").into());
    }
    let seed = ModelSeed {
        alias: p.alias,
        actual: p.actual,
        context_length: p.context_length,
        fallback: p.fallback,
    };
    let model = call.write(move |c| models::upsert(c, &seed, now())).await?;
    Ok(AddedModel {
        id: i64::from(model.id),
        alias: model.alias,
    })
}

/// `removeModel`: removes an alias.
pub async fn remove_model(call: Call, p: AliasParams) -> Result<Done, Error> {
    auth::require_admin(&auth::caller(&call, None).await?, "removeModel")?;
    call.write(move |c| models::remove(c, &p.alias)).await?;
    Ok(Done::OK)
}

/// `getRoutes`: routing's class → model map as configured (served before `rummy/hello`).
pub async fn get_routes(call: Call, _: NoParams) -> Result<Vec<RouteClass>, Error> {
    auth::caller(&call, None).await?;
    let table = routing::table(&call.svc().config.providers.routing);
    Ok(table
        .into_iter()
        .map(|(class, variable, model)| RouteClass {
            class: class.name().to_owned(),
            model,
            variable,
        })
        .collect())
}

/// `route/check`: the class of a text and the model a loop starting with it would use, for the
/// named run or a run with routing on; nothing is called or stored.
pub async fn route_check(call: Call, p: RouteCheckParams) -> Result<RouteCheck, Error> {
    let run = match &p.run {
        Some(alias) => {
            let run = call.run(alias).await?;
            Some(CheckedRun {
                routes: run.flags().routes(),
                alias: run.alias,
                model: run.model,
            })
        }
        None => None,
    };
    let check = routing::check(&p.text, run.as_ref(), &call.svc().config.providers.routing);
    Ok(RouteCheck {
        class: check.class.name().to_owned(),
        mapped: check.mapped,
        run: run.map(|r| r.alias),
        routing: check.routing,
        model: check.model,
        reason: check.reason,
    })
}
