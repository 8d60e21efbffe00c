//! The method catalogue: every RPC method and notification with its params, as `discover` returns it.
//!
//! The server's routing table pairs each [`MethodSpec`] here with its handler,
//! so the catalogue cannot drift from what is actually served.

use super::jsonrpc::{ErrorKind, PROTOCOL_VERSION};
use rummy_protocol::catalogue::{Catalogue, MethodDoc, NotificationDoc, ParamDoc};
use rummy_store::run::{RunStatus, StopReason};
use std::collections::BTreeMap;

/// One documented parameter (or field of a notification's payload).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParamSpec {
    /// Wire name (camelCase).
    pub name: &'static str,
    /// JSON type (`string`, `integer`, `number`, `boolean`, `object`, `array`).
    pub ty: &'static str,
    /// Whether the call fails without it (for a payload: whether it is always present).
    pub required: bool,
    /// What it is for.
    pub description: &'static str,
    /// Other spellings accepted for it (the seed's snake_case).
    pub aliases: &'static [&'static str],
    /// The values it takes, when they are a fixed set.
    pub values: &'static [&'static str],
}

impl ParamSpec {
    /// The same param, also accepted under `aliases`.
    pub const fn aliased(self, aliases: &'static [&'static str]) -> ParamSpec {
        ParamSpec { aliases, ..self }
    }

    /// The same param, taking only `values`.
    pub const fn one_of(self, values: &'static [&'static str]) -> ParamSpec {
        ParamSpec { values, ..self }
    }

    /// Every wire name the param is read under: its name, then its aliases.
    pub fn spellings(&self) -> impl Iterator<Item = &'static str> {
        std::iter::once(self.name).chain(self.aliases.iter().copied())
    }
}

/// One method of the protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MethodSpec {
    /// Wire name.
    pub name: &'static str,
    /// What it does and what it answers.
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
    /// When it is sent.
    pub description: &'static str,
    /// The fields of its params.
    pub payload: &'static [ParamSpec],
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
        aliases: &[],
        values: &[],
    }
}

/// Entry states, as `state` params take them.
const STATES: &[&str] = &["proposed", "streaming", "resolved", "failed", "cancelled"];
/// Entry visibilities, as `visibility` params take them.
const VISIBILITIES: &[&str] = &["visible", "summarized", "archived"];

