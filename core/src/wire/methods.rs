//! The catalogue `discover` answers: the methods (from the protocol's method table,
//! [`rummy_protocol::methods`]), the notifications the server pushes with their payloads, and
//! the run statuses, stop reasons and error codes it uses.

use super::jsonrpc::{ErrorKind, PROTOCOL_VERSION};
use rummy_protocol::catalogue::{Catalogue, NotificationDoc, ParamDoc};
use rummy_store::run::{RunStatus, StopReason};
use std::collections::BTreeMap;

pub use rummy_protocol::methods::{Method, MethodInfo, PERIODS, STATES, VISIBILITIES};

/// One field of a notification's payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParamSpec {
    /// Wire name (camelCase).
    pub name: &'static str,
    /// JSON type (`string`, `integer`, `number`, `boolean`, `object`, `array`).
    pub ty: &'static str,
    /// Whether it is always present.
    pub required: bool,
    /// What it is for.
    pub description: &'static str,
    /// The values it takes, when they are a fixed set.
    pub values: &'static [&'static str],
}

impl ParamSpec {
    /// The same field, taking only `values`.
    pub const fn one_of(self, values: &'static [&'static str]) -> ParamSpec {
        ParamSpec { values, ..self }
    }
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
        values: &[],
    }
}

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
            p("history", "array", true, "entries changed since the previous push: [{path, tool, state, outcome, status, visibility, turn, tokens, attributes, body}], with proposal (its kind) on a tool's proposal and hash while it is pending; a body over RUMMY_INLINE_BODY_BYTES is its first bytes with bodyBytes and bodyTruncated; a channel's growth is {append: true, offset, body}: the text appended at that byte offset"),
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
            p("proposed", "array", true, "[{path, body, attributes, turn, hash, proposal}]; proposal: the proposal's kind (edit, cp, mv, rm, sh, env or ask_user, as attributes.kind; attributes also keep commandIndex, which marks a tool's proposal); hash: the SHA-256 (hex) of the proposal's canonical JSON (sorted keys of kind, paths, command, content, patch; absent ones left out), what an accept's approves names; for file edits attributes carry patch (the unified diff), content, created, beforeTokens, afterTokens and warnings"),
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
        name: "tool/call",
        description: "A person accepted a call of a tool this connection offered (tools/offer): the client calls it and answers with tool/result. Sent to the offering connection alone.",
        payload: &[
            RUN_FIELD,
            p("path", "string", true, "the call's proposal path, which tool/result names"),
            p("server", "string", true, "the MCP server holding the tool"),
            p("tool", "string", true, "the tool"),
            p("arguments", "object", true, "the call's arguments"),
        ],
    },
    NotificationSpec {
        name: "ui/notify",
        description: "A notice for the people of the project, to show as it is: a run waits for a decision (info, with each proposal a turn pauses on), a loop failed (error, 500) or was abandoned by the referee (warn, 508), the server is stopping (warn, before it closes the connections; to every connection, no run).",
        payload: &[
            p("level", "string", true, "how much it matters").one_of(NOTIFY_LEVELS),
            p("run", "string", false, "the run it is about; absent when it is about none"),
            p("text", "string", true, "the notice, one line"),
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

/// The `ui/notify` levels, in [`rummy_protocol::NotifyLevel::ALL`] order.
const NOTIFY_LEVELS: &[&str] = &["info", "warn", "error"];

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

fn payload_doc(payload: &[ParamSpec]) -> BTreeMap<String, ParamDoc> {
    payload
        .iter()
        .map(|p| {
            let doc = ParamDoc {
                ty: p.ty.to_owned(),
                required: p.required,
                description: p.description.to_owned(),
                aliases: Vec::new(),
                values: p.values.iter().map(|v| (*v).to_owned()).collect(),
            };
            (p.name.to_owned(), doc)
        })
        .collect()
}

/// The `discover` answer: every method of the table with its params, the notifications with
/// their payloads, the run statuses, the stop reasons and the error codes.
pub fn catalogue() -> Catalogue {
    let notifications = NOTIFICATIONS
        .iter()
        .map(|n| {
            let doc = NotificationDoc {
                description: n.description.to_owned(),
                payload: payload_doc(n.payload),
            };
            (n.name.to_owned(), doc)
        })
        .collect();
    Catalogue {
        protocol_version: PROTOCOL_VERSION.to_owned(),
        methods: rummy_protocol::methods::docs(),
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

    /// The notice levels the catalogue lists are the protocol's, in order.
    #[test]
    fn notify_levels_are_the_protocols() {
        let protocol: Vec<&str> = rummy_protocol::NotifyLevel::ALL
            .iter()
            .map(|l| l.as_str())
            .collect();
        assert_eq!(NOTIFY_LEVELS, protocol.as_slice());
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
            Push, RunProgress, RunProposal, RunState, StreamCancelled, ToolCall, UiNotify, UiRender,
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
        check::<ToolCall>();
        check::<UiNotify>();
        assert_eq!(NOTIFICATIONS.len(), 7);
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
