//! `TokenWatch`: ends the connections of tokens that lapse (TEAM.md §2: "a revoked or expired
//! token closes that user's open connections").
//!
//! Sessions opened with a token are watched by its id. Every `SWEEP_EVERY` — and at once when a
//! token is revoked through the protocol — one read finds which of the watched tokens are revoked
//! or expired, and their sessions are told to close. A token revoked straight on the database
//! (`rummy token revoke`, with or without a server running) is caught by the next sweep.

use crate::clock::now;
use crate::store::Store;
use actix::prelude::*;
use rummy_core::store::tokens;
use std::collections::HashMap;
use std::time::Duration;

/// How often watched tokens are checked.
const SWEEP_EVERY: Duration = Duration::from_secs(2);

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
}

impl TokenWatch {
    /// A watch reading tokens from `store`.
    pub fn new(store: Store) -> Self {
        TokenWatch {
            store,
            sessions: HashMap::new(),
        }
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
    }
}

impl Handler<Watch> for TokenWatch {
    type Result = ();

    fn handle(&mut self, msg: Watch, _: &mut Context<Self>) {
        self.sessions
            .insert(msg.session, (msg.token_id, msg.lapsed));
    }
}

impl Handler<Unwatch> for TokenWatch {
    type Result = ();

    fn handle(&mut self, msg: Unwatch, _: &mut Context<Self>) {
        self.sessions.remove(&msg.session);
    }
}

impl Handler<Sweep> for TokenWatch {
    type Result = ();

    fn handle(&mut self, _: Sweep, ctx: &mut Context<Self>) {
        self.sweep(ctx);
    }
}
