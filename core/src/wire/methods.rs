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
    /// Whether a call may take longer than `RUMMY_RPC_TIMEOUT` (the limit does not apply):
    /// only `rummy/hello`, whose first scan of a large project reads every file. Every other
    /// method only reads or writes the store (runs go on after their call is answered).
    pub long_running: bool,
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
    long_running: false,
};
/// `discover`.
pub const DISCOVER: MethodSpec = MethodSpec {
    name: "discover",
    description: "The live catalogue of methods and notifications.",
    params: &[],
    requires_hello: false,
    long_running: false,
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
    long_running: true,
};
/// `getModels`.
pub const GET_MODELS: MethodSpec = MethodSpec {
    name: "getModels",
    description: "Model aliases: [{alias, actual, contextLength, fallback}].",
    params: &LIST,
    requires_hello: true,
    long_running: false,
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
    long_running: false,
};
/// `removeModel`.
pub const REMOVE_MODEL: MethodSpec = MethodSpec {
    name: "removeModel",
    description: "Removes a model alias.",
    params: &[p("alias", "string", true, "the alias")],
    requires_hello: true,
    long_running: false,
};
/// `getRuns`.
pub const GET_RUNS: MethodSpec = MethodSpec {
    name: "getRuns",
    description:
        "The project's runs, newest first: [{run, status, turn, summary, model, created}].",
    params: &LIST,
    requires_hello: true,
    long_running: false,
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
    long_running: false,
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
    long_running: false,
};
/// `set`.
pub const SET: MethodSpec = MethodSpec {
    name: "set",
    description: "Writes an entry (body, append, state, visibility, attribute merge; with pattern or bodyFilter on every match). On run://<alias>: start (body + attributes.model, fork), continue (body), inject (attributes.inject), configure (attributes only) or cancel (state: cancelled).",
    params: &[
        p("run", "string", false, "run alias (not needed on run:// paths)"),
        p("path", "string", true, "entry path, or a pattern with pattern: true"),
        p("body", "string", false, "new body, or the chunk to append, or the prompt"),
        p("state", "string", false, "proposed | streaming | resolved | failed | cancelled"),
        p("outcome", "string", false, "why, with failed or cancelled"),
        p("visibility", "string", false, "visible | summarized | archived"),
        p("attributes", "object", false, "attributes (merged when there is no body; run start: model, mode, persona, temperature, contextLimit, fork, noRepo, noInteraction, noWeb, noProposals, route)"),
        p("append", "boolean", false, "append body to the current body"),
        p("pattern", "boolean", false, "treat path as a hedberg pattern"),
        p("bodyFilter", "string", false, "only entries whose body matches this pattern"),
    ],
    requires_hello: true,
    long_running: false,
};
/// `get`.
pub const GET: MethodSpec = MethodSpec {
    name: "get",
    description: "Promotes every entry matching the path pattern (and body filter) to visible, or to the given visibility; answers {ok, count}.",
    params: &[
        p("run", "string", true, "run alias"),
        p("path", "string", true, "path or hedberg pattern"),
        p("bodyFilter", "string", false, "only entries whose body matches"),
        p("visibility", "string", false, "visibility to set (default visible)"),
    ],
    requires_hello: true,
    long_running: false,
};
/// `rm`.
pub const RM: MethodSpec = MethodSpec {
    name: "rm",
    description: "Removes the run's view of every matching entry; answers {ok, paths}.",
    params: &[
        p("run", "string", true, "run alias"),
        p("path", "string", true, "path or hedberg pattern"),
        p(
            "bodyFilter",
            "string",
            false,
            "only entries whose body matches",
        ),
    ],
    requires_hello: true,
    long_running: false,
};
const MOVE: [ParamSpec; 4] = [
    p("run", "string", true, "run alias"),
    p("from", "string", true, "source path"),
    p("to", "string", true, "destination path"),
    p(
        "visibility",
        "string",
        false,
        "visibility of the destination",
    ),
];
/// `cp`.
pub const CP: MethodSpec = MethodSpec {
    name: "cp",
    description: "Copies an entry's body and attributes to a new path; answers {ok, path}.",
    params: &MOVE,
    requires_hello: true,
    long_running: false,
};
/// `mv`.
pub const MV: MethodSpec = MethodSpec {
    name: "mv",
    description: "Moves an entry (copy, then remove the source from the run); mv run://old run://new renames a run.",
    params: &MOVE,
    requires_hello: true,
    long_running: false,
};
/// `update`.
pub const UPDATE: MethodSpec = MethodSpec {
    name: "update",
    description: "Writes a status report to update://…; answers {ok, path}.",
    params: &[
        p("run", "string", true, "run alias"),
        p("body", "string", true, "status text"),
        p(
            "status",
            "integer",
            false,
            "102, 200, 204 or 422 (default 102)",
        ),
        p("attributes", "object", false, "extra attributes"),
    ],
    requires_hello: true,
    long_running: false,
};

/// `file/constraint`.
pub const FILE_CONSTRAINT: MethodSpec = MethodSpec {
    name: "file/constraint",
    description: "Sets a project file constraint: active (starts visible), readonly (edits refused), ignore (kept out).",
    params: &[
        p("pattern", "string", true, "path or glob; absolute paths under the project root are made relative"),
        p("visibility", "string", true, "active | readonly | ignore"),
    ],
    requires_hello: true,
    long_running: false,
};
/// `file/drop`.
pub const FILE_DROP: MethodSpec = MethodSpec {
    name: "file/drop",
    description: "Removes a project file constraint.",
    params: &[p("pattern", "string", true, "the constraint's pattern")],
    requires_hello: true,
    long_running: false,
};
/// `getConstraints`.
pub const GET_CONSTRAINTS: MethodSpec = MethodSpec {
    name: "getConstraints",
    description: "The project's file constraints: [{pattern, visibility}].",
    params: &[],
    requires_hello: true,
    long_running: false,
};

