//! Errors: the server's JSON-RPC error answers, kept apart from failures of the connection itself.

use std::fmt;

use serde_json::Value;

/// A JSON-RPC error object as the server returned it.
#[derive(Debug, Clone, PartialEq)]
pub struct RpcError {
    /// The `code` member, e.g. `-32601` for "method not found".
    pub code: i64,
    /// The `message` member.
    pub message: String,
    /// The optional `data` member.
    pub data: Option<Value>,
}

impl RpcError {
    /// The code [`CallError::into_rpc`] gives a call that got no answer (closed, timeout,
    /// garbage): no JSON-RPC code is a positive or negative one, so it cannot be the server's.
    pub const CLIENT_FAILURE: i64 = -1;

    /// The `data.kind` the server names the error with (`not_found`, `conflict`, …), if any.
    pub fn kind(&self) -> Option<&str> {
        self.data
            .as_ref()
            .and_then(|d| d.get("kind"))
            .and_then(Value::as_str)
    }

    /// Parses a JSON-RPC `error` member; `None` if it lacks an integer `code`.
    pub fn from_value(error: &Value) -> Option<RpcError> {
        Some(RpcError {
            code: error.get("code")?.as_i64()?,
            message: error
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            data: error.get("data").cloned(),
        })
    }
}

impl fmt::Display for RpcError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "rpc error {}: {}", self.code, self.message)?;
        if let Some(data) = &self.data {
            write!(f, " ({data})")?;
        }
        Ok(())
    }
}

impl std::error::Error for RpcError {}

/// A failure of the connection itself, as opposed to an error answer from the server.
#[derive(Debug, Clone, PartialEq)]
pub enum ClientError {
    /// The TCP connection or WebSocket handshake failed.
    Connect(String),
    /// The server answered the upgrade request with a plain HTTP response (e.g. 401).
    Rejected {
        /// HTTP status of the refusal.
        status: u16,
        /// Response body as text, empty if none.
        body: String,
    },
    /// The connection is closed; holds the server's close code and reason if it sent them.
    Closed(Option<(u16, String)>),
    /// Nothing suitable arrived before the deadline.
    Timeout,
    /// A WebSocket protocol or I/O error.
    Transport(String),
    /// The server sent a frame that is not JSON; holds the text (lossy for binary frames).
    InvalidMessage(String),
    /// An answer or notification is JSON but not of the shape its method promises.
    Unexpected(String),
}

impl fmt::Display for ClientError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClientError::Connect(why) => write!(f, "connect failed: {why}"),
            ClientError::Rejected { status, body } => {
                write!(f, "upgrade rejected with HTTP {status}: {body}")
            }
            ClientError::Closed(Some((code, reason))) => {
                write!(f, "connection closed ({code}: {reason})")
            }
            ClientError::Closed(None) => write!(f, "connection closed"),
            ClientError::Timeout => write!(f, "timed out"),
            ClientError::Transport(why) => write!(f, "transport error: {why}"),
            ClientError::InvalidMessage(text) => write!(f, "invalid message: {text}"),
            ClientError::Unexpected(why) => write!(f, "unexpected answer: {why}"),
        }
    }
}

impl std::error::Error for ClientError {}

/// Why a `call` did not produce a result: the server said no, or the connection failed.
#[derive(Debug, Clone, PartialEq)]
pub enum CallError {
    /// The server answered with a JSON-RPC error.
    Rpc(RpcError),
    /// No valid answer arrived.
    Client(ClientError),
}

impl CallError {
    /// The JSON-RPC error code, or `None` for transport failures.
    pub fn code(&self) -> Option<i64> {
        match self {
            CallError::Rpc(err) => Some(err.code),
            CallError::Client(_) => None,
        }
    }

    /// The JSON-RPC error, with transport failures mapped to [`RpcError::CLIENT_FAILURE`].
    pub fn into_rpc(self) -> RpcError {
        match self {
            CallError::Rpc(err) => err,
            CallError::Client(err) => RpcError {
                code: RpcError::CLIENT_FAILURE,
                message: err.to_string(),
                data: None,
            },
        }
    }
}

impl From<ClientError> for CallError {
    fn from(err: ClientError) -> Self {
        CallError::Client(err)
    }
}

impl From<RpcError> for CallError {
    fn from(err: RpcError) -> Self {
        CallError::Rpc(err)
    }
}

impl fmt::Display for CallError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CallError::Rpc(err) => err.fmt(f),
            CallError::Client(err) => err.fmt(f),
        }
    }
}

impl std::error::Error for CallError {}
