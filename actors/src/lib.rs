//! rummy's actors: the store writer, runs and their loop queues, turn executors, providers, side tasks (the sidecar) and the session state kept through it, web search, accepted commands, sessions and the notification hub.
//!
//! Layering: actors wire `rummy_core`'s pure functions into actix actors; which of them
//! are restarted under actix supervision, and by whom, is `docs/design/actors.md`. Only `StoreActor` writes to SQLite; only `ProviderActor` calls an
//! LLM; only `session` imports `actix-web-actors`.

pub mod admission;
pub mod clock;
pub mod cluster;
pub mod errors;
pub mod faults;
pub mod files;
pub mod health;
pub mod hub;
pub mod loop_queue;
pub mod metrics;
pub mod proposals;
pub mod provider;
pub mod registry;
pub mod run;
pub mod search;
pub mod services;
pub mod session;
pub mod session_state;
pub mod shell;
pub mod sidecar;
pub mod store;
pub mod tokens;
pub mod tool_calls;
pub mod turn;
pub mod web_fetch;
