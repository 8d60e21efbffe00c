//! `SessionActor`: one WebSocket connection speaking JSON-RPC 2.0 — the only importer of `actix-web-actors`.
//!
//! Invariants: a malformed or hostile message gets an error answer and the
//! connection stays usable (except the WebSocket RFC's own closes: 1007 for
//! invalid UTF-8, 1009 for an oversized frame; and 1013 when the client stopped reading and
//! its unread notifications passed the limit, see `hub`); a response is sent before any
//! notification its request caused (notifications of a run with a request in
//! flight are held until the response is out).

mod routes;

pub use routes::{catalogue, Binding, SessionDeps};

use crate::hub::{Backlog, FellBehind, GoingAway, Join, Notify, Subscribe, Unsubscribe};
use actix::prelude::*;
use actix_http::ws::Item;
use actix_web::{web, HttpRequest, HttpResponse};
use actix_web_actors::ws;
use futures_util::future::{join_all, LocalBoxFuture};
use rummy_core::wire::jsonrpc::{error_response, parse_request, response};
use rummy_core::wire::{ErrorKind, Request, RpcError};
use serde_json::Value;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

static NEXT_SESSION: AtomicU64 = AtomicU64::new(1);

/// The run key of requests whose run is not known yet (server-named starts): holds every notification.
const ANY_RUN: &str = "*";

/// Upgrades an HTTP request to a session.
pub fn upgrade(
    req: &HttpRequest,
    stream: web::Payload,
    deps: SessionDeps,
) -> Result<HttpResponse, actix_web::Error> {
    let frame_limit = deps.svc.config.limits.max_frame_bytes;
    let session = SessionActor::new(deps);
    ws::WsResponseBuilder::new(session, req, stream)
        .frame_size(frame_limit)
        .start()
}

/// One client connection.
pub struct SessionActor {
    id: u64,
    deps: SessionDeps,
    /// The project bound by `rummy/hello`.
    project: Option<Binding>,
    /// Runs with requests in flight, counted; their notifications wait in `held`.
    inflight: HashMap<Arc<str>, usize>,
    held: VecDeque<Notify>,
    /// Notification bytes the hub sent that are not written to the connection yet.
    backlog: Backlog,
    /// A fragmented text message being reassembled.
    fragments: Option<Vec<u8>>,
}

impl SessionActor {
    fn new(deps: SessionDeps) -> Self {
        SessionActor {
            id: NEXT_SESSION.fetch_add(1, Ordering::Relaxed),
            deps,
            project: None,
            inflight: HashMap::new(),
            held: VecDeque::new(),
            backlog: Backlog::default(),
            fragments: None,
        }
    }

    fn max_message(&self) -> usize {
        self.deps.svc.config.limits.max_message_bytes
    }

    fn send_error(&self, ctx: &mut ws::WebsocketContext<Self>, id: Option<Value>, err: &RpcError) {
        ctx.text(error_response(id, err).to_string());
    }

    fn on_text(&mut self, text: &str, ctx: &mut ws::WebsocketContext<Self>) {
        if text.len() > self.max_message() {
            let err = RpcError::new(
                ErrorKind::TooLarge,
                format!(
                    "message of {} bytes is over the {}-byte limit",
                    text.len(),
                    self.max_message()
                ),
            )
            .with("limit", Value::from(self.max_message()));
            return self.send_error(ctx, None, &err);
        }
        let value: Value = match serde_json::from_str(text) {
            Ok(v) => v,
            Err(e) => {
                return self.send_error(
                    ctx,
                    None,
                    &RpcError::new(ErrorKind::Parse, format!("parse error: {e}")),
                )
            }
        };
        match value {
            Value::Array(items) if items.is_empty() => self.send_error(
                ctx,
                None,
                &RpcError::new(ErrorKind::InvalidRequest, "invalid request: empty batch"),
            ),
            Value::Array(items) => self.on_batch(items, ctx),
            single => {
                let (keys, fut) = self.start_call(single, ctx);
                self.hold(&keys);
                let reply = fut.into_actor(self).map(move |answer, act, ctx| {
                    if let Some(answer) = answer {
                        ctx.text(answer.to_string());
                    }
                    act.release(&keys, ctx);
                });
                ctx.spawn(reply);
            }
        }
    }

