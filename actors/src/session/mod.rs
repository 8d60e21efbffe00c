//! `SessionActor`: one WebSocket connection speaking JSON-RPC 2.0 — the only importer of `actix-web-actors`.
//!
//! Invariants: a malformed or hostile message gets an error answer and the
//! connection stays usable (except the WebSocket RFC's own closes: 1007 for
//! invalid UTF-8, 1009 for a frame or message over the limit, refused at its header; 1013 when
//! the client stopped reading and its unread notifications passed the limit, see `hub`; and
//! 1008 for a connection without a valid token once tokens exist: refused, or silent past
//! `RUMMY_HELLO_TIMEOUT`, or opened before the first token was made); a response is sent before any
//! notification its request caused (notifications of a run with a request in
//! flight are held until the response is out); `rummy/hello` is a barrier: what arrives after
//! it (later messages, and the rest of its batch) is handled once it has completed, in order,
//! while other calls run concurrently. With `RUMMY_MAX_REQUESTS_PER_SECOND` set, each call (every
//! call of a batch, and deferred ones when they start) takes one from the connection's token
//! bucket first; a call the bucket cannot cover is answered -32006 with `data.retryAfterMs` and
//! nothing else happens. `ping` is never limited: it costs the server no more than its refusal.

mod auth;
mod call;
mod frames;
mod inbound;
mod messages;
mod routes;
mod rpc_log;
mod seats;
mod socket;

pub use call::{Binding, SessionDeps};
pub use routes::catalogue;
pub use seats::Seats;
pub use socket::Socket;

use crate::hub::{Backlog, FellBehind, GoingAway, Join, Notify, Subscribe, Unsubscribe};
use crate::tokens::{TokenLapsed, TokensRequired, Unwatch, Watch, WatchOpen};
use actix::prelude::*;
use actix_web::http::header;
use actix_web::{web, HttpRequest, HttpResponse};
use actix_web_actors::ws;
use frames::{FrameGuard, Limit, Tripped};
use rummy_core::access::origin;
use rummy_core::config::ANONYMOUS_MESSAGE_BYTES;
use rummy_core::fair::rate::RateBucket;
use rummy_store::principal::Caller;
use std::cell::Cell;
use std::collections::{HashMap, VecDeque};
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

static NEXT_SESSION: AtomicU64 = AtomicU64::new(1);

/// Pings a connection may leave unanswered (hearing nothing else either) before it is closed.
const MISSED_PINGS: u32 = 3;

/// How long a session told the server is going away waits for its calls in flight to answer
/// before it closes anyway: an answer is how a client learns what a call did, so a stop should
/// not swallow it, but a call that takes longer must not hold the stop.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// Whether an `Authorization` header holds a valid admin token (`GET /metrics`).
pub async fn admin_bearer(deps: &SessionDeps, header: Option<&str>) -> bool {
    matches!(auth::bearer(deps, header).await, Ok(Some(principal)) if principal.admin)
}

