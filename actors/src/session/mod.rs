//! `SessionActor`: one WebSocket connection speaking JSON-RPC 2.0 — the only importer of `actix-web-actors`.
//!
//! Invariants: a malformed or hostile message gets an error answer and the
//! connection stays usable (except the WebSocket RFC's own closes: 1007 for
//! invalid UTF-8, 1009 for an oversized frame; and 1013 when the client stopped reading and
//! its unread notifications passed the limit, see `hub`); a response is sent before any
//! notification its request caused (notifications of a run with a request in
//! flight are held until the response is out); `rummy/hello` is a barrier: what arrives after
//! it (later messages, and the rest of its batch) is handled once it has completed, in order,
//! while other calls run concurrently. With `RUMMY_MAX_REQUESTS_PER_SECOND` set, each call (every
//! call of a batch, and deferred ones when they start) takes one from the connection's token
//! bucket first; a call the bucket cannot cover is answered -32006 with `data.retryAfterMs` and
//! nothing else happens. `ping` is never limited: it costs the server no more than its refusal.

mod auth;
mod fair;
mod frames;
mod routes;
mod seats;
mod socket;

pub use routes::{catalogue, Binding, SessionDeps};
pub use seats::Seats;
pub use socket::Socket;

use crate::hub::{Backlog, FellBehind, GoingAway, Join, Notify, Subscribe, Unsubscribe};
use crate::tokens::{TokenLapsed, Unwatch, Watch};
use actix::prelude::*;
use actix_http::ws::Item;
use actix_web::http::header;
use actix_web::{web, HttpRequest, HttpResponse};
use actix_web_actors::ws;
use frames::{FrameGuard, Trip, Tripped};
use futures_util::future::{join_all, LocalBoxFuture};
use rummy_core::access::origin;
use rummy_core::access::principal::Caller;
use rummy_core::fair::rate::RateBucket;
use rummy_core::wire::jsonrpc::{
    error_response, parse_request, read_message, response, Message, RequestId,
};
use rummy_core::wire::methods;
use rummy_core::wire::{ErrorKind, Request, RpcError};
use serde_json::value::RawValue;
use serde_json::Value;
use std::cell::Cell;
use std::collections::{HashMap, VecDeque};
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

static NEXT_SESSION: AtomicU64 = AtomicU64::new(1);

/// The run key of requests whose run is not known yet (server-named starts): holds every notification.
const ANY_RUN: &str = "*";

/// Messages a connection may send while a `rummy/hello` is in flight (they wait for it); one
/// more is answered -32006. A client that waits for hello's answer never comes near it.
const MAX_DEFERRED: usize = 100;

/// Pings a connection may leave unanswered (hearing nothing else either) before it is closed.
const MISSED_PINGS: u32 = 3;

