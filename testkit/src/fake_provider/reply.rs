//! The scripted answers a [`FakeProvider`](super::FakeProvider) gives to completion requests.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio::sync::Notify;

/// One scripted answer to a completion request, built with the constructors and builder methods below.
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    pub(crate) kind: ReplyKind,
    pub(crate) delay: Option<Duration>,
    pub(crate) chunk_delay: Option<Duration>,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) gate: Option<Gate>,
}

/// A latch the test opens: a reply [held](Reply::held) on it answers only once it is open, so
/// a test can act while a request is known to be waiting for its answer.
#[derive(Debug, Clone, Default)]
pub struct Gate(Arc<GateState>);

#[derive(Debug, Default)]
struct GateState {
    open: AtomicBool,
    opened: Notify,
}

impl Gate {
    /// A closed gate.
    pub fn new() -> Gate {
        Gate::default()
    }

    /// Opens the gate: replies held on it go out, and later ones are not held.
    pub fn open(&self) {
        self.0.open.store(true, Ordering::SeqCst);
        self.0.opened.notify_waiters();
    }

    /// Resolves once the gate is open.
    pub(crate) async fn opened(&self) {
        loop {
            // Registered before the check, so an `open` between the two still wakes it.
            let opened = self.0.opened.notified();
            if self.0.open.load(Ordering::SeqCst) {
                return;
            }
            opened.await;
        }
    }
}

/// Two gates are equal when they are the same gate.
impl PartialEq for Gate {
    fn eq(&self, other: &Gate) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

/// What kind of answer a [`Reply`] produces; private so the builder stays the only way in.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ReplyKind {
    /// A normal assistant message, as JSON or (for `"stream": true` requests) as SSE.
    Content {
        text: String,
        reasoning: Option<String>,
        usage: Option<(u64, u64)>,
        cost: Option<f64>,
    },
    /// A fixed HTTP status with a fixed body.
    Status { code: u16, body: ReplyBody },
    /// Raw SSE pieces written verbatim, optionally cut off by dropping the connection.
    RawSse {
        pieces: Vec<String>,
        disconnect_after: Option<usize>,
    },
    /// Never answer; the request stays open until the provider stops.
    Hang,
}

/// The body of a [`Reply::status`] answer: JSON is sent as `application/json`, text as `text/plain`.
#[derive(Debug, Clone, PartialEq)]
pub enum ReplyBody {
    /// Serialized and sent with `Content-Type: application/json`.
    Json(Value),
    /// Sent verbatim with `Content-Type: text/plain`.
    Text(String),
}

impl From<Value> for ReplyBody {
    fn from(value: Value) -> Self {
        ReplyBody::Json(value)
    }
}

impl From<&str> for ReplyBody {
    fn from(text: &str) -> Self {
        ReplyBody::Text(text.to_owned())
    }
}

impl From<String> for ReplyBody {
    fn from(text: String) -> Self {
        ReplyBody::Text(text)
    }
}

impl Reply {
    fn new(kind: ReplyKind) -> Self {
        Reply {
            kind,
            delay: None,
            chunk_delay: None,
            headers: Vec::new(),
            gate: None,
        }
    }

    /// A successful assistant message with this content (JSON, or SSE chunks when the request streams).
    pub fn content(text: impl Into<String>) -> Self {
        Reply::new(ReplyKind::Content {
            text: text.into(),
            reasoning: None,
            usage: None,
            cost: None,
        })
    }

    /// A plain HTTP answer with this status and body (e.g. `429` with a JSON error).
    pub fn status(code: u16, body: impl Into<ReplyBody>) -> Self {
        Reply::new(ReplyKind::Status {
            code,
            body: body.into(),
        })
    }

    /// An SSE answer whose body is exactly these pieces, each written as its own chunk.
    pub fn raw_sse(pieces: Vec<String>) -> Self {
        Reply::new(ReplyKind::RawSse {
            pieces,
            disconnect_after: None,
        })
    }

    /// An answer that never comes: the request is held open until the provider stops.
    pub fn hang() -> Self {
        Reply::new(ReplyKind::Hang)
    }

    /// Sets the `reasoning_content` of a [`Reply::content`] message (ignored by other kinds).
    pub fn reasoning(mut self, text: impl Into<String>) -> Self {
        if let ReplyKind::Content { reasoning, .. } = &mut self.kind {
            *reasoning = Some(text.into());
        }
        self
    }

    /// Overrides the reported prompt/completion token counts of a [`Reply::content`] message.
    pub fn usage(mut self, prompt: u64, completion: u64) -> Self {
        if let ReplyKind::Content { usage, .. } = &mut self.kind {
            *usage = Some((prompt, completion));
        }
        self
    }

    /// Reports what a [`Reply::content`] message cost, in US dollars, as OpenRouter does
    /// (`usage.cost`) in chat-completions answers (ignored by other kinds).
    pub fn cost(mut self, usd: f64) -> Self {
        if let ReplyKind::Content { cost, .. } = &mut self.kind {
            *cost = Some(usd);
        }
        self
    }

    /// Drops the connection after `n` pieces of a [`Reply::raw_sse`] answer (ignored by other kinds).
    pub fn disconnect_after(mut self, n: usize) -> Self {
        if let ReplyKind::RawSse {
            disconnect_after, ..
        } = &mut self.kind
        {
            *disconnect_after = Some(n);
        }
        self
    }

    /// Adds a response header, e.g. `("Retry-After", "1")`.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Answers this long after the request arrived (simulated provider latency); the fake's own
    /// work on the request (parsing, recording, the responder) counts within it.
    pub fn delay(mut self, delay: Duration) -> Self {
        self.delay = Some(delay);
        self
    }

    /// Answers only once `gate` is open (after any [`delay`](Reply::delay)).
    pub fn held(mut self, gate: &Gate) -> Self {
        self.gate = Some(gate.clone());
        self
    }

    /// Waits this long between streamed chunks, so they reach the client as separate reads.
    pub fn chunk_delay(mut self, delay: Duration) -> Self {
        self.chunk_delay = Some(delay);
        self
    }
}
