//! `TokenWatch`: ends the connections of tokens that lapse (a revoked or expired
//! token closes that user's open connections).
//!
//! Sessions opened with a token are watched by its id. Every `SWEEP_EVERY` — and at once when a
//! token is revoked through the protocol — one read finds which of the watched tokens are revoked
//! or expired, and their sessions are told to close. A token revoked straight on the database
//! (`rummy token revoke`, with or without a server running) is caught by the next sweep.
//!
//! It also ends the sessions opened while no token existed, which act for the server's owner:
//! once the first token is made they would keep that power without one. While such sessions
//! are open, every [`OPEN_POLL`] one read asks whether a token exists now, and when one does,
//! they are told to close (1008). Polling, not a notification, because a token is made as
//! often by `rummy token create` writing the database itself (no server involved, SQLite or
//! PostgreSQL) as through a server; and each process polls its own database, so in a cluster
//! every process closes its own. With no such session open, nothing is read.

use crate::clock::now;
use crate::store::Store;
use actix::prelude::*;
use rummy_store::tokens;
use std::collections::HashMap;
use std::time::Duration;

/// How often watched tokens are checked.
const SWEEP_EVERY: Duration = Duration::from_secs(2);

/// How often, while sessions opened without a token are open, the database is asked whether a
/// token exists now: well inside the half second in which they must be closed.
pub const OPEN_POLL: Duration = Duration::from_millis(200);

/// Tells a session opened while no token existed that one exists now: it closes (1008).
#[derive(Message, Clone, Copy, Debug)]
#[rtype(result = "()")]
pub struct TokensRequired;

/// A session opened without a token while none existed.
#[derive(Message)]
#[rtype(result = "()")]
pub struct WatchOpen {
    /// The session's id.
    pub session: u64,
    /// Where to say a token now exists.
    pub required: Recipient<TokensRequired>,
}

/// Tells a session its token lapsed: it closes (1008).
#[derive(Message, Clone, Copy, Debug)]
#[rtype(result = "()")]
pub struct TokenLapsed;

/// A session opened with a token.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Watch {
    /// The session's id.
    pub session: u64,
    /// Its token.
    pub token_id: i32,
    /// Where to say the token lapsed.
    pub lapsed: Recipient<TokenLapsed>,
}

/// A session ended.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Unwatch {
    /// The session's id.
    pub session: u64,
}

/// Checks the watched tokens now (a token was just revoked).
#[derive(Message)]
#[rtype(result = "()")]
pub struct Sweep;

/// Watches the tokens of open sessions.
pub struct TokenWatch {
    store: Store,
    /// session → (token, where to say it lapsed)
    sessions: HashMap<u64, (i32, Recipient<TokenLapsed>)>,
    /// Sessions opened while no token existed → where to say one exists now.
    open: HashMap<u64, Recipient<TokensRequired>>,
    /// Whether a read for `open` is under way (one at a time).
    asking: bool,
}

impl TokenWatch {
    /// A watch reading tokens from `store`.
    pub fn new(store: Store) -> Self {
        TokenWatch {
            store,
            sessions: HashMap::new(),
            open: HashMap::new(),
            asking: false,
        }
    }

    /// Asks whether a token exists now, when sessions opened without one are open; if one does,
    /// tells them all to close.
    fn poll_open(&mut self, ctx: &mut Context<Self>) {
        if self.open.is_empty() || self.asking {
            return;
        }
        self.asking = true;
        let store = self.store.clone();
        let read = async move { store.read(tokens::any).await };
        ctx.spawn(read.into_actor(self).map(|any, act, _| {
            act.asking = false;
            match any {
                Ok(true) => {
                    tracing::info!(
                        sessions = act.open.len(),
                        "a token exists now: closing the connections opened without one"
                    );
                    for (_, session) in act.open.drain() {
                        session.do_send(TokensRequired);
                    }
                }
                Ok(false) => {}
                Err(e) => tracing::warn!(error = %e, "cannot tell whether a token exists"),
            }
        }));
    }

    fn sweep(&mut self, ctx: &mut Context<Self>) {
        let mut ids: Vec<i32> = self.sessions.values().map(|(id, _)| *id).collect();
        if ids.is_empty() {
            return;
        }
        ids.sort_unstable();
        ids.dedup();
        let store = self.store.clone();
        let read = async move { store.read(move |c| tokens::lapsed(c, &ids, now())).await };
        ctx.spawn(read.into_actor(self).map(|lapsed, act, _| match lapsed {
            Ok(lapsed) => {
                for (token, session) in act.sessions.values() {
                    if lapsed.contains(token) {
                        session.do_send(TokenLapsed);
                    }
                }
            }
            Err(e) => tracing::warn!(error = %e, "cannot check the open sessions' tokens"),
        }));
    }
}

impl Actor for TokenWatch {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        ctx.run_interval(SWEEP_EVERY, |act, ctx| act.sweep(ctx));
        ctx.run_interval(OPEN_POLL, |act, ctx| act.poll_open(ctx));
    }
}

impl Handler<Watch> for TokenWatch {
    type Result = ();

    fn handle(&mut self, msg: Watch, _: &mut Context<Self>) {
        self.open.remove(&msg.session);
        self.sessions
            .insert(msg.session, (msg.token_id, msg.lapsed));
    }
}

impl Handler<Unwatch> for TokenWatch {
    type Result = ();

    fn handle(&mut self, msg: Unwatch, _: &mut Context<Self>) {
        self.sessions.remove(&msg.session);
        self.open.remove(&msg.session);
    }
}

impl Handler<WatchOpen> for TokenWatch {
    type Result = ();

    fn handle(&mut self, msg: WatchOpen, _: &mut Context<Self>) {
        self.open.insert(msg.session, msg.required);
    }
}

impl Handler<Sweep> for TokenWatch {
    type Result = ();

    fn handle(&mut self, _: Sweep, ctx: &mut Context<Self>) {
        self.sweep(ctx);
    }
}