/// Upgrades an HTTP request to a session — unless a web page from a foreign origin asks
/// (403), the `Authorization` header holds no valid token (401), or every session place is
/// taken (503); each is answered before any upgrade.
pub async fn upgrade(
    req: &HttpRequest,
    stream: web::Payload,
    deps: SessionDeps,
) -> Result<HttpResponse, actix_web::Error> {
    if let Some(sent) = req.headers().get(header::ORIGIN) {
        let sent = String::from_utf8_lossy(sent.as_bytes());
        let host = req
            .headers()
            .get(header::HOST)
            .and_then(|h| h.to_str().ok());
        let access = &deps.svc.config.access;
        if let Err(refused) =
            origin::check(&sent, host, &access.allowed_origins, access.networked())
        {
            tracing::warn!(origin = %sent, "WebSocket upgrade from a foreign origin refused");
            return Ok(HttpResponse::Forbidden()
                .content_type("text/plain; charset=utf-8")
                .body(format!("{refused}\n")));
        }
    }
    let authorization = req
        .headers()
        .get(header::AUTHORIZATION)
        .map(|h| String::from_utf8_lossy(h.as_bytes()).into_owned());
    let principal = match auth::bearer(&deps, authorization.as_deref()).await {
        Ok(principal) => principal,
        Err(why) => {
            tracing::warn!(reason = %why, "WebSocket upgrade refused: bad token");
            return Ok(HttpResponse::Unauthorized()
                .insert_header((header::WWW_AUTHENTICATE, "Bearer"))
                .content_type("text/plain; charset=utf-8")
                .body(format!("{why}\n")));
        }
    };
    let Some(seat) = deps.seats.take() else {
        tracing::warn!(
            max = deps.seats.max(),
            "WebSocket upgrade refused: every connection place is taken"
        );
        return Ok(HttpResponse::ServiceUnavailable()
            .insert_header((header::RETRY_AFTER, "5"))
            .content_type("text/plain; charset=utf-8")
            .body(format!(
                "the server holds its maximum of {} connections (RUMMY_MAX_CONNECTIONS); try again later\n",
                deps.seats.max()
            )));
    };
    let frame_limit = deps.svc.config.limits.max_frame_bytes;
    let tripped = Tripped::default();
    let guarded = FrameGuard::new(stream, frame_limit, Rc::clone(&tripped));
    // Behind a trusted proxy the client is the one the proxy names; otherwise the peer.
    let info = req.connection_info();
    let peer = if deps.svc.config.access.trust_proxy {
        info.realip_remote_addr()
    } else {
        info.peer_addr()
    }
    .unwrap_or("unknown")
    .to_owned();
    drop(info);
    let mut session = SessionActor::new(deps, seat, tripped);
    session.socket = req.conn_data::<Socket>().cloned();
    session.peer = peer;
    session.caller = principal.map(Caller::Holder);
    ws::WsResponseBuilder::new(session, req, guarded)
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
    /// Whether a `rummy/hello` is in flight: messages arriving meanwhile wait in `deferred`.
    barrier: bool,
    /// Messages received while a hello was in flight, in order, and their total size.
    deferred: VecDeque<String>,
    deferred_bytes: usize,
    /// The session's place among `RUMMY_MAX_CONNECTIONS`, given back when it ends.
    _seat: seats::Seat,
    /// Set by the frame guard when a frame header announced more than the limit.
    tripped: Tripped,
    /// When the client last sent anything (a pong included): a connection silent for
    /// [`MISSED_PINGS`] ping intervals is dead and closed.
    heard: Instant,
    /// The connection's socket, stopped for reading when the session ends so the server closes
    /// the connection at once (see [`Socket`]).
    socket: Option<Socket>,
    /// The client's address, for the log (the proxy's word for it with `RUMMY_TRUST_PROXY`).
    peer: String,
    /// Who the session acts for, once known (its upgrade's token, or its hello's).
    caller: Option<Caller>,
    /// Set when a call was refused -32001: after that answer the connection closes.
    refused: Rc<Cell<bool>>,
    /// The connection's calls per second (`RUMMY_MAX_REQUESTS_PER_SECOND`), over a clock that
    /// starts with the session; `None`: unlimited.
    rate: Option<RateBucket>,
    /// When the session started: the rate bucket's clock counts from here.
    opened: Instant,
}

impl SessionActor {
    fn new(deps: SessionDeps, seat: seats::Seat, tripped: Tripped) -> Self {
        let rate = deps
            .svc
            .config
            .fair
            .max_requests_per_second
            .map(|n| RateBucket::new(n, 0));
        SessionActor {
            id: NEXT_SESSION.fetch_add(1, Ordering::Relaxed),
            deps,
            project: None,
            inflight: HashMap::new(),
            held: VecDeque::new(),
            backlog: Backlog::default(),
            fragments: None,
            barrier: false,
            deferred: VecDeque::new(),
            deferred_bytes: 0,
            _seat: seat,
            tripped,
            heard: Instant::now(),
            socket: None,
            peer: String::new(),
            caller: None,
            refused: Rc::default(),
            rate,
            opened: Instant::now(),
        }
    }

    /// Takes a call of `method` from the connection's rate bucket; the -32006 (with the exact
    /// `retryAfterMs`) when the bucket cannot cover it. `ping` is free.
    fn over_rate(&mut self, method: &str) -> Option<RpcError> {
        let bucket = self.rate.as_mut()?;
        if method == methods::PING.name {
            return None;
        }
        let now_us = u64::try_from(self.opened.elapsed().as_micros()).unwrap_or(u64::MAX);
        let retry_after_ms = bucket.take(now_us).err()?;
        let per_second = self
            .deps
            .svc
            .config
            .fair
            .max_requests_per_second
            .unwrap_or(1);
        Some(
            RpcError::new(
                ErrorKind::Overloaded,
                format!("overloaded: this connection sends more than {per_second} calls a second; send this again in {retry_after_ms} ms"),
            )
            .with("retryAfterMs", Value::from(retry_after_ms)),
        )
    }

    fn max_message(&self) -> usize {
        self.deps.svc.config.limits.max_message_bytes
    }