/// Upgrades an HTTP request to a session — unless a web page from a foreign origin asks
/// (403), the `Authorization` header holds no valid token (401), or every session place is
/// taken (503), or, once a token exists, every place for a connection without one is taken
/// (503); each is answered before any upgrade.
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
    // Once a token exists, a connection without one on its upgrade is anonymous until it shows
    // one (hello or getProjects): its place is one of few, its frames small, its time short.
    let tokens_exist = principal.is_none()
        && match deps.svc.store.read(rummy_store::tokens::any).await {
            Ok(any) => any,
            Err(e) => {
                tracing::warn!(error = %e, "cannot tell whether a token exists; treating the connection as anonymous");
                true
            }
        };
    let anonymous = if tokens_exist {
        let Some(seat) = deps.anonymous.take() else {
            tracing::warn!(
                max = deps.anonymous.max(),
                "WebSocket upgrade refused: every place for a connection without a token is taken"
            );
            return Ok(HttpResponse::ServiceUnavailable()
                .insert_header((header::RETRY_AFTER, "5"))
                .content_type("text/plain; charset=utf-8")
                .body(format!(
                    "the server holds its maximum of {} connections that have not shown a token (RUMMY_MAX_ANONYMOUS_CONNECTIONS); send Authorization: Bearer <token>, or try again later\n",
                    deps.anonymous.max()
                )));
        };
        Some(seat)
    } else {
        None
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
    let limits = &deps.svc.config.limits;
    // No message may be larger than RUMMY_MAX_MESSAGE_BYTES, so no frame is let in past it:
    // refused at its header, nothing of it buffered.
    let full_limit = limits.max_frame_bytes.min(limits.max_message_bytes);
    let limit = if anonymous.is_some() {
        full_limit.min(ANONYMOUS_MESSAGE_BYTES)
    } else {
        full_limit
    };
    let limit: Limit = Rc::new(Cell::new(u64::try_from(limit).unwrap_or(u64::MAX)));
    let tripped = Tripped::default();
    let guarded = FrameGuard::with_limit(stream, Rc::clone(&limit), Rc::clone(&tripped));
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
    let open = principal.is_none() && !tokens_exist;
    let mut session = SessionActor::new(deps, seat, tripped);
    session.socket = req.conn_data::<Socket>().cloned();
    session.peer = peer;
    session.caller = principal.map(Caller::Holder);
    session.anonymous = anonymous;
    session.open = open;
    session.limit = limit;
    session.full_limit = u64::try_from(full_limit).unwrap_or(u64::MAX);
    ws::WsResponseBuilder::new(session, req, guarded)
        .frame_size(full_limit)
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
    /// The frame guard's limit: [`ANONYMOUS_MESSAGE_BYTES`] while the session is anonymous,
    /// then `full_limit`.
    limit: Limit,
    /// The smaller of `RUMMY_MAX_FRAME_BYTES` and `RUMMY_MAX_MESSAGE_BYTES`.
    full_limit: u64,
    /// While a token exists and the session has not shown one: its place among
    /// `RUMMY_MAX_ANONYMOUS_CONNECTIONS`, given back when it shows one or ends.
    anonymous: Option<seats::Seat>,
    /// Opened while no token existed (it acts for the owner): it closes once one exists.
    open: bool,
    /// Set when a token now exists and the session, opened without one, must close (1008) once
    /// its calls in flight are answered.
    token_required: bool,
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
    /// Calls (a batch counts once) started and not answered yet.
    calls: usize,
    /// Set when the server is going away: new calls are refused, and the session closes (1001)
    /// once `calls` is zero, or after [`SHUTDOWN_GRACE`].
    going_away: bool,
    /// `rummy_websocket_messages_total{direction="in"}` and `{direction="out"}`, looked up once.
    messages_in: prometheus::IntCounter,
    messages_out: prometheus::IntCounter,
}

impl SessionActor {
    fn new(deps: SessionDeps, seat: seats::Seat, tripped: Tripped) -> Self {
        let rate = deps
            .svc
            .config
            .fair
            .max_requests_per_second
            .map(|n| RateBucket::new(n, 0));
        let messages = &deps.svc.store.metrics().ws_messages;
        let (messages_in, messages_out) = (
            messages.with_label_values(&["in"]),
            messages.with_label_values(&["out"]),
        );
        SessionActor {
            messages_in,
            messages_out,
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
            limit: Rc::default(),
            full_limit: 0,
            anonymous: None,
            open: false,
            token_required: false,
            heard: Instant::now(),
            socket: None,
            peer: String::new(),
            caller: None,
            refused: Rc::default(),
            rate,
            opened: Instant::now(),
            calls: 0,
            going_away: false,
        }
    }

    /// Closes with 1001 once the server is going away and every call has been answered (1008
    /// when a token now exists and the session has none).
    fn close_if_leaving(&mut self, ctx: &mut ws::WebsocketContext<Self>) {
        if self.calls > 0 || ctx.state() != ActorState::Running {
            return;
        }
        if self.token_required {
            self.close(ctx, ws::CloseCode::Policy, TOKEN_NOW_REQUIRED);
        } else if self.going_away {
            self.close(ctx, ws::CloseCode::Away, "server shutting down");
        }
    }

    /// The session showed a valid token: it is no longer anonymous (its place among the
    /// anonymous ones is given back, its frames may be as large as any), nor open.
    fn authenticated(&mut self) {
        self.anonymous = None;
        self.open = false;
        self.limit.set(self.full_limit);
    }

