//! `NotificationHub`: fans notifications out to every session bound to the run's project, and to no other; a `tool/call` goes to the one session that offered the tool.
//!
//! A session runs only while its connection takes what it writes: a client that stops reading
//! (a suspended laptop, a stuck plugin) stops its session, and whatever the hub sends it waits
//! in its mailbox. So the hub counts the bytes each session has not written out yet
//! ([`Backlog`]); a session past the limit (`RUMMY_MAX_BACKLOG_BYTES`) gets nothing more and is
//! told it fell behind, which closes it. Its client reconnects and asks `getRun {sinceSeq}`
//! for what it missed. A session that has written everything always gets the next
//! notification, however large.

use actix::prelude::*;
use rummy_core::wire::jsonrpc::notification_text;
use rummy_store::ids::ProjectId;
use rummy_store::notifications::Recorded;
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
    /// Its number in the run's sequence (`run/state`), by which the hub sends a run's pushes
    /// in order.
    pub seq: Option<i32>,
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
    pub project_id: ProjectId,
}

/// Closes every session (server shutdown); answers once all were told.
#[derive(Message)]
#[rtype(result = "usize")]
pub struct CloseAll {
    /// A notification's text for every session bound to a project, sent before it is told to
    /// close: a session writes what it is sent in order, so its client reads it before the
    /// close frame.
    pub notice: Option<String>,
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
    pub project_id: ProjectId,
    /// The notification.
    pub notify: Notify,
}

/// A notification for one session (a `tool/call` to the connection that offered the tool).
/// Answers whether that session is still here to get it.
#[derive(Message)]
#[rtype(result = "bool")]
pub struct Direct {
    /// The session.
    pub session: u64,
    /// The notification.
    pub notify: Notify,
}

struct Member {
    notify: Recipient<Notify>,
    close: Recipient<GoingAway>,
    behind: Recipient<FellBehind>,
    backlog: Backlog,
    project: Option<ProjectId>,
}

/// How long a run's push waits for the ones numbered before it: past it, a push that was
/// never published (its writer's task ended first) leaves a gap clients fill with
/// `getRun {sinceSeq}`, rather than holding the run's later pushes.
const GAP_WAIT: std::time::Duration = std::time::Duration::from_millis(100);

/// A run's sequence nobody published to for this long is forgotten (its next push is then
/// sent as it comes), so the hub holds nothing for runs that finished long ago.
const SEQUENCE_IDLE: std::time::Duration = std::time::Duration::from_secs(60);

/// Where a run's sequence stands: the next number to send, pushes that came early, and when it
/// last moved.
struct Sequence {
    next: i32,
    early: std::collections::BTreeMap<i32, Notify>,
    touched: std::time::Instant,
}

impl Default for Sequence {
    fn default() -> Self {
        Sequence {
            next: 0,
            early: std::collections::BTreeMap::new(),
            touched: std::time::Instant::now(),
        }
    }
}

/// Routes notifications by project.
pub struct NotificationHub {
    /// Every connected session.
    sessions: HashMap<u64, Member>,
    /// project → its sessions
    projects: HashMap<ProjectId, Vec<u64>>,
    /// Most bytes a session may leave unwritten before it gets nothing more.
    max_backlog: usize,
    /// (project, run) → its push sequence. Pushes are numbered in their writes, which commit
    /// in order, but published by the writers' tasks, which may run in another: the hub puts
    /// them back in order.
    sequences: HashMap<(ProjectId, Arc<str>), Sequence>,
}

impl Actor for NotificationHub {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        ctx.run_interval(SEQUENCE_IDLE, |hub, _| {
            hub.sequences
                .retain(|_, s| !s.early.is_empty() || s.touched.elapsed() < SEQUENCE_IDLE);
        });
    }
}

