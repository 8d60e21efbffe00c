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

/// A session joins a project's audience (on `rummy/hello`; a second hello moves it).
#[derive(Message)]
#[rtype(result = "()")]
pub struct Subscribe {
    /// The session's id.
    pub session: u64,
    /// The project it is bound to.
    pub project_id: i32,
    /// Where to deliver.
    pub recipient: Recipient<Notify>,
}

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

/// Routes notifications by project.
#[derive(Default)]
pub struct NotificationHub {
    /// project → (session → recipient)
    projects: HashMap<i32, HashMap<u64, Recipient<Notify>>>,
    /// session → project, so unsubscribing needs no project id
    sessions: HashMap<u64, i32>,
}

impl Actor for NotificationHub {
    type Context = Context<Self>;
}

impl NotificationHub {
    fn leave(&mut self, session: u64) {
        if let Some(project) = self.sessions.remove(&session) {
            if let Some(members) = self.projects.get_mut(&project) {
                members.remove(&session);
                if members.is_empty() {
                    self.projects.remove(&project);
                }
            }
        }
    }
}

impl Handler<Subscribe> for NotificationHub {
    type Result = ();

    fn handle(&mut self, msg: Subscribe, _: &mut Context<Self>) {
        self.leave(msg.session);
        self.sessions.insert(msg.session, msg.project_id);
        self.projects
            .entry(msg.project_id)
            .or_default()
            .insert(msg.session, msg.recipient);
    }
}

impl Handler<Unsubscribe> for NotificationHub {
    type Result = ();

    fn handle(&mut self, msg: Unsubscribe, _: &mut Context<Self>) {
        self.leave(msg.session);
    }
}

impl Handler<Publish> for NotificationHub {
    type Result = ();

    fn handle(&mut self, msg: Publish, _: &mut Context<Self>) {
        if let Some(members) = self.projects.get(&msg.project_id) {
            for recipient in members.values() {
                recipient.do_send(msg.notify.clone());
            }
        }
    }
}
