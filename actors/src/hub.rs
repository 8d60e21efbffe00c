//! `NotificationHub`: fans notifications out to every session bound to the run's project, and to no other.
//!
//! A session runs only while its connection takes what it writes: a client that stops reading
//! (a suspended laptop, a stuck plugin) stops its session, and whatever the hub sends it waits
//! in its mailbox. So the hub counts the bytes each session has not written out yet
//! ([`Backlog`]); a session past the limit (`RUMMY_MAX_BACKLOG_BYTES`) gets nothing more and is
//! told it fell behind, which closes it. Its client reconnects and asks `getRun {sinceSeq}`
//! for what it missed. A session that has written everything always gets the next
//! notification, however large.

use actix::prelude::*;
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// Bytes of notifications the hub handed to a session that it has not written to its
/// connection yet: the hub adds, the session subtracts.
#[derive(Debug, Clone, Default)]
pub struct Backlog(Arc<AtomicUsize>);

impl Backlog {
    /// The session wrote `bytes` of notifications to its connection.
    pub fn written(&self, bytes: usize) {
        self.0.fetch_sub(bytes, Ordering::Relaxed);
    }

    fn unwritten(&self) -> usize {
        self.0.load(Ordering::Relaxed)
    }

    fn queued(&self, bytes: usize) {
        self.0.fetch_add(bytes, Ordering::Relaxed);
    }
}

/// A notification on its way to a session, serialised once for all recipients.
#[derive(Message, Clone, Debug)]
#[rtype(result = "()")]
pub struct Notify {
    /// The run it concerns, so a session can hold it back until its own response went out.
    pub run: Arc<str>,
    /// The whole JSON-RPC notification text.
    pub text: Arc<str>,
}

/// Tells a session the server is going away: it closes with 1001.
#[derive(Message, Clone, Copy, Debug)]
#[rtype(result = "()")]
pub struct GoingAway;

/// Tells a session it fell behind: the hub sends it nothing more, and it closes (1013).
#[derive(Message, Clone, Copy, Debug)]
#[rtype(result = "()")]
pub struct FellBehind {
    /// Bytes of notifications it had not written when the hub stopped.
    pub unwritten: usize,
}

/// A session connects (on start), before it is bound to any project.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Join {
    /// The session's id.
    pub session: u64,
    /// Where to deliver notifications.
    pub notify: Recipient<Notify>,
    /// Where to send the shutdown close.
    pub close: Recipient<GoingAway>,
    /// Where to say it fell behind.
    pub behind: Recipient<FellBehind>,
    /// What it has not written yet.
    pub backlog: Backlog,
}

/// A joined session binds to a project's audience (on `rummy/hello`; a second hello moves it).
#[derive(Message)]
#[rtype(result = "()")]
pub struct Subscribe {
    /// The session's id.
    pub session: u64,
    /// The project it is bound to.
    pub project_id: i32,
}

/// Closes every session (server shutdown); answers once all were told.
#[derive(Message)]
#[rtype(result = "usize")]
pub struct CloseAll;

/// A session leaves (on close).
#[derive(Message)]
#[rtype(result = "()")]
pub struct Unsubscribe {
    /// The session's id.
    pub session: u64,
}

/// A notification for every session of a project.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Publish {
    /// The project.
    pub project_id: i32,
    /// The notification.
    pub notify: Notify,
}

struct Member {
    notify: Recipient<Notify>,
    close: Recipient<GoingAway>,
    behind: Recipient<FellBehind>,
    backlog: Backlog,
    project: Option<i32>,
}

/// Routes notifications by project.
pub struct NotificationHub {
    /// Every connected session.
    sessions: HashMap<u64, Member>,
    /// project → its sessions
    projects: HashMap<i32, Vec<u64>>,
    /// Most bytes a session may leave unwritten before it gets nothing more.
    max_backlog: usize,
}

impl Actor for NotificationHub {
    type Context = Context<Self>;
}

impl NotificationHub {
    /// A hub that stops sending to a session with more than `max_backlog` bytes unwritten.
    pub fn new(max_backlog: usize) -> Self {
        NotificationHub {
            sessions: HashMap::new(),
            projects: HashMap::new(),
            max_backlog,
        }
    }

    fn unbind(&mut self, session: u64) {
        let Some(project) = self
            .sessions
            .get_mut(&session)
            .and_then(|m| m.project.take())
        else {
            return;
        };
        if let Some(members) = self.projects.get_mut(&project) {
            members.retain(|s| *s != session);
            if members.is_empty() {
                self.projects.remove(&project);
            }
        }
    }
}

impl Handler<Join> for NotificationHub {
    type Result = ();

    fn handle(&mut self, msg: Join, _: &mut Context<Self>) {
        let member = Member {
            notify: msg.notify,
            close: msg.close,
            behind: msg.behind,
            backlog: msg.backlog,
            project: None,
        };
        self.sessions.insert(msg.session, member);
    }
}

impl Handler<Subscribe> for NotificationHub {
    type Result = ();

    fn handle(&mut self, msg: Subscribe, _: &mut Context<Self>) {
        self.unbind(msg.session);
        if let Some(member) = self.sessions.get_mut(&msg.session) {
            member.project = Some(msg.project_id);
            self.projects
                .entry(msg.project_id)
                .or_default()
                .push(msg.session);
        }
    }
}

impl Handler<Unsubscribe> for NotificationHub {
    type Result = ();

    fn handle(&mut self, msg: Unsubscribe, _: &mut Context<Self>) {
        self.unbind(msg.session);
        self.sessions.remove(&msg.session);
    }
}

impl Handler<Publish> for NotificationHub {
    type Result = ();

    fn handle(&mut self, msg: Publish, _: &mut Context<Self>) {
        let Some(members) = self.projects.get(&msg.project_id) else {
            return;
        };
        let bytes = msg.notify.text.len();
        let mut behind = Vec::new();
        for session in members {
            let Some(member) = self.sessions.get(session) else {
                continue;
            };
            let unwritten = member.backlog.unwritten();
            if unwritten > 0 && unwritten + bytes > self.max_backlog {
                behind.push((*session, unwritten));
                continue;
            }
            member.backlog.queued(bytes);
            member.notify.do_send(msg.notify.clone());
        }
        for (session, unwritten) in behind {
            tracing::warn!(
                session,
                unwritten,
                "session fell behind on notifications; closing it"
            );
            self.unbind(session);
            if let Some(member) = self.sessions.get(&session) {
                member.behind.do_send(FellBehind { unwritten });
            }
        }
    }
}

impl Handler<CloseAll> for NotificationHub {
    type Result = usize;

    fn handle(&mut self, _: CloseAll, _: &mut Context<Self>) -> usize {
        for member in self.sessions.values() {
            member.close.do_send(GoingAway);
        }
        self.sessions.len()
    }
}
