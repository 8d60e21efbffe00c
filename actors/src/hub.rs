//! `NotificationHub`: fans notifications out to every session bound to the run's project, and to no other.

use actix::prelude::*;
use std::collections::HashMap;
use std::sync::Arc;

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
    project: Option<i32>,
}

/// Routes notifications by project.
#[derive(Default)]
pub struct NotificationHub {
    /// Every connected session.
    sessions: HashMap<u64, Member>,
    /// project → its sessions
    projects: HashMap<i32, Vec<u64>>,
}

impl Actor for NotificationHub {
    type Context = Context<Self>;
}

impl NotificationHub {
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
        for session in members {
            if let Some(member) = self.sessions.get(session) {
                member.notify.do_send(msg.notify.clone());
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