    fn on_batch(&mut self, items: Vec<Value>, ctx: &mut ws::WebsocketContext<Self>) {
        let mut keys = Vec::new();
        let mut calls = Vec::new();
        for item in items {
            let (k, fut) = self.start_call(item, ctx);
            keys.extend(k);
            calls.push(fut);
        }
        self.hold(&keys);
        let reply = join_all(calls)
            .into_actor(self)
            .map(move |answers, act, ctx| {
                let answers: Vec<Value> = answers.into_iter().flatten().collect();
                if !answers.is_empty() {
                    ctx.text(Value::Array(answers).to_string());
                }
                act.release(&keys, ctx);
            });
        ctx.spawn(reply);
    }

    /// Starts one call; answers the run keys it concerns and a future of its response (`None` for client notifications).
    fn start_call(
        &mut self,
        value: Value,
        ctx: &mut ws::WebsocketContext<Self>,
    ) -> (Vec<Arc<str>>, LocalBoxFuture<'static, Option<Value>>) {
        let req = match parse_request(value) {
            Ok(req) => req,
            Err((id, err)) => {
                return (
                    Vec::new(),
                    Box::pin(async move { Some(error_response(id, &err)) }),
                )
            }
        };
        let Request { id, method, params } = req;
        let Some(route) = routes::find(&method) else {
            let err = RpcError::new(
                ErrorKind::MethodNotFound,
                format!("method not found: {method}"),
            );
            return (
                Vec::new(),
                Box::pin(async move { id.map(|id| error_response(Some(id), &err)) }),
            );
        };
        if route.spec.requires_hello && self.project.is_none() {
            let err = RpcError::new(
                ErrorKind::NotInitialized,
                format!("not initialized: call rummy/hello before {method}"),
            );
            return (
                Vec::new(),
                Box::pin(async move { id.map(|id| error_response(Some(id), &err)) }),
            );
        }
        let keys = run_keys(&params);
        let log = routes::CallLog {
            store: self.deps.svc.store.clone(),
            project_id: self.project.as_ref().map(|p| p.project_id),
            method: route.spec.name,
            rpc_id: id.as_ref().map(Value::to_string),
            params: params.clone(),
        };
        let call = routes::Call {
            deps: self.deps.clone(),
            project: self.project.clone(),
            params,
        };
        let fut = (route.handler)(call);
        let limit = (!route.spec.long_running)
            .then(|| Duration::from_millis(self.deps.svc.config.limits.rpc_timeout_ms));
        let addr = ctx.address();
        (
            keys,
            Box::pin(async move {
                let result = within(route.spec.name, limit, fut).await;
                log.record(&result);
                let answer = match result {
                    Ok(routes::Outcome::Reply(value)) => Ok(value),
                    Ok(routes::Outcome::Bind(binding, value)) => {
                        // The binding must be in place before the response leaves.
                        if addr.send(Bind(binding)).await.is_err() {
                            return None;
                        }
                        Ok(value)
                    }
                    Err(err) => Err(err),
                };
                let id = id?;
                Some(match answer {
                    Ok(value) => response(id, value),
                    Err(err) => error_response(Some(id), &err),
                })
            }),
        )
    }

    fn hold(&mut self, keys: &[Arc<str>]) {
        for key in keys {
            *self.inflight.entry(Arc::clone(key)).or_default() += 1;
        }
    }

    fn release(&mut self, keys: &[Arc<str>], ctx: &mut ws::WebsocketContext<Self>) {
        for key in keys {
            if let Some(n) = self.inflight.get_mut(key) {
                *n -= 1;
                if *n == 0 {
                    self.inflight.remove(key);
                }
            }
        }
        let held = std::mem::take(&mut self.held);
        for notify in held {
            self.deliver(notify, ctx);
        }
    }

    fn is_held(&self, run: &str) -> bool {
        self.inflight.contains_key(run) || self.inflight.contains_key(ANY_RUN)
    }

