//! Routing and the budget's context length through a real server: a run that asks for routing sends each loop to the model its prompt's class maps to, fixed for the loop and shown in `run/state`; other runs keep their model; a context length nobody configured is asked of the provider once.

use crate::support::{TestServer, WAIT};
use pretty_assertions::assert_eq;
use rummy::config::Config;
use rummy_provider::routing::PromptClass;
use rummy_store::models::ModelSeed;
use rummy_testkit::{Reply, RpcClient};
use serde_json::{json, Value};

/// A prompt the classifier calls code.
const CODE: &str = "fix this:\n```rust\nfn main() { panic!() }\n```";
/// A prompt the classifier calls reasoning.
const REASONING: &str = "Explain why the loop queue is a FIFO";
/// The reply that ends every loop at once.
const DONE: &str = "<update status=\"200\">done</update>";

/// Adds `deep` (another model on the same fake provider) and routes code prompts to it.
fn with_deep(config: &mut Config) {
    config.models.push(ModelSeed {
        alias: "deep".into(),
        actual: "openai/deep-model".into(),
        context_length: Some(32_768),
        fallback: None,
    });
    config
        .providers
        .routing
        .classes
        .insert(PromptClass::Code, "deep".into());
}

/// A server with `fast` and `deep`, code routed to `deep`, answering every call with [`DONE`].
async fn routing_server() -> TestServer {
    let server = TestServer::start_with(with_deep).await;
    server.provider.set_fallback(Reply::content(DONE));
    server
}

/// Starts run `alias` on `fast` with these extra attributes.
async fn start(client: &mut RpcClient, alias: &str, prompt: &str, extra: Value) -> String {
    let mut attributes = json!({ "model": "fast" });
    if let (Some(a), Some(e)) = (attributes.as_object_mut(), extra.as_object()) {
        a.extend(e.clone());
    }
    let result = client
        .call(
            "set",
            json!({ "path": format!("run://{alias}"), "body": prompt, "attributes": attributes }),
        )
        .await
        .expect("run starts");
    result["alias"].as_str().expect("alias").to_owned()
}

/// Every `run/state` of `run` up to and including the first with `status`, oldest first.
async fn states_until(client: &mut RpcClient, run: &str, status: i64) -> Vec<Value> {
    let mut states = Vec::new();
    loop {
        let state = client
            .next_notification("run/state", WAIT)
            .await
            .unwrap_or_else(|e| panic!("no run/state with status {status}: {e:?}"));
        if state["run"] != json!(run) {
            continue;
        }
        let done = state["status"] == json!(status);
        states.push(state);
        if done {
            return states;
        }
    }
}

/// The `route` of each push (deduplicated in order).
fn routes(states: &[Value]) -> Vec<Value> {
    let mut routes: Vec<Value> = states.iter().map(|s| s["route"].clone()).collect();
    routes.dedup();
    routes
}

/// The wire model of each chat request the provider received, in order.
fn models_called(server: &TestServer) -> Vec<Value> {
    server
        .provider
        .chat_requests()
        .iter()
        .map(|r| r.body["model"].clone())
        .collect()
}

/// With routing on, a code prompt goes to the model mapped to code; every `run/state` and `getRun` show the class and model, and the run keeps its own model.
#[actix_rt::test]
async fn routed_code_prompt_uses_the_mapped_model() {
    let server = routing_server().await;
    let mut client = server.project_client("demo").await;
    let alias = start(&mut client, "routed", CODE, json!({ "route": true })).await;
    let states = states_until(&mut client, &alias, 200).await;
    let route = json!({ "class": "code", "model": "deep" });
    assert_eq!(routes(&states), vec![route.clone()]);
    assert_eq!(models_called(&server), vec![json!("deep-model")]);
    let run = client
        .call("getRun", json!({ "run": alias }))
        .await
        .unwrap();
    assert_eq!((&run["model"], &run["route"]), (&json!("fast"), &route));
    server.stop().await;
}

/// Without `route: true` a code prompt stays on the run's model and `route` is null.
#[actix_rt::test]
async fn without_routing_the_run_keeps_its_model() {
    let server = routing_server().await;
    let mut client = server.project_client("demo").await;
    let alias = start(&mut client, "plain", CODE, json!({})).await;
    let states = states_until(&mut client, &alias, 200).await;
    assert_eq!(routes(&states), vec![Value::Null]);
    assert_eq!(models_called(&server), vec![json!("fake-model")]);
    server.stop().await;
}