    fn send_error(
        &self,
        ctx: &mut ws::WebsocketContext<Self>,
        id: Option<&RequestId>,
        err: &RpcError,
    ) {
        ctx.text(error_response(id, err));
    }

    fn on_text(&mut self, text: &str, ctx: &mut ws::WebsocketContext<Self>) {
        if self.barrier {
            return self.defer(text, ctx);
        }
        self.handle_text(text, ctx);
    }

    /// Keeps a message that arrived while a hello is in flight, to handle after it; past
    /// [`MAX_DEFERRED`] messages or `RUMMY_MAX_MESSAGE_BYTES` waiting, answers -32006 instead.
    fn defer(&mut self, text: &str, ctx: &mut ws::WebsocketContext<Self>) {
        let bytes = self.deferred_bytes + text.len();
        if self.deferred.len() >= MAX_DEFERRED || bytes > self.max_message() {
            let err = RpcError::new(
                ErrorKind::Overloaded,
                format!("overloaded: {} messages wait for rummy/hello to complete; send this again after its answer", self.deferred.len()),
            )
            .with("retryAfterMs", Value::from(1000));
            return self.send_error(ctx, None, &err);
        }
        self.deferred_bytes = bytes;
        self.deferred.push_back(text.to_owned());
    }

    /// Lifts the hello barrier and handles the messages that waited for it, in order, until
    /// one of them is another hello.
    fn lift_barrier(&mut self, ctx: &mut ws::WebsocketContext<Self>) {
        self.barrier = false;
        self.drain(ctx);
    }

    fn drain(&mut self, ctx: &mut ws::WebsocketContext<Self>) {
        while !self.barrier {
            let Some(text) = self.deferred.pop_front() else {
                return;
            };
            self.deferred_bytes -= text.len();
            self.handle_text(&text, ctx);
        }
    }

    fn handle_text(&mut self, text: &str, ctx: &mut ws::WebsocketContext<Self>) {
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
        match read_message(text) {
            Err(err) => self.send_error(ctx, None, &err),
            Ok(Message::Batch(items)) => {
                let items = items.into_iter().map(RawValue::to_owned).collect();
                self.on_batch(items, ctx);
            }
            Ok(Message::Single(single)) => {
                let started = self.start_call(single, ctx);
                let (keys, barrier) = (started.keys, started.barrier);
                self.hold(&keys);
                self.barrier |= barrier;
                let reply = started
                    .answer
                    .into_actor(self)
                    .map(move |answer, act, ctx| {
                        if let Some(answer) = answer {
                            ctx.text(answer);
                        }
                        act.close_if_refused(ctx);
                        act.release(&keys, ctx);
                        if barrier {
                            act.lift_barrier(ctx);
                        }
                    });
                ctx.spawn(reply);
            }
        }
    }

    /// Runs a batch's calls concurrently and sends their answers as one array, bounded by
    /// `RUMMY_MAX_MESSAGE_BYTES`: an answer that would pass it is replaced by a -32007 for its
    /// call, so no batch makes an unbounded frame. A hello in the batch splits it: the calls
    /// after it start once it (and the calls before it) have completed.
    fn on_batch(&mut self, items: Vec<Box<RawValue>>, ctx: &mut ws::WebsocketContext<Self>) {
        let batch = Batch {
            rest: items.into(),
            ids: Vec::new(),
            keys: Vec::new(),
            answers: Vec::new(),
        };
        self.batch_segment(batch, ctx);
    }

    /// Starts the batch's next calls, up to and including a hello; when that segment has
    /// completed, starts the next one, and after the last sends the batch's answer.
    fn batch_segment(&mut self, mut batch: Batch, ctx: &mut ws::WebsocketContext<Self>) {
        let mut calls = Vec::new();
        let mut barrier = false;
        while let Some(item) = batch.rest.pop_front() {
            let started = self.start_call(&item, ctx);
            self.hold(&started.keys);
            batch.keys.extend(started.keys);
            batch.ids.push(started.id);
            calls.push(started.answer);
            if started.barrier {
                barrier = true;
                break;
            }
        }
        self.barrier |= barrier;
        let limit = self.max_message();
        let segment = join_all(calls)
            .into_actor(self)
            .map(move |answers, act, ctx| {
                batch.answers.extend(answers);
                if barrier {
                    // The barrier's own calls go first, then what waited behind it.
                    act.barrier = false;
                    if batch.rest.is_empty() {
                        act.finish_batch(batch, limit, ctx);
                    } else {
                        act.batch_segment(batch, ctx);
                    }
                    act.drain(ctx);
                } else {
                    act.finish_batch(batch, limit, ctx);
                }
            });
        ctx.spawn(segment);
    }