    fn deliver(&mut self, notify: Notify, ctx: &mut ws::WebsocketContext<Self>) {
        if self.is_held(&notify.run) {
            self.held.push_back(notify);
        } else {
            ctx.text(&*notify.text);
            self.backlog.written(notify.text.len());
        }
    }

    fn close(&mut self, ctx: &mut ws::WebsocketContext<Self>, code: ws::CloseCode, reason: &str) {
        ctx.close(Some(ws::CloseReason {
            code,
            description: Some(reason.to_owned()),
        }));
        ctx.stop();
    }
}

/// `call`'s outcome, or an error when `limit` passes first. The work it started is not
/// undone: a write already queued may still commit, and the message says so.
async fn within<T>(
    method: &str,
    limit: Option<Duration>,
    call: impl std::future::Future<Output = Result<T, RpcError>>,
) -> Result<T, RpcError> {
    let Some(limit) = limit else {
        return call.await;
    };
    actix_rt::time::timeout(limit, call)
        .await
        .unwrap_or_else(|_| {
            tracing::warn!(method, limit_ms = limit.as_millis(), "RPC timed out");
            Err(RpcError::new(
                ErrorKind::Internal,
                format!(
                    "RPC '{method}' timed out after {} ms; what it started may still take effect",
                    limit.as_millis()
                ),
            ))
        })
}

/// The run aliases a request concerns: `params.run`, or the alias of a `run://` path (`*` when the server names it).
fn run_keys(params: &Value) -> Vec<Arc<str>> {
    if let Some(run) = params.get("run").and_then(Value::as_str) {
        return vec![Arc::from(run)];
    }
    match params
        .get("path")
        .and_then(Value::as_str)
        .and_then(|p| p.strip_prefix("run://"))
    {
        Some("") => vec![Arc::from(ANY_RUN)],
        Some(alias) => vec![Arc::from(alias)],
        None => Vec::new(),
    }
}

/// Binds the session to a project (sent by the hello handler before its response).
#[derive(Message)]
#[rtype(result = "()")]
struct Bind(Binding);

impl Actor for SessionActor {
    type Context = ws::WebsocketContext<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        self.deps.svc.hub.do_send(Join {
            session: self.id,
            notify: ctx.address().recipient(),
            close: ctx.address().recipient(),
            behind: ctx.address().recipient(),
            backlog: self.backlog.clone(),
        });
        tracing::debug!(session = self.id, "session opened");
    }

    fn stopping(&mut self, _: &mut Self::Context) -> Running {
        self.deps.svc.hub.do_send(Unsubscribe { session: self.id });
        tracing::debug!(session = self.id, "session closed");
        Running::Stop
    }
}

impl Handler<Bind> for SessionActor {
    type Result = ();

    fn handle(&mut self, msg: Bind, _: &mut Self::Context) {
        self.deps.svc.hub.do_send(Subscribe {
            session: self.id,
            project_id: msg.0.project_id,
        });
        self.project = Some(msg.0);
    }
}

impl Handler<GoingAway> for SessionActor {
    type Result = ();

    fn handle(&mut self, _: GoingAway, ctx: &mut Self::Context) {
        self.close(ctx, ws::CloseCode::Away, "server shutting down");
    }
}

impl Handler<FellBehind> for SessionActor {
    type Result = ();

    fn handle(&mut self, msg: FellBehind, ctx: &mut Self::Context) {
        let reason = format!(
            "{} bytes of notifications unread: reconnect, then getRun sinceSeq replays them",
            msg.unwritten
        );
        self.close(ctx, ws::CloseCode::Again, &reason);
    }
}

impl Handler<Notify> for SessionActor {
    type Result = ();

    fn handle(&mut self, msg: Notify, ctx: &mut Self::Context) {
        self.deliver(msg, ctx);
    }
}