const RUN_NAME: [ParamSpec; 2] = [
    p("run", "string", true, "run alias"),
    p(
        "name",
        "string",
        true,
        "file name under $RUMMY_HOME/skills or /personas, without .md",
    ),
];

/// `skill/add`.
pub const SKILL_ADD: MethodSpec = MethodSpec {
    name: "skill/add",
    description: "Adds $RUMMY_HOME/skills/<name>.md to the run as skill://<name>.",
    params: &RUN_NAME,
    requires_hello: true,
    long_running: false,
};
/// `skill/remove`.
pub const SKILL_REMOVE: MethodSpec = MethodSpec {
    name: "skill/remove",
    description: "Removes skill://<name> from the run.",
    params: &RUN_NAME,
    requires_hello: true,
    long_running: false,
};
/// `getSkills`.
pub const GET_SKILLS: MethodSpec = MethodSpec {
    name: "getSkills",
    description: "The run's skills: [{name, state}].",
    params: &[p("run", "string", true, "run alias")],
    requires_hello: true,
    long_running: false,
};
/// `listSkills`.
pub const LIST_SKILLS: MethodSpec = MethodSpec {
    name: "listSkills",
    description: "Skills available in $RUMMY_HOME/skills: [{name, path}].",
    params: &[],
    requires_hello: true,
    long_running: false,
};
/// `persona/set`.
pub const PERSONA_SET: MethodSpec = MethodSpec {
    name: "persona/set",
    description:
        "Sets the run's persona from $RUMMY_HOME/personas/<name>.md or as text; neither clears it.",
    params: &[
        p("run", "string", true, "run alias"),
        p("name", "string", false, "persona file name, without .md"),
        p("text", "string", false, "persona text"),
    ],
    requires_hello: true,
    long_running: false,
};
/// `listPersonas`.
pub const LIST_PERSONAS: MethodSpec = MethodSpec {
    name: "listPersonas",
    description: "Personas available in $RUMMY_HOME/personas: [{name, path}].",
    params: &[],
    requires_hello: true,
    long_running: false,
};

const STREAM_END: [ParamSpec; 5] = [
    p("run", "string", true, "run alias"),
    p(
        "path",
        "string",
        true,
        "the accepted sh/env proposal's path",
    ),
    p(
        "exitCode",
        "integer",
        false,
        "exit code (stream/completed; default 0)",
    ),
    p("duration", "string", false, "how long it ran"),
    p(
        "reason",
        "string",
        false,
        "why it stopped (stream/aborted, stream/cancel)",
    ),
];
/// `stream`.
pub const STREAM: MethodSpec = MethodSpec {
    name: "stream",
    description: "Appends output to channel <path>_<channel> of an accepted sh/env proposal.",
    params: &[
        p("run", "string", true, "run alias"),
        p("path", "string", true, "the accepted proposal's path"),
        p("channel", "integer", true, "1 stdout, 2 stderr"),
        p("chunk", "string", true, "text to append"),
    ],
    requires_hello: true,
    long_running: false,
};
/// `stream/completed`.
pub const STREAM_COMPLETED: MethodSpec = MethodSpec {
    name: "stream/completed",
    description:
        "Settles the channels: resolved on exit 0, else failed exit:<code>; answers {ok, channels}.",
    params: &STREAM_END,
    requires_hello: true,
    long_running: false,
};
/// `stream/aborted`.
pub const STREAM_ABORTED: MethodSpec = MethodSpec {
    name: "stream/aborted",
    description:
        "Settles the channels as cancelled (the producer stopped); answers {ok, channels}.",
    params: &STREAM_END,
    requires_hello: true,
    long_running: false,
};
/// `stream/cancel`.
pub const STREAM_CANCEL: MethodSpec = MethodSpec {
    name: "stream/cancel",
    description: "Cancels the stream; channels become cancelled and clients get stream/cancelled.",
    params: &STREAM_END,
    requires_hello: true,
    long_running: false,
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
    GET,
    RM,
    CP,
    MV,
    UPDATE,
    FILE_CONSTRAINT,
    FILE_DROP,
    GET_CONSTRAINTS,
    SKILL_ADD,
    SKILL_REMOVE,
    GET_SKILLS,
    LIST_SKILLS,
    PERSONA_SET,
    LIST_PERSONAS,
    STREAM,
    STREAM_COMPLETED,
    STREAM_ABORTED,
    STREAM_CANCEL,
];

/// Every notification the server pushes.
pub const NOTIFICATIONS: &[NotificationSpec] = &[
    NotificationSpec {
        name: "run/state",
        description: "{run, seq, turn, status, summary, history, unknowns, telemetry}: after each dispatched command and at turn end; history holds the entries changed since the previous push.",
    },
    NotificationSpec {
        name: "run/proposal",
        description: "{run, proposed:[{path, body, attributes, turn}]}: a proposal waits for accept (set state resolved), reject (cancelled) or error (failed).",
    },
    NotificationSpec {
        name: "stream/cancelled",
        description: "{run, path, reason}: a stream was cancelled.",
    },
    NotificationSpec {
        name: "ui/render",
        description: "{run, turn, text, append}: streamed model text — the turn's first text at once (append false), then what followed, at most one frame per run every 25 ms.",
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