    fn finish_batch(&mut self, batch: Batch, limit: usize, ctx: &mut ws::WebsocketContext<Self>) {
        if let Some(text) = batch_answer(batch.answers, &batch.ids, limit) {
            ctx.text(text);
        }
        self.close_if_refused(ctx);
        self.release(&batch.keys, ctx);
    }

    /// Starts one call; answers the run keys it concerns, its id, and a future of its response
    /// text (`None` for client notifications).
    fn start_call(&mut self, raw: &RawValue, ctx: &mut ws::WebsocketContext<Self>) -> Started {
        let req = match parse_request(raw) {
            Ok(req) => req,
            Err((id, err)) => {
                let answer = error_response(id.as_ref(), &err);
                return Started::answered(id, Some(answer));
            }
        };
        let Request { id, method, params } = req;
        let refuse = |id: Option<RequestId>, err: RpcError| {
            let answer = id.as_ref().map(|id| error_response(Some(id), &err));
            Started::answered(id, answer)
        };
        if let Some(err) = self.over_rate(&method) {
            return refuse(id, err);
        }
        let Some(route) = routes::find(&method) else {
            let err = RpcError::new(
                ErrorKind::MethodNotFound,
                format!("method not found: {method}"),
            );
            return refuse(id, err);
        };
        if route.spec.requires_hello && self.project.is_none() {
            let err = RpcError::new(
                ErrorKind::NotInitialized,
                format!("not initialized: call rummy/hello before {method}"),
            );
            return refuse(id, err);
        }
        let keys = run_keys(&params);
        let log = routes::CallLog {
            store: self.deps.svc.store.clone(),
            project_id: self.project.as_ref().map(|p| p.project_id),
            method: route.spec.name,
            rpc_id: id.as_ref().map(|id| id.as_str().to_owned()),
            params: params.clone(),
            user: self
                .caller
                .as_ref()
                .and_then(Caller::user)
                .map(str::to_owned),
        };
        let call = routes::Call {
            deps: self.deps.clone(),
            project: self.project.clone(),
            caller: self.caller.clone(),
            params,
        };
        let refused = Rc::clone(&self.refused);
        let fut = (route.handler)(call);
        let limit = (!route.spec.long_running)
            .then(|| Duration::from_millis(self.deps.svc.config.limits.rpc_timeout_ms));
        let addr = ctx.address();
        let answer_id = id.clone();
        Started {
            keys,
            id,
            barrier: route.spec.name == methods::HELLO.name,
            answer: Box::pin(async move {
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
                    Err(err) => {
                        if err.kind == ErrorKind::Unauthorized {
                            refused.set(true);
                        }
                        Err(err)
                    }
                };
                let id = answer_id?;
                Some(match answer {
                    Ok(value) => response(&id, &value),
                    Err(err) => error_response(Some(&id), &err),
                })
            }),
        }
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

    /// Closes the connection (1008) once a call was refused for want of a valid token: nothing
    /// else is served on it (TEAM.md §2).
    fn close_if_refused(&mut self, ctx: &mut ws::WebsocketContext<Self>) {
        if self.refused.get() {
            self.close(ctx, ws::CloseCode::Policy, "unauthorized");
        }
    }

    /// Remembers who the session acts for; a token's session is watched, so it closes when the
    /// token lapses.
    fn act_for(&mut self, caller: Caller, ctx: &mut ws::WebsocketContext<Self>) {
        if let Some(token_id) = caller.token_id() {
            self.deps.tokens.do_send(Watch {
                session: self.id,
                token_id,
                lapsed: ctx.address().recipient(),
            });
        }
        self.caller = Some(caller);
    }

    fn close(&mut self, ctx: &mut ws::WebsocketContext<Self>, code: ws::CloseCode, reason: &str) {
        ctx.close(Some(ws::CloseReason {
            code,
            description: Some(reason.to_owned()),
        }));
        ctx.stop();
    }