impl NotificationHub {
    /// A hub that stops sending to a session with more than `max_backlog` bytes unwritten.
    pub fn new(max_backlog: usize) -> Self {
        NotificationHub {
            sessions: HashMap::new(),
            projects: HashMap::new(),
            max_backlog,
            sequences: HashMap::new(),
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

/// Sends a run's pushes that waited for a missing one, in order, once [`GAP_WAIT`] passed.
#[derive(Message)]
#[rtype(result = "()")]
struct FlushEarly {
    key: (ProjectId, Arc<str>),
}

impl NotificationHub {
    /// Sends `notify` in its run's order: at once when it is the next (and then whatever waited
    /// behind it), later when one before it has not been published yet.
    fn publish_in_order(&mut self, project_id: ProjectId, notify: Notify, ctx: &mut Context<Self>) {
        let Some(seq) = notify.seq else {
            return self.deliver(project_id, &notify);
        };
        let key = (project_id, Arc::clone(&notify.run));
        let sequence = self.sequences.entry(key.clone()).or_default();
        sequence.touched = std::time::Instant::now();
        if sequence.next == 0 || seq <= sequence.next {
            // The first push seen of the run, the next one, or a late one: send it.
            sequence.next = sequence.next.max(seq + 1);
            let mut ready = vec![notify];
            while let Some(next) = sequence.early.remove(&sequence.next) {
                sequence.next += 1;
                ready.push(next);
            }
            for notify in ready {
                self.deliver(project_id, &notify);
            }
            return;
        }
        let first_early = sequence.early.is_empty();
        sequence.early.insert(seq, notify);
        if first_early {
            ctx.notify_later(FlushEarly { key }, GAP_WAIT);
        }
    }

    fn deliver(&mut self, project_id: ProjectId, notify: &Notify) {
        let Some(members) = self.projects.get(&project_id) else {
            return;
        };
        let bytes = notify.text.len();
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
            member.notify.do_send(notify.clone());
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

impl Handler<Direct> for NotificationHub {
    type Result = bool;

    /// A session past its backlog limit is already being closed: it gets nothing more.
    fn handle(&mut self, msg: Direct, _: &mut Context<Self>) -> bool {
        let Some(member) = self.sessions.get(&msg.session) else {
            return false;
        };
        if member.project.is_none() {
            return false;
        }
        member.backlog.queued(msg.notify.text.len());
        member.notify.do_send(msg.notify);
        true
    }
}

impl Handler<Publish> for NotificationHub {
    type Result = ();

    fn handle(&mut self, msg: Publish, ctx: &mut Context<Self>) {
        self.publish_in_order(msg.project_id, msg.notify, ctx);
    }
}

impl Handler<FlushEarly> for NotificationHub {
    type Result = ();

    fn handle(&mut self, msg: FlushEarly, _: &mut Context<Self>) {
        let project_id = msg.key.0;
        let Some(sequence) = self.sequences.get_mut(&msg.key) else {
            return;
        };
        let early = std::mem::take(&mut sequence.early);
        if let Some(last) = early.keys().next_back() {
            sequence.next = last + 1;
        }
        for notify in early.into_values() {
            self.deliver(project_id, &notify);
        }
    }
}

impl Handler<CloseAll> for NotificationHub {
    type Result = usize;

    fn handle(&mut self, msg: CloseAll, _: &mut Context<Self>) -> usize {
        let notice = msg.notice.map(|text| Notify {
            run: Arc::from(""),
            text: Arc::from(text),
            seq: None,
        });
        for member in self.sessions.values() {
            // Through the same mailbox as the close, so it goes out first; a session past its
            // backlog limit is being closed already and gets nothing more.
            if let (Some(notice), Some(_)) = (&notice, member.project) {
                let (bytes, unwritten) = (notice.text.len(), member.backlog.unwritten());
                if unwritten == 0 || unwritten + bytes <= self.max_backlog {
                    member.backlog.queued(bytes);
                    member.notify.do_send(notice.clone());
                }
            }
            member.close.do_send(GoingAway);
        }
        self.sessions.len()
    }
}

/// Asks for the notification bytes handed to sessions that they have not written out yet,
/// summed over every session (`rummy_notification_backlog_bytes`).
#[derive(Message)]
#[rtype(result = "usize")]
pub struct BacklogBytes;

impl Handler<BacklogBytes> for NotificationHub {
    type Result = usize;

    fn handle(&mut self, _: BacklogBytes, _: &mut Context<Self>) -> usize {
        self.sessions
            .values()
            .map(|member| member.backlog.unwritten())
            .sum()
    }
}

/// Sends a recorded `run/state` push through `hub` to every session of the project, as it was
/// stored, in its run's order (for actors that hold the hub but not the services).
pub fn publish_state(
    hub: &Addr<NotificationHub>,
    project_id: ProjectId,
    run: &str,
    state: &Recorded,
) {
    send(
        hub,
        project_id,
        run,
        notification_text("run/state", state.json()),
        Some(state.seq()),
    );
}

/// Sends a notification's text through `hub` to every session of the project (`seq`: its place
/// in the run's sequence, for `run/state`).
pub fn send(
    hub: &Addr<NotificationHub>,
    project_id: ProjectId,
    run: &str,
    text: String,
    seq: Option<i32>,
) {
    hub.do_send(Publish {
        project_id,
        notify: Notify {
            run: Arc::from(run),
            text: Arc::from(text),
            seq,
        },
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// A session that records the sequence numbers it is sent.
    struct Recorder(Arc<Mutex<Vec<Option<i32>>>>);

    impl Actor for Recorder {
        type Context = Context<Self>;
    }

    impl Handler<Notify> for Recorder {
        type Result = ();
        fn handle(&mut self, msg: Notify, _: &mut Context<Self>) {
            self.0.lock().unwrap().push(msg.seq);
        }
    }

    impl Handler<GoingAway> for Recorder {
        type Result = ();
        fn handle(&mut self, _: GoingAway, _: &mut Context<Self>) {}
    }

    impl Handler<FellBehind> for Recorder {
        type Result = ();
        fn handle(&mut self, _: FellBehind, _: &mut Context<Self>) {}
    }

    fn push(run: &str, seq: Option<i32>) -> Publish {
        Publish {
            project_id: ProjectId(1),
            notify: Notify {
                run: Arc::from(run),
                text: Arc::from("{}"),
                seq,
            },
        }
    }

    /// A run's pushes reach sessions in sequence order whatever order they are published in; a
    /// missing one holds the rest only briefly; other notifications and other runs pass at once.
    #[actix_rt::test]
    async fn pushes_are_sent_in_their_runs_order() {
        let got = Arc::new(Mutex::new(Vec::new()));
        let session = Recorder(Arc::clone(&got)).start();
        let hub = NotificationHub::new(1 << 20).start();
        hub.do_send(Join {
            session: 1,
            notify: session.clone().recipient(),
            close: session.clone().recipient(),
            behind: session.clone().recipient(),
            backlog: Backlog::default(),
        });
        hub.do_send(Subscribe {
            session: 1,
            project_id: ProjectId(1),
        });
        for (run, seq) in [("a", 1), ("a", 3), ("b", 7), ("a", 2), ("a", 5)] {
            hub.do_send(push(run, Some(seq)));
        }
        hub.do_send(push("a", None));
        actix_rt::time::sleep(std::time::Duration::from_millis(20)).await;
        assert_eq!(
            *got.lock().unwrap(),
            vec![Some(1), Some(7), Some(2), Some(3), None]
        );
        actix_rt::time::sleep(GAP_WAIT * 2).await;
        hub.do_send(push("a", Some(6)));
        actix_rt::time::sleep(std::time::Duration::from_millis(20)).await;
        assert_eq!(
            *got.lock().unwrap(),
            vec![Some(1), Some(7), Some(2), Some(3), None, Some(5), Some(6)]
        );
    }
}
