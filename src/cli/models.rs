//! `models`, `routes` and `route check`: the server's model aliases and how it routes prompts.

use super::args::{ModelsArgs, RouteCheckArgs, RoutesArgs};
use super::exit::Exit;
use super::out::{print, print_json};
use super::session::{Failure, Intent, Session};
use super::view::short_count;
use rummy_client::params::{Page, RouteCheckParams};
use serde_json::Value;

/// `models`.
pub async fn models(args: ModelsArgs) -> Result<Exit, Failure> {
    let mut session = Session::open(&args.connect, Intent::Server).await?;
    if let Some(alias) = &args.remove {
        session
            .client
            .remove_model(alias)
            .await
            .map_err(|e| Failure::call(&format!("removing model {alias}"), e))?;
        print(&format!("model {alias} removed"));
        session.close().await;
        return Ok(Exit::Ok);
    }
    let page = Page {
        limit: Some(1000),
        offset: None,
    };
    if args.json {
        let list: Value = session
            .client
            .call("getModels", &page)
            .await
            .map_err(|e| Failure::call("listing the models", e))?;
        print_json(&list);
    } else {
        let list = session
            .client
            .get_models(page)
            .await
            .map_err(|e| Failure::call("listing the models", e))?;
        if list.is_empty() {
            print(
                "no models: configure one for the server (RUMMY_MODEL_<alias>=<provider>/<model>)",
            );
        } else {
            print(&format!(
                "{:<16} {:<12} {:<32} {:>9}  {:<16} SOURCE",
                "ALIAS", "PROVIDER", "MODEL", "CONTEXT", "FALLBACK"
            ));
        }
        let stored = list.iter().filter(|m| m.configured == Some(false)).count();
        for model in list {
            let (provider, name) = model.actual.split_once('/').unwrap_or(("", &model.actual));
            print(&format!(
                "{:<16} {:<12} {:<32} {:>9}  {:<16} {}",
                model.alias,
                provider,
                name,
                model.context_length.map_or("-".into(), short_count),
                model.fallback.unwrap_or_default(),
                match model.configured {
                    Some(true) => "environment",
                    Some(false) => "stored",
                    None => "-",
                }
            ));
        }
        if stored > 0 {
            print(
                "stored: not in the server's environment now (an earlier start's, or addModel); \
                 `rummy models --remove ALIAS` removes one (admin)",
            );
        }
    }
    session.close().await;
    Ok(Exit::Ok)
}

/// `routes`: routing's class → model map.
pub async fn routes(args: RoutesArgs) -> Result<Exit, Failure> {
    let mut session = Session::open(&args.connect, Intent::Server).await?;
    if args.json {
        let list: Value = session
            .client
            .call("getRoutes", &rummy_client::params::NoParams {})
            .await
            .map_err(|e| Failure::call("listing the routes", e))?;
        print_json(&list);
        session.close().await;
        return Ok(Exit::Ok);
    }
    let list = session
        .client
        .get_routes()
        .await
        .map_err(|e| Failure::call("listing the routes", e))?;
    print(&format!("{:<10} {:<16} SETTING", "CLASS", "MODEL"));
    for route in &list {
        print(&format!(
            "{:<10} {:<16} {}",
            route.class,
            route.model.as_deref().unwrap_or("-"),
            route.variable
        ));
    }
    print(if list.iter().all(|r| r.model.is_none()) {
        "routing is off on this server: no class is mapped, so every run keeps its own model"
    } else {
        "runs started with --route send each loop to its class's model; `-` keeps the run's own"
    });
    session.close().await;
    Ok(Exit::Ok)
}

/// `route check`: the class of a text and the model a loop starting with it would use.
pub async fn route_check(args: RouteCheckArgs) -> Result<Exit, Failure> {
    let mut session = Session::open(&args.connect, Intent::Open).await?;
    let params = RouteCheckParams {
        text: args.text.join(" "),
        run: args.run.clone(),
    };
    if args.json {
        let answer: Value = session
            .client
            .call("route/check", &params)
            .await
            .map_err(|e| Failure::call("checking the route", e))?;
        print_json(&answer);
        session.close().await;
        return Ok(Exit::Ok);
    }
    let check = session
        .client
        .route_check(&params)
        .await
        .map_err(|e| Failure::call("checking the route", e))?;
    print(&format!("class    {}", check.class));
    print(&format!(
        "model    {}",
        check.model.as_deref().unwrap_or("the run's own")
    ));
    print(&format!(
        "routing  {}",
        if check.routing { "on" } else { "off" }
    ));
    print(&format!("why      {}", check.reason));
    session.close().await;
    Ok(Exit::Ok)
}
