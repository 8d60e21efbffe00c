//! rummy's domain: what a turn does, what the tools do, what a project remembers, who may
//! connect, the wire, the configuration — everything that can be tested without an actor system.
//!
//! The layers below are crates of their own, so cargo keeps them below:
//! `rummy-text` (parse, hedberg, paths, the token estimate), `rummy-provider` (provider wire
//! formats, limits, routing and timestamps) and `rummy-store` (the schema, the stored model and
//! the queries). This crate depends on all three; none of them depends on it.
//!
//! - [`orchestration`]: a run's orchestration as a pure state machine (its actor interprets it),
//!   and the calls a client makes on a run (`RunCommand`);
//! - [`turn`]: one turn of a loop, from the assembled prompt to the reply's effects;
//! - [`tools`]: what each tool command does to the store and the project;
//! - [`memory`]: what a project remembers across runs — recall on a loop's first turn, and the
//!   history of its loops;
//! - [`session_state`]: the state a session carries between turns;
//! - [`files`]: a project's files: the root, its scan and its sync into the store;
//! - [`wire`]: JSON-RPC framing, error codes, the method catalogue and params;
//! - [`access`]: who may connect (browser origins, bearer tokens) and where project roots may be;
//! - [`fair`]: fair use — request rate and admission of runs to the places in flight;
//! - [`shell`]: what running an accepted `sh`/`env` means, without running it (its
//!   environment, its output capped and batched, how it ended);
//! - [`sidecar`]: side tasks (summaries and the like) as data — the request, the parser, the
//!   telemetry of the call — for the actors' one sidecar path;
//! - [`web`]: where the model's web fetches may go — the addresses never reached and a
//!   project's domains;
//! - [`config`]: configuration from environment variables.
//!
//! Invariant: this crate knows nothing of actix, tokio, reqwest or the wall
//! clock (the `core_has_no_runtime_dependencies` test in `tests/` checks it); the
//! PostgreSQL connection it stores through (`rummy-pg`, under `rummy-store`) keeps its I/O
//! runtime to itself.

pub mod access;
pub mod config;
pub mod fair;
pub mod files;
pub mod memory;
pub mod orchestration;
pub mod session_state;
pub mod shell;
pub mod sidecar;
pub mod tools;
pub mod turn;
pub mod web;
pub mod wire;