impl StreamHandler<Result<ws::Message, ws::ProtocolError>> for SessionActor {
    fn handle(&mut self, msg: Result<ws::Message, ws::ProtocolError>, ctx: &mut Self::Context) {
        match msg {
            Ok(ws::Message::Text(text)) => self.on_text(&text, ctx),
            Ok(ws::Message::Binary(_)) => {
                let err = RpcError::new(
                    ErrorKind::InvalidRequest,
                    "invalid request: binary frames are not JSON-RPC; send text",
                );
                self.send_error(ctx, None, &err);
            }
            Ok(ws::Message::Ping(payload)) => ctx.pong(&payload),
            Ok(ws::Message::Pong(_)) | Ok(ws::Message::Nop) => {}
            Ok(ws::Message::Close(reason)) => {
                ctx.close(reason);
                ctx.stop();
            }
            Ok(ws::Message::Continuation(item)) => self.on_fragment(item, ctx),
            Err(ws::ProtocolError::Overflow) => {
                self.close(ctx, ws::CloseCode::Size, "frame over the size limit")
            }
            Err(ws::ProtocolError::Io(e))
                if e.to_string().to_ascii_lowercase().contains("utf-8") =>
            {
                self.close(ctx, ws::CloseCode::Invalid, "text frame is not valid UTF-8")
            }
            Err(e) => {
                tracing::debug!(session = self.id, error = %e, "websocket protocol error");
                self.close(ctx, ws::CloseCode::Protocol, "websocket protocol error");
            }
        }
    }
}

impl SessionActor {
    fn on_fragment(&mut self, item: Item, ctx: &mut ws::WebsocketContext<Self>) {
        let (first, last, bytes) = match item {
            Item::FirstText(b) => (true, false, b),
            Item::FirstBinary(_) => {
                let err = RpcError::new(
                    ErrorKind::InvalidRequest,
                    "invalid request: binary frames are not JSON-RPC; send text",
                );
                return self.send_error(ctx, None, &err);
            }
            Item::Continue(b) => (false, false, b),
            Item::Last(b) => (false, true, b),
        };
        let buffer = if first {
            self.fragments.insert(Vec::new())
        } else {
            match self.fragments.as_mut() {
                Some(buffer) => buffer,
                None => {
                    return self.close(
                        ctx,
                        ws::CloseCode::Protocol,
                        "continuation without a first fragment",
                    )
                }
            }
        };
        buffer.extend_from_slice(&bytes);
        if buffer.len() > self.deps.svc.config.limits.max_frame_bytes {
            self.fragments = None;
            return self.close(ctx, ws::CloseCode::Size, "message over the size limit");
        }
        if last {
            let bytes = self.fragments.take().unwrap_or_default();
            match String::from_utf8(bytes) {
                Ok(text) => self.on_text(&text, ctx),
                Err(_) => self.close(
                    ctx,
                    ws::CloseCode::Invalid,
                    "text message is not valid UTF-8",
                ),
            }
        }
    }
}

/// The `discover` catalogue of this server (used by the HTTP layer too).
pub fn discover() -> Value {
    catalogue()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A call still unanswered at `RUMMY_RPC_TIMEOUT` is answered with an error naming the
    /// method and the limit; one that answers in time, or has no limit, is untouched.
    #[actix_rt::test]
    async fn a_call_past_the_rpc_timeout_is_answered_with_an_error() {
        let limit = Some(Duration::from_millis(20));
        let stuck = within::<()>("getRun", limit, std::future::pending()).await;
        let err = stuck.unwrap_err();
        assert_eq!(err.kind, ErrorKind::Internal);
        assert_eq!(
            err.message,
            "RPC 'getRun' timed out after 20 ms; what it started may still take effect"
        );
        let quick = within("getRun", limit, async { Ok::<_, RpcError>(7) }).await;
        assert_eq!(quick.ok(), Some(7));
        let slow = async {
            actix_rt::time::sleep(Duration::from_millis(40)).await;
            Ok::<_, RpcError>(8)
        };
        assert_eq!(within("rummy/hello", None, slow).await.ok(), Some(8));
    }

    /// Only `rummy/hello` (a first scan reads the whole project) runs without the limit.
    #[test]
    fn only_hello_is_long_running() {
        let long: Vec<&str> = routes::ROUTES
            .iter()
            .filter(|r| r.spec.long_running)
            .map(|r| r.spec.name)
            .collect();
        assert_eq!(long, vec!["rummy/hello"]);
    }
}
