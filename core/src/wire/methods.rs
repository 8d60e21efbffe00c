//! The method catalogue: every RPC method and notification with its params, as `discover` returns it.
//!
//! The server's routing table pairs each [`MethodSpec`] here with its handler,
//! so the catalogue cannot drift from what is actually served.

use serde_json::{json, Map, Value};

/// One documented parameter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParamSpec {
    /// Wire name (camelCase).
    pub name: &'static str,
    /// JSON type (`string`, `integer`, `boolean`, `object`).
    pub ty: &'static str,
    /// Whether the call fails without it.
    pub required: bool,
    /// What it is for.
    pub description: &'static str,
}

/// One method of the protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MethodSpec {
    /// Wire name.
    pub name: &'static str,
    /// What it does.
    pub description: &'static str,
    /// Its params.
    pub params: &'static [ParamSpec],
    /// Whether `rummy/hello` must come first.
    pub requires_hello: bool,
}

/// One notification the server pushes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NotificationSpec {
    /// Wire name.
    pub name: &'static str,
    /// When it is sent and what it carries.
    pub description: &'static str,
}

const fn p(
    name: &'static str,
    ty: &'static str,
    required: bool,
    description: &'static str,
) -> ParamSpec {
    ParamSpec {
        name,
        ty,
        required,
        description,
    }
}

const LIST: [ParamSpec; 2] = [
    p(
        "limit",
        "integer",
        false,
        "page size (default 100, at most 1000)",
    ),
    p("offset", "integer", false, "items to skip"),
];

/// `ping`.
pub const PING: MethodSpec = MethodSpec {
    name: "ping",
    description: "Liveness check; answers {}.",
    params: &[],
    requires_hello: false,
};
/// `discover`.
pub const DISCOVER: MethodSpec = MethodSpec {
    name: "discover",
    description: "The live catalogue of methods and notifications.",
    params: &[],
    requires_hello: false,
};
/// `rummy/hello`.
pub const HELLO: MethodSpec = MethodSpec {
    name: "rummy/hello",
    description: "Binds the connection to a project (created on first hello); answers {rummyVersion, protocolVersion, projectId, projectRoot}.",
    params: &[
        p("name", "string", true, "the project's name"),
        p("projectRoot", "string", true, "absolute path of the project on the server"),
        p("configPath", "string", false, "client configuration path"),
        p("clientVersion", "string", false, "protocol version the client speaks; another MAJOR is refused"),
    ],
    requires_hello: false,
};
/// `getModels`.
pub const GET_MODELS: MethodSpec = MethodSpec {
    name: "getModels",
    description: "Model aliases: [{alias, actual, contextLength, fallback}].",
    params: &LIST,
    requires_hello: true,
};
/// `addModel`.
pub const ADD_MODEL: MethodSpec = MethodSpec {
    name: "addModel",
    description: "Adds or replaces a model alias; answers {id, alias}.",
    params: &[
        p("alias", "string", true, "the alias runs name"),
        p("actual", "string", true, "<provider>/<model>"),
        p(
            "contextLength",
            "integer",
            false,
            "context window in tokens",
        ),
        p(
            "fallback",
            "string",
            false,
            "alias to fall back to on transport failures",
        ),
    ],
    requires_hello: true,
};
/// `removeModel`.
pub const REMOVE_MODEL: MethodSpec = MethodSpec {
    name: "removeModel",
    description: "Removes a model alias.",
    params: &[p("alias", "string", true, "the alias")],
    requires_hello: true,
};
/// `getRuns`.
pub const GET_RUNS: MethodSpec = MethodSpec {
    name: "getRuns",
    description:
        "The project's runs, newest first: [{run, status, turn, summary, model, created}].",
    params: &LIST,
    requires_hello: true,
};
/// `getRun`.
pub const GET_RUN: MethodSpec = MethodSpec {
    name: "getRun",
    description:
        "One run's whole state; with sinceSeq also the notifications it pushed after that seq.",
    params: &[
        p("run", "string", true, "run alias"),
        p(
            "sinceSeq",
            "integer",
            false,
            "replay notifications with a greater seq",
        ),
    ],
    requires_hello: true,
};
/// `getEntries`.
pub const GET_ENTRIES: MethodSpec = MethodSpec {
    name: "getEntries",
    description: "Read-only listing of a run's entries; bodies only with withBody.",
    params: &[
        p("run", "string", true, "run alias"),
        p(
            "scheme",
            "string",
            false,
            "only this scheme (file for project files)",
        ),
        p(
            "state",
            "string",
            false,
            "proposed | streaming | resolved | failed | cancelled",
        ),
        p(
            "visibility",
            "string",
            false,
            "visible | summarized | archived",
        ),
        p("withBody", "boolean", false, "include bodies"),
        p(
            "limit",
            "integer",
            false,
            "page size (default 100, at most 1000)",
        ),
        p("offset", "integer", false, "items to skip"),
    ],
    requires_hello: true,
};
/// `set`.
pub const SET: MethodSpec = MethodSpec {
    name: "set",
    description: "Writes an entry; on run://<alias> starts a run (body = prompt, attributes.model), continues it (body on an existing run) or cancels it (state: cancelled).",
    params: &[
        p("run", "string", false, "run alias (not needed on run:// paths)"),
        p("path", "string", true, "entry path"),
        p("body", "string", false, "new body or prompt"),
        p("state", "string", false, "new state"),
        p("visibility", "string", false, "new visibility"),
        p("attributes", "object", false, "attributes (run start: model, mode, persona, temperature, contextLimit)"),
    ],
    requires_hello: true,
};

/// Every method, in catalogue order.
pub const METHODS: &[MethodSpec] = &[
    PING,
    DISCOVER,
    HELLO,
    GET_MODELS,
    ADD_MODEL,
    REMOVE_MODEL,
    GET_RUNS,
    GET_RUN,
    GET_ENTRIES,
    SET,
];

/// Every notification the server pushes.
pub const NOTIFICATIONS: &[NotificationSpec] = &[
    NotificationSpec {
        name: "run/state",
        description: "{run, seq, turn, status, summary, history, unknowns, telemetry}: after each dispatched command and at turn end; history holds the entries changed since the previous push.",
    },
    NotificationSpec {
        name: "run/progress",
        description: "{run, turn, status: queued | thinking | processing, detail?}: transient activity.",
    },
];

/// The `discover` answer for a list of served methods.
pub fn catalogue(methods: &[&MethodSpec]) -> Value {
    let mut out = Map::new();
    for m in methods {
        let params: Map<String, Value> = m
            .params
            .iter()
            .map(|p| {
                (
                    p.name.to_owned(),
                    json!({"type": p.ty, "required": p.required, "description": p.description}),
                )
            })
            .collect();
        out.insert(
            m.name.to_owned(),
            json!({"description": m.description, "params": params, "requiresHello": m.requires_hello}),
        );
    }
    let notifications: Map<String, Value> = NOTIFICATIONS
        .iter()
        .map(|n| (n.name.to_owned(), json!({"description": n.description})))
        .collect();
    json!({"methods": out, "notifications": notifications})
}
