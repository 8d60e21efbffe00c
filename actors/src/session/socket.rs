//! `Socket`: a duplicate of a connection's descriptor, so a session that ended can make the
//! server close the TCP connection at once.
//!
//! RFC 6455 §7.1.1: after the close handshake the server closes the TCP connection first, and
//! clients wait for it. actix-http instead lingers for the client's FIN until a deadline it
//! takes from a clock refreshed every 500 ms (and, when that deadline is already past as the
//! linger starts, it never looks at it again: 4 of 10 clients of a probe never got a FIN).
//! Shutting the socket for reading when the session stops makes actix-http read the end of
//! the stream: it then writes what it still holds (the close frame) and closes the connection.

use std::os::fd::{AsFd, OwnedFd};
use std::sync::Arc;

/// A connection's socket, duplicated at accept time.
#[derive(Debug, Clone)]
pub struct Socket(Arc<OwnedFd>);

impl Socket {
    /// Duplicates `stream`'s descriptor (`None` when the system refuses).
    pub fn of(stream: &impl AsFd) -> Option<Socket> {
        rustix::io::dup(stream).ok().map(|fd| Socket(Arc::new(fd)))
    }

    /// Ends the connection's reading side: the server reads no more from this client, and
    /// closes the connection once its pending writes are out.
    pub fn stop_reading(&self) {
        if let Err(e) = rustix::net::shutdown(&*self.0, rustix::net::Shutdown::Read) {
            tracing::debug!(error = %e, "socket already closed");
        }
    }
}