    /// Closes the connection (1008) once a call was refused for want of a valid token: nothing
    /// else is served on it.
    fn close_if_refused(&mut self, ctx: &mut ws::WebsocketContext<Self>) {
        if self.refused.get() {
            self.close(ctx, ws::CloseCode::Policy, "unauthorized");
        }
    }

    /// Remembers who the session acts for; a token's session is watched, so it closes when the
    /// token lapses.
    fn act_for(&mut self, caller: Caller, ctx: &mut ws::WebsocketContext<Self>) {
        if let Some(token_id) = caller.token_id() {
            self.authenticated();
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

/// Binds the session to a project (sent by the hello handler before its response).
#[derive(Message)]
#[rtype(result = "()")]
struct Bind(Binding);

/// A call that carried a token (`getProjects {token}`, `rummy/hello {token}`) succeeded: the
/// session has shown a valid one (sent before that call's response).
#[derive(Message)]
#[rtype(result = "()")]
struct ShownToken;

/// The close reason of a session opened while no token existed, once one does.
const TOKEN_NOW_REQUIRED: &str =
    "this server now has tokens: reconnect with one (Authorization: Bearer, or rummy/hello {token})";

/// How long a session opened while no token existed may take to answer its calls in flight
/// once a token exists, before it closes anyway.
const TOKEN_REQUIRED_GRACE: Duration = Duration::from_millis(150);

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
        if self.open {
            self.deps.tokens.do_send(WatchOpen {
                session: self.id,
                required: ctx.address().recipient(),
            });
        }
        if self.anonymous.is_some() {
            let wait = Duration::from_millis(self.deps.svc.config.access.hello_timeout_ms);
            ctx.run_later(wait, move |act, ctx| {
                if act.anonymous.is_some() {
                    tracing::info!(session = act.id, peer = %act.peer, "no valid token in time; closing");
                    let reason = format!(
                        "no valid token within {} ms (RUMMY_HELLO_TIMEOUT)",
                        wait.as_millis()
                    );
                    act.close(ctx, ws::CloseCode::Policy, &reason);
                }
            });
        }
        tracing::debug!(session = self.id, peer = %self.peer, "session opened");
    }

    fn stopping(&mut self, _: &mut Self::Context) -> Running {
        self.deps.svc.hub.do_send(Unsubscribe { session: self.id });
        // Its offers end with it; the calls it left unanswered fail, and their turns go on.
        let orphaned = self.deps.svc.client_tools.forget_session(self.id);
        if !orphaned.is_empty() {
            let svc = self.deps.svc.clone();
            actix_rt::spawn(async move { crate::tool_calls::orphaned(&svc, orphaned).await });
        }
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

impl Handler<ShownToken> for SessionActor {
    type Result = ();

    fn handle(&mut self, _: ShownToken, _: &mut Self::Context) {
        self.authenticated();
    }
}

impl Handler<TokensRequired> for SessionActor {
    type Result = ();

    /// Answers the calls in flight first (the one that made the token among them), for at most
    /// [`TOKEN_REQUIRED_GRACE`].
    fn handle(&mut self, _: TokensRequired, ctx: &mut Self::Context) {
        if !self.open {
            return;
        }
        tracing::info!(
            session = self.id,
            "a token exists now; closing a session opened without one"
        );
        self.token_required = true;
        self.close_if_leaving(ctx);
        ctx.run_later(TOKEN_REQUIRED_GRACE, |act, ctx| {
            if ctx.state() == ActorState::Running {
                act.close(ctx, ws::CloseCode::Policy, TOKEN_NOW_REQUIRED);
            }
        });
    }
}

impl Handler<GoingAway> for SessionActor {
    type Result = ();

    /// Answers the calls in flight first (within [`SHUTDOWN_GRACE`]): a call that took effect
    /// — an acceptance applied, a run started — is answered, not cut off with its connection.
    fn handle(&mut self, _: GoingAway, ctx: &mut Self::Context) {
        self.going_away = true;
        self.close_if_leaving(ctx);
        ctx.run_later(SHUTDOWN_GRACE, |act, ctx| {
            if ctx.state() == ActorState::Running {
                tracing::debug!(
                    session = act.id,
                    calls = act.calls,
                    "closing with calls in flight"
                );
                act.close(ctx, ws::CloseCode::Away, "server shutting down");
            }
        });
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
