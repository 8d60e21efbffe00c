//! rummy's domain: everything that can be tested without an actor system.
//!
//! - [`store`] and [`schema`]: the diesel schema, migrations ([`db`]) and store
//!   queries as plain functions over a connection passed in;
//! - [`entry`], [`path`], [`schemes`], [`tokens`]: the entry model;
//! - [`ids`]: row ids as types (project, run, loop, turn);
//! - [`run`]: run statuses and their transitions;
//! - [`skill`]: skill files' frontmatter, and what a run's active skills allow;
//! - [`memory`]: what a project remembers across runs — recall on a loop's first turn, and the
//!   history of its loops;
//! - [`parse`]: reading tool commands out of model replies;
//! - [`hedberg`]: patterns (glob, regex, sed, xpath, jsonpath) and edit formats;
//! - [`wire`]: JSON-RPC framing, error codes, the method catalogue and params;
//! - [`access`]: who may connect (browser origins) and where project roots may be;
//! - [`approval`]: the hash of a pending proposal, what an accept approves;
//! - [`fair`]: fair use — request rate, cost periods, admission of runs to the places in flight;
//! - [`commands`]: what running an accepted `sh`/`env` means, without running it (its
//!   environment, its output capped and batched, how it ended);
//! - [`sidecar`]: side tasks (summaries and the like) as data — the request, the parser, the
//!   telemetry of the call — for the actors' one sidecar path;
//! - [`config`]: configuration from environment variables;
//! - [`time`]: timestamps (the domain has no clock; callers pass `now`).
//!
//! Invariant: this crate knows nothing of actix, tokio, reqwest or the wall
//! clock (the `core_has_no_runtime_dependencies` test in `tests/` checks it); the
//! PostgreSQL connection it stores through (`rummy-pg`) keeps its I/O runtime to itself.

pub mod access;
pub mod approval;
pub mod commands;
pub mod config;
pub mod db;
pub mod entry;
pub mod fair;
pub mod files;
pub mod hedberg_sql;
pub mod ids;
pub mod memory;
pub mod run;
pub mod schema;
pub mod schemes;
pub mod session_state;
pub mod sidecar;
pub mod skill;
pub mod store;
pub mod tools;
pub mod turn;
pub mod wire;