    /// Pings the client every `RUMMY_PING_INTERVAL`, and closes a connection that has sent
    /// nothing — not even a pong — for [`MISSED_PINGS`] intervals: a quiet client that answers
    /// pings (as every WebSocket library does) stays connected; a dead one goes.
    fn heartbeat(&self, ctx: &mut ws::WebsocketContext<Self>) {
        let interval = Duration::from_millis(self.deps.svc.config.access.ping_interval_ms);
        ctx.run_interval(interval, move |act, ctx| {
            if act.heard.elapsed() >= interval * MISSED_PINGS {
                tracing::debug!(session = act.id, "no answer to pings; closing");
                act.close(ctx, ws::CloseCode::Away, "no answer to pings");
            } else {
                ctx.ping(b"");
            }
        });
    }
}

/// One call as started: the run keys it concerns, its id, the future of its response text
/// (`None` for a client notification), and whether it is a barrier (a hello).
struct Started {
    keys: Vec<Arc<str>>,
    id: Option<RequestId>,
    answer: LocalBoxFuture<'static, Option<String>>,
    barrier: bool,
}

impl Started {
    /// A call answered without running (refused, or not a call at all).
    fn answered(id: Option<RequestId>, answer: Option<String>) -> Started {
        Started {
            keys: Vec::new(),
            id,
            answer: Box::pin(async move { answer }),
            barrier: false,
        }
    }
}

/// A batch under way: the calls not started yet, and what the started ones answered.
struct Batch {
    rest: VecDeque<Box<RawValue>>,
    ids: Vec<Option<RequestId>>,
    keys: Vec<Arc<str>>,
    answers: Vec<Option<String>>,
}

/// A batch's answer text: the answers that fit `limit` bytes in order, each one that would
/// pass it replaced by a -32007 naming the limit; `None` when the batch held only notifications.
fn batch_answer(
    answers: Vec<Option<String>>,
    ids: &[Option<RequestId>],
    limit: usize,
) -> Option<String> {
    let mut out = String::from("[");
    let mut any = false;
    for (answer, id) in answers.into_iter().zip(ids) {
        let Some(mut answer) = answer else { continue };
        if out.len() + answer.len() + 2 > limit {
            let err = RpcError::new(
                ErrorKind::TooLarge,
                format!("the batch's answer passed the {limit}-byte message limit at this call; send it again alone or in a smaller batch"),
            )
            .with("limit", Value::from(limit));
            answer = error_response(id.as_ref(), &err);
        }
        if any {
            out.push(',');
        }
        out.push_str(&answer);
        any = true;
    }
    out.push(']');
    any.then_some(out)
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
        self.heartbeat(ctx);
        if let Some(caller) = self.caller.clone() {
            self.act_for(caller, ctx);
        }
        tracing::debug!(session = self.id, peer = %self.peer, "session opened");
    }

    fn stopping(&mut self, _: &mut Self::Context) -> Running {
        self.deps.svc.hub.do_send(Unsubscribe { session: self.id });
        self.deps.tokens.do_send(Unwatch { session: self.id });
        if let Some(socket) = &self.socket {
            socket.stop_reading();
        }
        tracing::debug!(session = self.id, "session closed");
        Running::Stop
    }
}

impl Handler<Bind> for SessionActor {
    type Result = ();

    fn handle(&mut self, msg: Bind, ctx: &mut Self::Context) {
        self.deps.svc.hub.do_send(Subscribe {
            session: self.id,
            project_id: msg.0.project_id,
        });
        self.act_for(msg.0.caller.clone(), ctx);
        self.project = Some(msg.0);
    }
}

impl Handler<TokenLapsed> for SessionActor {
    type Result = ();

    fn handle(&mut self, _: TokenLapsed, ctx: &mut Self::Context) {
        tracing::info!(
            session = self.id,
            "token revoked or expired; closing its session"
        );
        self.close(ctx, ws::CloseCode::Policy, "token revoked or expired");
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
        self.heard = Instant::now();
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
            // The decoder's errors say why only in their text: the frame guard, which saw the
            // bytes, says it in a type.
            Err(e) => match self.tripped.get() {
                Some(Trip::Oversized(announced)) => {
                    let reason = format!(
                        "a frame of {announced} bytes announced; the limit is {}",
                        self.deps.svc.config.limits.max_frame_bytes
                    );
                    self.close(ctx, ws::CloseCode::Size, &reason)
                }
                Some(Trip::InvalidUtf8) => {
                    self.close(ctx, ws::CloseCode::Invalid, "text frame is not valid UTF-8")
                }
                None => {
                    tracing::debug!(session = self.id, error = %e, "websocket protocol error");
                    self.close(ctx, ws::CloseCode::Protocol, "websocket protocol error");
                }
            },
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