/// With routing on, a prompt whose class has no alias keeps the run's model; `run/state` still shows the class.
#[actix_rt::test]
async fn unmapped_class_keeps_the_run_model() {
    let server = routing_server().await;
    let mut client = server.project_client("demo").await;
    let alias = start(&mut client, "unmapped", REASONING, json!({ "route": true })).await;
    let states = states_until(&mut client, &alias, 200).await;
    assert_eq!(
        routes(&states),
        vec![json!({ "class": "reasoning", "model": "fast" })]
    );
    assert_eq!(models_called(&server), vec![json!("fake-model")]);
    server.stop().await;
}

/// Routing is decided per loop: turned on by configure, the next code loop goes to `deep`, and a later reasoning loop goes back to the run's model.
#[actix_rt::test]
async fn configure_turns_routing_on_for_later_loops() {
    let server = routing_server().await;
    let mut client = server.project_client("demo").await;
    let alias = start(&mut client, "later", CODE, json!({})).await;
    states_until(&mut client, &alias, 200).await;
    client
        .call(
            "set",
            json!({ "path": "run://later", "attributes": { "route": true } }),
        )
        .await
        .unwrap();
    let mut seen = Vec::new();
    for prompt in [CODE, REASONING] {
        client
            .call("set", json!({ "path": "run://later", "body": prompt }))
            .await
            .unwrap();
        seen.extend(routes(&states_until(&mut client, &alias, 200).await));
    }
    assert_eq!(
        seen,
        vec![
            json!({ "class": "code", "model": "deep" }),
            json!({ "class": "reasoning", "model": "fast" }),
        ]
    );
    assert_eq!(
        models_called(&server),
        vec![
            json!("fake-model"),
            json!("deep-model"),
            json!("fake-model")
        ]
    );
    server.stop().await;
}

/// A class mapped to an alias nobody defined refuses a routed start with -32004 naming the variable, and fails a routed loop that reaches the queue unchecked; unrouted runs and other classes are unaffected.
#[actix_rt::test]
async fn routing_to_an_undefined_model_is_refused() {
    let server = TestServer::start_with(|c| {
        c.providers
            .routing
            .classes
            .insert(PromptClass::Code, "ghost".into());
    })
    .await;
    server.provider.set_fallback(Reply::content(DONE));
    let mut client = server.project_client("demo").await;
    let err = client
        .call_err(
            "set",
            json!({ "path": "run://lost", "body": CODE, "attributes": { "model": "fast", "route": true } }),
        )
        .await;
    assert_eq!(
        (err.code, err.message.as_str()),
        (
            -32004,
            "model \"ghost\" is not defined: addModel it or set RUMMY_MODEL_ghost=<provider>/<model> (routing sends code prompts to it: RUMMY_ROUTE_CODE)"
        )
    );
    let unrouted = start(&mut client, "unrouted", CODE, json!({})).await;
    states_until(&mut client, &unrouted, 200).await;
    let other = start(&mut client, "other", REASONING, json!({ "route": true })).await;
    states_until(&mut client, &other, 200).await;
    assert_eq!(models_called(&server).len(), 2);

    // A loop that reaches the queue unchecked (an inject with no active loop) fails when claimed, saying why.
    client
        .call(
            "set",
            json!({ "path": "run://other", "body": CODE, "attributes": { "inject": true } }),
        )
        .await
        .unwrap();
    let states = states_until(&mut client, &other, 500).await;
    let errors: Vec<&Value> = states
        .iter()
        .flat_map(|s| s["history"].as_array().into_iter().flatten())
        .filter(|h| {
            h["path"]
                .as_str()
                .is_some_and(|p| p.starts_with("error://"))
        })
        .map(|h| &h["body"])
        .collect();
    assert_eq!(
        errors,
        vec![&json!("model \"ghost\" is not defined: addModel it or set RUMMY_MODEL_ghost=<provider>/<model> (routing sends code prompts to it: RUMMY_ROUTE_CODE)")]
    );
    assert_eq!(
        routes(&states),
        vec![json!({ "class": "code", "model": "ghost" })]
    );
    assert_eq!(models_called(&server).len(), 2);
    server.stop().await;
}

/// A model with no configured context length gets one from its provider (`/props`), asked once and cached in `models`; the budget uses it, so an oversized first turn ends 413 without a model call.
#[actix_rt::test]
async fn discovered_context_length_bounds_the_budget() {
    let server = TestServer::start_with(|c| {
        c.models.push(ModelSeed {
            alias: "small".into(),
            actual: "openai/small-model".into(),
            context_length: None,
            fallback: None,
        });
    })
    .await;
    server
        .provider
        .set_props(json!({ "default_generation_settings": { "n_ctx": 1024 } }));
    let mut client = server.project_client("demo").await;
    for alias in ["tight", "tighter"] {
        client
            .call(
                "set",
                json!({ "path": format!("run://{alias}"), "body": "hi", "attributes": { "model": "small" } }),
            )
            .await
            .unwrap();
        states_until(&mut client, alias, 413).await;
    }
    assert_eq!(server.provider.chat_requests().len(), 0);
    let probes = server
        .provider
        .requests()
        .iter()
        .filter(|r| r.path == "/props")
        .count();
    assert_eq!(probes, 1, "the discovered length is cached");
    let models = client.call("getModels", json!({})).await.unwrap();
    let small: Vec<&Value> = models
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["alias"] == json!("small"))
        .collect();
    assert_eq!(small[0]["contextLength"], json!(1024));
    server.stop().await;
}

