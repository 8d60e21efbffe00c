//! Test support for rummy: a fake OpenAI-compatible provider and a WebSocket JSON-RPC client.
//!
//! - [`FakeProvider`] serves scripted completion replies (JSON, SSE, errors, hangs,
//!   disconnects, delays) from its own thread and records every request it receives.
//! - [`RpcClient`] talks JSON-RPC 2.0 to a rummy server over WebSocket, matching responses
//!   by id and buffering notifications so tests can assert on them in any order.
//!
//! Both bind or connect to `127.0.0.1` only: tests must never reach outside loopback.

pub mod client;
pub mod fake_provider;

pub use client::{CallError, ClientError, RpcClient, RpcError, UNEXPECTED_SUCCESS};
pub use fake_provider::{FakeProvider, Gate, RecordedRequest, Reply, ReplyBody};