/// The statuses of `run/progress` (transient activity of a run's current turn).
pub mod progress {
    /// The provider call waits for a place (`RUMMY_<PROVIDER>_CONCURRENCY`, per-minute limits, a 429
    /// pause); with `detail: "runs_limit"`, a loop going on after a person answered it waits for
    /// a place among the runs in flight (`RUMMY_MAX_RUNS_PER_*`).
    pub const QUEUED: &str = "queued";
    /// The model is being called.
    pub const THINKING: &str = "thinking";
    /// The reply is being parsed and its commands dispatched.
    pub const PROCESSING: &str = "processing";
    /// A transient provider failure is retried after `delayMs`.
    pub const RETRYING: &str = "retrying";
    /// The call went to the fallback model `to`.
    pub const REROUTED: &str = "rerouted";
    /// The turn waits for an accepted command's output (`path`, the proposal).
    pub const STREAMING: &str = "streaming";
    /// A side task (`detail`: `summary`, `summary.extend`, `summary.compress`, `session_state`,
    /// `rerank`, `consolidate`) is sent to the sidecar model: the run waits for it, up to
    /// `RUMMY_SIDECAR_TIMEOUT`.
    pub const SIDECAR: &str = "sidecar";
    /// Every status, in the order a turn may show them.
    pub const ALL: &[&str] = &[
        QUEUED, THINKING, PROCESSING, RETRYING, REROUTED, STREAMING, SIDECAR,
    ];
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
    description: "Binds the connection to a project (created by the first hello with a projectRoot; a name alone opens an existing one); answers {rummyVersion, protocolVersion, projectId, projectRoot, maxTurns}. Calls sent after it without waiting (or after it in a batch) are handled once it has completed.",
    params: &[
        p("name", "string", true, "the project's name"),
        p("projectRoot", "string", false, "absolute path of the project's directory on the server: creates the project, or must equal an existing one's (-32005 otherwise); absent, the existing project of that name is opened (-32004 when there is none)"),
        p("configPath", "string", false, "client configuration path"),
        p("clientVersion", "string", false, "protocol version the client speaks; another MAJOR is refused"),
        TOKEN,
    ],
    requires_hello: false,
    long_running: true,
};
/// A token given in a call, for clients that cannot set headers.
const TOKEN: ParamSpec = p(
    "token",
    "string",
    false,
    "a token (TEAM.md), for clients that cannot send Authorization: Bearer on the upgrade; once any token exists every connection needs one (-32001 without, and the connection closes)",
);
/// `getProjects`.
pub const GET_PROJECTS: MethodSpec = MethodSpec {
    name: "getProjects",
    description: "The projects this connection may open, by name: [{name, projectId, projectRoot, createdAt, costCeiling, period, periodStart, spent, commandNetwork}] — spent: what its turns cost (USD) since periodStart; commandNetwork: whether its accepted commands reach the network as an admin set it (null: the server's setting).",
    params: &[TOKEN, LIST[0], LIST[1]],
    requires_hello: false,
    long_running: false,
};
/// `token/create`.
pub const TOKEN_CREATE: MethodSpec = MethodSpec {
    name: "token/create",
    description: "Admin: makes a token for a user (made on first use); answers {token, id, user, prefix, admin, projects, createdAt, expiresAt} — the only time the token's text is shown.",
    params: &[
        p("user", "string", true, "the user's name"),
        p("admin", "boolean", false, "an admin token: creates projects, manages models, tokens and limits, opens every project"),
        p("projects", "array", false, "names of the projects a member token opens"),
        p("expiresInDays", "integer", false, "days until it stops working; absent, never"),
    ],
    requires_hello: false,
    long_running: false,
};
/// `project/set`.
pub const PROJECT_SET: MethodSpec = MethodSpec {
    name: "project/set",
    description: "Admin: sets a project's cost ceiling — at or over it (the turns' cost in the current period) new loops of the project queue (queued.reason cost_ceiling) until it is raised or removed or the period rolls over — and whether its accepted commands reach the network. Answers the project as getProjects lists it.",
    params: &[
        p("name", "string", true, "the project's name"),
        p("costCeiling", "number", false, "US dollars per period, 0 or more; null removes the ceiling; absent keeps it"),
        p("period", "string", false, "the period spending is summed over, in UTC: month (calendar month, the default) or day; absent keeps it").one_of(PERIODS),
        p("commandNetwork", "boolean", false, "whether the project's accepted commands reach the network (TCP to RUMMY_COMMAND_NETWORK_PORTS), over the server's RUMMY_COMMAND_NETWORK; null removes the override; absent keeps it"),
    ],
    requires_hello: false,
    long_running: false,
};
/// The cost periods, in [`rummy_store::period::CostPeriod::ALL`] order.
const PERIODS: &[&str] = &["month", "day"];
/// `token/list`.
pub const TOKEN_LIST: MethodSpec = MethodSpec {
    name: "token/list",
    description: "Admin: every token, without its text: [{id, user, prefix, admin, projects, createdAt, expiresAt, revokedAt}].",
    params: &[],
    requires_hello: false,
    long_running: false,
};
/// `token/revoke`.
pub const TOKEN_REVOKE: MethodSpec = MethodSpec {
    name: "token/revoke",
    description: "Admin: revokes a token; the connections it opened are closed (1008). Answers it as token/list shows it.",
    params: &[p("token", "string", true, "the token's id or its listed prefix")],
    requires_hello: false,
    long_running: false,
};
/// `server/doctor`.
pub const SERVER_DOCTOR: MethodSpec = MethodSpec {
    name: "server/doctor",
    description: "Admin: checks what only the server can reach, each with what to do when it fails: {version, database: {ok, detail} (a probe row written and committed), providers: [{name, baseUrl, ok, detail}] (each configured provider's models endpoint asked), models: [{alias, actual, contextLength, ok, detail}] (context lengths known: stored, or asked of the provider)}.",
    params: &[],
    requires_hello: false,
    long_running: false,
};
/// `getModels`.
pub const GET_MODELS: MethodSpec = MethodSpec {
    name: "getModels",
    description: "Model aliases: [{alias, actual, contextLength, fallback, configured}] — configured: whether the server's environment defines it now (false: the database keeps it from an earlier start's environment or an addModel). Served before rummy/hello.",
    params: &LIST,
    requires_hello: false,
    long_running: false,
};
/// `addModel`.
pub const ADD_MODEL: MethodSpec = MethodSpec {
    name: "addModel",
    description:
        "Adds or replaces a model alias; answers {id, alias}. Admin-only once tokens exist. Served before rummy/hello.",
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
    requires_hello: false,
    long_running: false,
};
/// `removeModel`.
pub const REMOVE_MODEL: MethodSpec = MethodSpec {
    name: "removeModel",
    description: "Removes a model alias. Admin-only once tokens exist. Served before rummy/hello.",
    params: &[p("alias", "string", true, "the alias")],
    requires_hello: false,
    long_running: false,
};
/// `getRoutes`.
pub const GET_ROUTES: MethodSpec = MethodSpec {
    name: "getRoutes",
    description: "Routing's class → model map as the server is configured: [{class, model, variable}] for code, reasoning and default; model null: a run with route: true keeps its own model for that class. Served before rummy/hello.",
    params: &[],
    requires_hello: false,
    long_running: false,
};
/// `route/check`.
pub const ROUTE_CHECK: MethodSpec = MethodSpec {
    name: "route/check",
    description: "What routing would do with a text as a loop's prompt: {class, mapped, run, routing, model, reason} — its class, the alias the class maps to, whether routing is on (the run's route setting; without a run, whether any class is mapped), the model the loop would use, and why in words (saying so when routing is off). Classifies only: nothing is called or stored.",
    params: &[
        p("text", "string", true, "the text, as a loop's prompt"),
        p("run", "string", false, "a run alias: its route setting and model decide; absent, a run with route: true"),
    ],
    requires_hello: true,
    long_running: false,
};
/// `getRuns`.
pub const GET_RUNS: MethodSpec = MethodSpec {
    name: "getRuns",
    description:
        "The project's runs, newest first: [{run, status, turn, summary, model, created, tokens, cost}].",
    params: &LIST,
    requires_hello: true,
    long_running: false,
};
/// `getRun`.
pub const GET_RUN: MethodSpec = MethodSpec {
    name: "getRun",
    description: "One run's whole state: {run, status, stopReason, queued, mode, turn, model, route, temperature, persona, contextLimit, summary, history, unknowns, recall, telemetry, lastSeq, created}; with sinceSeq also missed: the notifications it pushed after that seq, [{method, params}]; with limit, history is a page of it (counted from the newest entry) and historyTotal the number of entries. Bodies, the history's and the replayed pushes', are at most RUMMY_INLINE_BODY_BYTES (bodyBytes, bodyTruncated); missed holds as many pushes as fit the message (missedMore: true when more followed); a history that does not fit RUMMY_MAX_MESSAGE_BYTES is refused -32007 with data.limit, how many of its newest entries fit.",
    params: &[
        p("run", "string", true, "run alias"),
        p(
            "sinceSeq",
            "integer",
            false,
            "replay notifications with a greater seq",
        ),
        p(
            "limit",
            "integer",
            false,
            "page the history: at most this many entries (at most 1000), the newest; the answer adds historyTotal",
        ),
        p(
            "offset",
            "integer",
            false,
            "with limit: how many of the newest history entries to skip",
        ),
    ],
    requires_hello: true,
    long_running: false,
};
/// `getEntries`.
pub const GET_ENTRIES: MethodSpec = MethodSpec {
    name: "getEntries",
    description: "Read-only listing of a run's entries: [{path, scheme, state, outcome, status, visibility, turn, tokens, attributes, body?}]; bodies only with withBody, each at most RUMMY_INLINE_BODY_BYTES (a longer one is its first bytes with bodyBytes, its whole size, and bodyTruncated: true; getBody reads it whole). A page whose answer would pass RUMMY_MAX_MESSAGE_BYTES is refused -32007 with data.limit, how many of its entries fit.",
    params: &[
        p("run", "string", true, "run alias"),
        p("pattern", "string", false, "only paths matching this hedberg pattern (glob, regex, …; * is every path)"),
        p("scheme", "string", false, "only this scheme (file for project files)"),
        p("state", "string", false, "only entries in this state").one_of(STATES),
        p("visibility", "string", false, "only entries at this visibility").one_of(VISIBILITIES),
        p("bodyFilter", "string", false, "only entries whose body matches this hedberg pattern"),
        p("withBody", "boolean", false, "include bodies"),
        p("limit", "integer", false, "page size (default 100, at most 1000)"),
        p("offset", "integer", false, "items to skip"),
    ],
    requires_hello: true,
    long_running: false,
};
/// `getBody`.
pub const GET_BODY: MethodSpec = MethodSpec {
    name: "getBody",
    description: "Reads a slice of one entry's body, in bytes of its UTF-8 text (a body sent with bodyTruncated is read whole this way): {path, offset, body, bodyBytes, next}; next is the offset of the next slice, null at the end. A slice never cuts a character: its end moves back to the character's start (a slice too short for the character at offset holds that one whole character). An offset past the end or inside a character is -32602; an unknown path -32004. The entries are those getEntries lists.",
    params: &[
        p("run", "string", true, "run alias"),
        p("path", "string", true, "the entry's path"),
        p("offset", "integer", false, "where the slice starts, in bytes (default 0)"),
        p("length", "integer", false, "the most bytes wanted (default and at most what fits a message: RUMMY_MAX_MESSAGE_BYTES less 1 KiB, and less again for characters JSON escapes)"),
    ],
    requires_hello: true,
    long_running: false,
};
/// `set`.
pub const SET: MethodSpec = MethodSpec {
    name: "set",
    description: "Writes an entry (body, append, state, visibility, attribute merge; with pattern or bodyFilter on every match); answers {ok, path} (or {ok, count}). A known:// body over RUMMY_MAX_ENTRY_TOKENS is refused -32007; a project file's body or state is refused -32003 (files change on disk and through accepted proposals). On a proposal's path, state resolves it (resolved accept, cancelled reject, failed error; body = output or reason, ignored on an accept of a command the server runs); answers {ok, path, state, outcome}; with approves, refused -32005 unless it is the proposal's hash. A pending proposal is never edited: any other change of its body, attributes or state is refused -32003. On run://<alias>: start (body + attributes.model; attributes.fork to fork), continue (body; attributes change the run's settings first), inject (attributes.inject), configure (attributes only) or cancel (state: cancelled); answers {ok, alias} at once.",
    params: &[
        p("run", "string", false, "run alias (on run:// paths only the same alias, or absent)"),
        p("path", "string", true, "entry path, a pattern with pattern: true, or run://<alias> (run:// alone: the server names the run)"),
        p("body", "string", false, "new body, or the chunk to append; on run:// the prompt"),
        p("state", "string", false, "new state (on run:// only cancelled)").one_of(STATES),
        p("outcome", "string", false, "why, with failed or cancelled"),
        p("visibility", "string", false, "new visibility").one_of(VISIBILITIES),
        p("attributes", "object", false, "entry attributes (replace them with a body, merged without; a null value removes a key); on run://: model, mode (ask | act), persona, temperature (0-2), contextLimit (>= 1024), fork, inject, noRepo, noInteraction, noWeb, noProposals, route, recall, recallRerank, consolidate, summarize, skills (skill names, added before the loop), fallback (false: no turn's call goes to its model's fallback), sessionState (keep session://state, updated by the sidecar between loops), and nothing else"),
        p("append", "boolean", false, "append body to the current body"),
        p("pattern", "boolean", false, "treat path as a hedberg pattern"),
        p("bodyFilter", "string", false, "only entries whose body matches this hedberg pattern"),
        p("approves", "string", false, "on a proposal's resolution: the hash of the proposal decided on (run/proposal's hash); refused -32005 when the proposal's differs"),
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
        p("visibility", "string", false, "visibility to set (default visible)").one_of(VISIBILITIES),
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
    )
    .one_of(VISIBILITIES),
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
        p("visibility", "string", true, "how the matching files are treated").one_of(&["active", "readonly", "ignore"]),
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
    description: "Adds $RUMMY_HOME/skills/<name>.md to the run as skill://<name>: its frontmatter (description, whenToUse, allowedTools, paths, memoryScope) is checked first — invalid, -32602 naming the field — and the project files its paths match become visible. Answers {ok, skill, path}.",
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
    description: "The run's skills with their frontmatter: [{name, state, active, description, whenToUse, allowedTools, paths, memoryScope}]; active: in the run's view and not archived.",
    params: &[p("run", "string", true, "run alias")],
    requires_hello: true,
    long_running: false,
};
/// `listSkills`.
pub const LIST_SKILLS: MethodSpec = MethodSpec {
    name: "listSkills",
    description: "Skills available in $RUMMY_HOME/skills: [{name, path, description, whenToUse, error}]; error: why skill/add would refuse it.",
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

const RUN_PATH: [ParamSpec; 2] = [
    p("run", "string", true, "run alias"),
    p(
        "path",
        "string",
        true,
        "the accepted sh/env proposal's path",
    ),
];
/// `stream`.
pub const STREAM: MethodSpec = MethodSpec {
    name: "stream",
    description: "Appends output to channel <path>_<channel> of an accepted sh/env proposal, capped at RUMMY_COMMAND_OUTPUT_BYTES per channel as the server's own commands are (past it a marker once, then chunks are dropped); watchers get run/state with {append: true, offset, body}, only what was appended.",
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
    params: &[
        RUN_PATH[0],
        RUN_PATH[1],
        p(
            "exitCode",
            "integer",
            false,
            "the command's exit code (default 0)",
        )
        .aliased(&["exit_code"]),
        p("duration", "string", false, "how long it ran"),
    ],
    requires_hello: true,
    long_running: false,
};
/// `stream/aborted`.
pub const STREAM_ABORTED: MethodSpec = MethodSpec {
    name: "stream/aborted",
    description:
        "Settles the channels as cancelled (the producer stopped); answers {ok, channels}.",
    params: &[
        RUN_PATH[0],
        RUN_PATH[1],
        p("reason", "string", false, "why the producer stopped"),
        p("duration", "string", false, "how long it ran"),
    ],
    requires_hello: true,
    long_running: false,
};
/// `stream/cancel`.
pub const STREAM_CANCEL: MethodSpec = MethodSpec {
    name: "stream/cancel",
    description: "Cancels the stream: the channels become cancelled and every client of the project gets stream/cancelled; answers {ok, channels}.",
    params: &[
        RUN_PATH[0],
        RUN_PATH[1],
        p("reason", "string", false, "why (default \"cancelled\")"),
    ],
    requires_hello: true,
    long_running: false,
};

/// Every method, in catalogue order.
pub const METHODS: &[MethodSpec] = &[
    PING,
    DISCOVER,
    GET_PROJECTS,
    HELLO,
    GET_MODELS,
    ADD_MODEL,
    REMOVE_MODEL,
    GET_ROUTES,
    ROUTE_CHECK,
    GET_RUNS,
    GET_RUN,
    GET_ENTRIES,
    GET_BODY,
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
    TOKEN_CREATE,
    TOKEN_LIST,
    TOKEN_REVOKE,
    PROJECT_SET,
    SERVER_DOCTOR,
];

const RUN_FIELD: ParamSpec = p("run", "string", true, "the run's alias");
const TURN_FIELD: ParamSpec = p("turn", "integer", true, "the run's current turn number");

/// Every notification the server pushes (to every connection bound to the run's project).
pub const NOTIFICATIONS: &[NotificationSpec] = &[
    NotificationSpec {
        name: "run/state",
        description: "After each dispatched command, at turn end and at loop end. Incremental: history holds the entries changed since the run's previous push; getRun {sinceSeq} replays what a connection missed.",
        payload: &[
            RUN_FIELD,
            p("seq", "integer", true, "per-run sequence number, increasing by one with each push"),
            TURN_FIELD,
            p("status", "integer", true, "the run's status").one_of(&["100", "102", "200", "202", "413", "499", "500", "508"]),
            p("stopReason", "string", true, "why the last loop ended; null while a loop is queued, running or waiting").one_of(STOP_REASONS),
            p("summary", "string", true, "the latest summary the model gave"),
            p("history", "array", true, "entries changed since the previous push: [{path, tool, state, outcome, status, visibility, turn, tokens, attributes, body}]; a body over RUMMY_INLINE_BODY_BYTES is its first bytes with bodyBytes and bodyTruncated; a channel's growth is {append: true, offset, body}: the text appended at that byte offset"),
            p("unknowns", "array", true, "open questions: [{path, body, shared}]"),
            p("telemetry", "object", true, "at turn end: token counts (prompt, cached, completion, reasoning), cost, context distribution, and the side tasks the turn made (sidecar); null mid-turn"),
            p("route", "object", true, "the current loop's routing decision {class, model}, or null"),
            p("queued", "object", false, "why a loop waits, {reason, position}: with status 100, for a place (runs_limit: the project's or the user's runs in flight; cost_ceiling: the project's spending) and position its place in that line; with 102 or 202, behind the run's own loop (loop) and position how many loops wait; absent when no loop waits").one_of(QUEUE_REASONS),
            p("historyOmitted", "integer", false, "how many changed entries did not fit RUMMY_MAX_MESSAGE_BYTES and were left out (read the run again with getRun); absent when none was"),
        ],
    },
    NotificationSpec {
        name: "run/progress",
        description: "Transient activity of the run's current turn; not stored, not replayed.",
        payload: &[
            RUN_FIELD,
            TURN_FIELD,
            p("status", "string", true, "what the turn is doing").one_of(progress::ALL),
            p("detail", "string", false, "why (queued, retrying, rerouted); sidecar: the side task"),
            p("delayMs", "integer", false, "retrying: how long until the retry"),
            p("to", "string", false, "rerouted: the fallback model"),
            p("path", "string", false, "streaming: the accepted command whose output the turn waits for"),
        ],
    },
    NotificationSpec {
        name: "run/proposal",
        description: "A proposal waits for a client: accept (set state resolved), reject (cancelled) or error (failed) on its path.",
        payload: &[
            RUN_FIELD,
            p("proposed", "array", true, "[{path, body, attributes, turn, hash}]; hash: the SHA-256 (hex) of the proposal's canonical JSON (sorted keys of kind, paths, command, content, patch; absent ones left out), what an accept's approves names; for file edits attributes carry patch (the unified diff), content, created, beforeTokens, afterTokens and warnings"),
        ],
    },
    NotificationSpec {
        name: "stream/cancelled",
        description: "A client cancelled a stream (stream/cancel); whoever runs the command stops it.",
        payload: &[
            RUN_FIELD,
            p("path", "string", true, "the sh/env proposal's path"),
            p("reason", "string", true, "why"),
        ],
    },
    NotificationSpec {
        name: "ui/render",
        description: "Streamed model text: the turn's first text at once (append false), then what followed, at most one frame per run every 25 ms and 64 KiB of text each.",
        payload: &[
            RUN_FIELD,
            TURN_FIELD,
            p("text", "string", true, "the text"),
            p("append", "boolean", true, "false: replaces what the turn showed; true: follows it"),
            p("reasoning", "boolean", false, "true: the model's reasoning, streamed apart from its text (with its own append sequence); absent: its text"),
        ],
    },
];

/// The `queued.reason` values, in [`crate::fair::admission::QueueReason::ALL`] order.
const QUEUE_REASONS: &[&str] = &["loop", "runs_limit", "cost_ceiling"];

/// The `stopReason` values, in [`rummy_store::run::StopReason::ALL`] order.
const STOP_REASONS: &[&str] = &[
    "concluded",
    "max_turns",
    "cancelled",
    "failed",
    "abandoned",
    "context_full",
    "interrupted",
];

fn params_doc(params: &[ParamSpec]) -> BTreeMap<String, ParamDoc> {
    let owned = |list: &[&str]| list.iter().map(|v| (*v).to_owned()).collect();
    params
        .iter()
        .map(|p| {
            let doc = ParamDoc {
                ty: p.ty.to_owned(),
                required: p.required,
                description: p.description.to_owned(),
                aliases: owned(p.aliases),
                values: owned(p.values),
            };
            (p.name.to_owned(), doc)
        })
        .collect()
}

/// The `discover` answer for a list of served methods: the methods with their params, the
/// notifications with their payloads, the run statuses, the stop reasons and the error codes.
pub fn catalogue(methods: &[&MethodSpec]) -> Catalogue {
    let methods = methods
        .iter()
        .map(|m| {
            let doc = MethodDoc {
                description: m.description.to_owned(),
                params: params_doc(m.params),
                requires_hello: m.requires_hello,
            };
            (m.name.to_owned(), doc)
        })
        .collect();
    let notifications = NOTIFICATIONS
        .iter()
        .map(|n| {
            let doc = NotificationDoc {
                description: n.description.to_owned(),
                payload: params_doc(n.payload),
            };
            (n.name.to_owned(), doc)
        })
        .collect();
    Catalogue {
        protocol_version: PROTOCOL_VERSION.to_owned(),
        methods,
        notifications,
        run_statuses: RunStatus::ALL
            .iter()
            .map(|s| (s.code().to_string(), s.meaning().to_owned()))
            .collect(),
        stop_reasons: StopReason::ALL
            .iter()
            .map(|r| (r.as_str().to_owned(), r.meaning().to_owned()))
            .collect(),
        errors: ErrorKind::ALL
            .iter()
            .map(|k| (k.code().to_string(), k.name().to_owned()))
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    /// The stop reasons the catalogue lists are the engine's, in order.
    #[test]
    fn stop_reasons_are_the_engines() {
        let engine: Vec<&str> = StopReason::ALL.iter().map(|r| r.as_str()).collect();
        assert_eq!(STOP_REASONS, engine.as_slice());
    }

    /// The queue reasons and cost periods the catalogue lists are the engine's, in order.
    #[test]
    fn queue_reasons_and_periods_are_the_engines() {
        let reasons: Vec<&str> = crate::fair::admission::QueueReason::ALL
            .iter()
            .map(|r| r.as_str())
            .collect();
        assert_eq!(QUEUE_REASONS, reasons.as_slice());
        let periods: Vec<&str> = rummy_store::period::CostPeriod::ALL
            .iter()
            .map(|p| p.as_str())
            .collect();
        assert_eq!(PERIODS, periods.as_slice());
    }

    /// Each notification's payload lists exactly the fields of its protocol type, which the
    /// server writes and clients read.
    #[test]
    fn notification_payloads_are_the_protocol_types() {
        use crate::wire::notifications::{
            Push, RunProgress, RunProposal, RunState, StreamCancelled, UiRender,
        };
        fn check<'de, T: Push + serde::Deserialize<'de>>() {
            let spec = NOTIFICATIONS.iter().find(|n| n.name == T::METHOD);
            let mut listed: Vec<&str> = spec
                .map(|n| n.payload.iter().map(|p| p.name).collect())
                .unwrap_or_default();
            let mut read = crate::wire::shape::fields_of::<T>().to_vec();
            listed.sort_unstable();
            read.sort_unstable();
            assert_eq!(listed, read, "{}", T::METHOD);
        }
        check::<RunState>();
        check::<RunProgress>();
        check::<RunProposal>();
        check::<UiRender>();
        check::<StreamCancelled>();
        assert_eq!(NOTIFICATIONS.len(), 5);
    }

    /// The run statuses `run/state` lists are the engine's.
    #[test]
    fn run_state_statuses_are_the_engines() {
        let engine: Vec<String> = RunStatus::ALL
            .iter()
            .map(|s| s.code().to_string())
            .collect();
        let listed = NOTIFICATIONS[0].payload[3].values;
        assert_eq!(
            listed,
            engine.iter().map(String::as_str).collect::<Vec<_>>()
        );
    }
}
