//! rummy's PostgreSQL connection: [`PgConn`], a synchronous diesel `Connection` over
//! tokio-postgres, so the store's functions run on PostgreSQL exactly as they run on SQLite
//! (plain functions over a connection, called from threads that may block).
//!
//! Why this shape: the client is pure Rust — no system libpq, no OpenSSL to
//! build — and TLS goes through the rustls the server already ships. diesel-async's
//! `AsyncConnectionWrapper` turns its async connection into a synchronous one; [`PgConn`] wraps
//! that so it can be a variant of the store's `Db` (diesel's `MultiConnection` needs a helper
//! trait implemented on each variant's type).
//!
//! [`listen`] carries notifications between rummy processes: a [`listen::Listener`] holds one
//! connection that `LISTEN`s and reports every notification, each loss of its connection and
//! each time it listens again; [`listen::notify`] sends one inside a transaction.
//!
//! Invariant: every PostgreSQL socket is driven by one runtime of this crate's own
//! (`runtime`): one worker thread, created on first use. A caller only parks its own thread
//! until its query's answer arrives ([`block_on`]), so the store may be called from any thread —
//! a plain one, a blocking-pool one, or an actix arbiter's — and never starts a runtime inside
//! another.

pub mod admin;
mod conn;
pub mod listen;
mod raw;
mod runtime;
mod tls;
mod url;

pub use conn::PgConn;
pub use runtime::{block_on, Parked};
pub use url::{ConnectOptions, SslMode};