/// `getRoutes` lists every class with the alias it maps to (null: a routed run keeps its own model) and the setting that maps it.
#[actix_rt::test]
async fn get_routes_shows_the_configured_map() {
    let server = routing_server().await;
    let mut client = server.project_client("demo").await;
    let routes = client.call("getRoutes", json!({})).await.unwrap();
    assert_eq!(
        routes,
        json!([
            { "class": "code", "model": "deep", "variable": "RUMMY_ROUTE_CODE" },
            { "class": "reasoning", "model": null, "variable": "RUMMY_ROUTE_REASONING" },
            { "class": "default", "model": null, "variable": "RUMMY_ROUTE_DEFAULT" },
        ])
    );
    server.stop().await;
}

/// `route/check` says a text's class and the model a loop would take: for a run with routing on, for one with it off (saying so), and without a run; a run of another name is -32004; nothing reaches the model.
#[actix_rt::test]
async fn route_check_says_the_class_and_the_model_routing_on_or_off() {
    let server = routing_server().await;
    let mut client = server.project_client("demo").await;
    let routed = start(&mut client, "routed", "hello", json!({ "route": true })).await;
    states_until(&mut client, &routed, 200).await;
    let plain = start(&mut client, "plain", "hello", json!({})).await;
    states_until(&mut client, &plain, 200).await;
    let calls_before = models_called(&server).len();

    let mut answers = Vec::new();
    for params in [
        json!({ "text": CODE, "run": "routed" }),
        json!({ "text": REASONING, "run": "routed" }),
        json!({ "text": CODE, "run": "plain" }),
        json!({ "text": CODE }),
    ] {
        answers.push(client.call("route/check", params).await.unwrap());
    }
    let missing = client
        .call_err("route/check", json!({ "text": CODE, "run": "nobody" }))
        .await;

    assert_eq!(
        answers,
        vec![
            json!({ "class": "code", "mapped": "deep", "run": "routed", "routing": true, "model": "deep",
                    "reason": "routing sends code prompts to deep: RUMMY_ROUTE_CODE" }),
            json!({ "class": "reasoning", "mapped": null, "run": "routed", "routing": true, "model": "fast",
                    "reason": "no model is mapped to reasoning prompts (RUMMY_ROUTE_REASONING is not set): run routed's own model fast answers" }),
            json!({ "class": "code", "mapped": "deep", "run": "plain", "routing": false, "model": "fast",
                    "reason": "routing is off for run plain (its route setting is not true): its own model fast answers; with route: true it would go to deep (RUMMY_ROUTE_CODE)" }),
            json!({ "class": "code", "mapped": "deep", "run": null, "routing": true, "model": "deep",
                    "reason": "a run with route: true sends code prompts to deep: RUMMY_ROUTE_CODE" }),
        ]
    );
    assert_eq!(
        (missing.code, missing.message.as_str()),
        (-32004, "run \"nobody\" not found in project \"demo\"")
    );
    assert_eq!(models_called(&server).len(), calls_before);
    server.stop().await;
}

/// On a server that maps no class, `route/check` says routing is off and `getRoutes` maps nothing.
#[actix_rt::test]
async fn route_check_says_routing_is_off_when_nothing_is_mapped() {
    let server = TestServer::start().await;
    let mut client = server.project_client("demo").await;
    let check = client
        .call("route/check", json!({ "text": REASONING }))
        .await
        .unwrap();
    let routes = client.call("getRoutes", json!({})).await.unwrap();
    assert_eq!(
        check,
        json!({ "class": "reasoning", "mapped": null, "run": null, "routing": false, "model": null,
                "reason": "routing is off on this server: no class is mapped (RUMMY_ROUTE_CODE, RUMMY_ROUTE_REASONING, RUMMY_ROUTE_DEFAULT), so every run keeps its own model" })
    );
    let mapped: Vec<&Value> = routes
        .as_array()
        .into_iter()
        .flatten()
        .map(|r| &r["model"])
        .collect();
    assert_eq!(mapped, vec![&Value::Null, &Value::Null, &Value::Null]);
    server.stop().await;
}
