//! Several processes on one PostgreSQL database (docs/design/scale.md): this process's row and its
//! renewal, what the others commit reaching this process's clients, and calls for runs another
//! process holds.
//!
//! - [`Cluster`] is the handle the rest of the server holds (`Services::cluster`, present only
//!   on PostgreSQL): this process's id, the relay of its pushes, and [`Cluster::call`].
//! - `ClusterActor` renews the process row every third of `RUMMY_LEASE_MS` (one write renews
//!   every lease the process holds), and reads the LISTEN connection: a notification another
//!   process stored (`n<run> <seq>`) or relayed (`r<id>`, `e…`) goes to this process's hub, in
//!   commit order; a call addressed here (`c<id>`) goes to the run registry and its answer back
//!   to the table; an answer to a call made here (`a<id>`) wakes its caller.
//! - Pushes that are not stored (progress, proposals, streamed text, a cancelled stream) go to
//!   the others from a thread of their own ([`relay`]), batched: one round trip for all that
//!   queued meanwhile.
//!
//! Invariant: a process answers only calls addressed to it, and relays nothing it recorded
//! itself (a stored notification's `origin`, a relayed push's origin). Clients that missed a
//! push while the LISTEN connection was down catch up with `getRun {sinceSeq}`, as after any
//! reconnection.

pub mod calls;
mod relay;

use crate::clock::now;
use crate::hub::{send, NotificationHub};
use crate::provider::Providers;
use crate::store::Store;
use actix::prelude::*;
use rummy_core::orchestration::{RunAnswer, RunCommand};
use rummy_core::wire::jsonrpc::notification_text;
use rummy_core::wire::{ErrorKind, RpcError};
use rummy_store::cluster;
use rummy_store::ids::{ProjectId, RunId};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::oneshot;

/// This process as the others see it, and how to reach them.
#[derive(Clone)]
pub struct Cluster {
    me: Arc<str>,
    addr: Addr<ClusterActor>,
    relay: relay::Relay,
    lease_ms: u64,
}

impl Cluster {
    /// This process's id (its row in `processes`, the owner of its leases).
    pub fn me(&self) -> &str {
        &self.me
    }

    /// How long a hold lasts unless renewed (`RUMMY_LEASE_MS`).
    pub fn lease_ms(&self) -> u64 {
        self.lease_ms
    }

    /// Sends a push this process's clients just got to the other processes' clients.
    pub fn relay(&self, project_id: ProjectId, run: &str, text: &str) {
        self.relay.push(project_id, run, text);
    }

    /// Asks `owner`, the process holding run `run_id`, to do `call`; answers what it answered.
    /// Without an answer within the lease's time (the holder died, or stopped renewing) the
    /// call is withdrawn and fails with [`ErrorKind::Overloaded`]: the caller places it again,
    /// and by then the run can be taken over.
    pub async fn call(
        &self,
        run_id: RunId,
        owner: &str,
        call: &RunCommand,
    ) -> Result<RunAnswer, RpcError> {
        let (method, params) = calls::encode_call(call);
        let (me, owner) = (self.me.to_string(), owner.to_owned());
        let (tell, told) = oneshot::channel();
        let id = self
            .addr
            .send(RecordCall {
                run_id,
                owner,
                method,
                params,
                me,
                answer: tell,
            })
            .await
            .map_err(|e| RpcError::new(ErrorKind::Internal, e.to_string()))??;
        let waited = Duration::from_millis(self.lease_ms.max(1_000));
        match tokio::time::timeout(waited, told).await {
            Ok(Ok(result)) => calls::decode_answer(&result),
            _ => {
                self.addr.do_send(Withdraw { id });
                Err(RpcError::new(
                    ErrorKind::Overloaded,
                    "the server process running this run did not answer; try again",
                ))
            }
        }
    }
}

/// Starts the cluster for process `me` on the database at `url`: registers the process,
/// listens, renews. `registry` is told of calls addressed here once it is bound ([`Bind`]).
pub fn start(
    store: Store,
    hub: Addr<NotificationHub>,
    providers: Providers,
    url: &str,
    me: Arc<str>,
    lease_ms: u64,
) -> Result<Cluster, String> {
    let listener =
        rummy_pg::listen::Listener::start(url, &[cluster::PUSH_CHANNEL, cluster::CALL_CHANNEL])?;
    let relay = relay::Relay::start(url, Arc::clone(&me))?;
    let renewer = rummy_pg::PgConn::connect(url).map_err(|e| e.to_string())?;
    let addr = ClusterActor {
        store,
        hub,
        providers,
        renewer: Arc::new(std::sync::Mutex::new(rummy_store::db::Db::Pg(renewer))),
        me: Arc::clone(&me),
        lease_ms,
        listener: Some(listener),
        registry: None,
        waiting: HashMap::new(),
    }
    .start();
    Ok(Cluster {
        me,
        addr,
        relay,
        lease_ms,
    })
}

/// Of the processes `alive` says are alive, those of this machine that are gone: an earlier
/// start of this process (same host and process id, another start), or a process whose id no
/// longer exists here. A process id is `host/pid/start` (`rummy::process_id`); on a system
/// without `/proc` nothing is judged gone.
pub fn gone_here(alive: &[String], me: &str) -> Vec<String> {
    fn parts(id: &str) -> Option<(&str, &str, &str)> {
        let mut it = id.rsplitn(3, '/');
        let (start, pid, host) = (it.next()?, it.next()?, it.next()?);
        Some((host, pid, start))
    }
    let Some((host, pid, _)) = parts(me) else {
        return Vec::new();
    };
    if !std::path::Path::new("/proc/self").exists() {
        return Vec::new();
    }
    alive
        .iter()
        .filter(|id| id.as_str() != me)
        .filter(|id| match parts(id) {
            Some((h, p, _)) if h == host => {
                p == pid || !std::path::Path::new("/proc").join(p).exists()
            }
            _ => false,
        })
        .cloned()
        .collect()
}

/// Where calls addressed to this process go: the run registry, once it runs.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Bind(pub Recipient<Execute>);

impl Cluster {
    /// Binds the run registry that executes calls addressed to this process.
    pub fn bind(&self, registry: Recipient<Execute>) {
        self.addr.do_send(Bind(registry));
    }
}

/// A call another process made for a run this one holds, to execute as if a client of this
/// process had asked.
#[derive(Message)]
#[rtype(result = "Result<RunAnswer, RpcError>")]
pub struct Execute {
    /// The run.
    pub run_id: RunId,
    /// What to do: the call a client of the other process made.
    pub command: RunCommand,
}

/// Records a call and waits for its answer.
#[derive(Message)]
#[rtype(result = "Result<i32, RpcError>")]
struct RecordCall {
    run_id: RunId,
    owner: String,
    method: String,
    params: String,
    me: String,
    answer: oneshot::Sender<String>,
}

/// Gives up waiting for call `id`: answered as withdrawn, unless its holder answered first.
#[derive(Message)]
#[rtype(result = "()")]
struct Withdraw {
    id: i32,
}

/// One event of the LISTEN connection.
#[derive(Message)]
#[rtype(result = "()")]
struct Heard(rummy_pg::listen::Event);

/// Renews this process's hold on its runs.
#[derive(Message)]
#[rtype(result = "()")]
struct Renew;

/// Reads what the other processes commit and renews this one's hold.
struct ClusterActor {
    store: Store,
    hub: Addr<NotificationHub>,
    /// Whose limits the live processes share.
    providers: Providers,
    /// The connection renewals go through.
    renewer: Arc<std::sync::Mutex<rummy_store::db::Db>>,
    me: Arc<str>,
    lease_ms: u64,
    listener: Option<rummy_pg::listen::Listener>,
    registry: Option<Recipient<Execute>>,
    /// Calls this process made, by id, waiting for their answers.
    waiting: HashMap<i32, oneshot::Sender<String>>,
}

impl Actor for ClusterActor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        use futures_util::StreamExt;
        if let Some(listener) = self.listener.take() {
            // The stream lives as long as the actor: its end drops the listener, which closes
            // the connection.
            ctx.add_stream(listener.map(Heard));
        }
        let every = Duration::from_millis((self.lease_ms / 3).max(100));
        ctx.run_interval(every, |_, ctx| ctx.notify(Renew));
    }
}

impl StreamHandler<Heard> for ClusterActor {
    fn handle(&mut self, Heard(event): Heard, ctx: &mut Context<Self>) {
        use rummy_pg::listen::Event;
        match event {
            Event::Notification { payload, .. } => self.heard(payload, ctx),
            Event::Lost(reason) => tracing::warn!(
                %reason,
                "lost the connection that hears the other server processes; reconnecting"
            ),
            Event::Listening => {
                // Calls addressed here, or answers, may have come while it was down.
                self.catch_up(ctx);
            }
        }
    }
}

impl ClusterActor {
    /// Acts on one notification's payload.
    fn heard(&mut self, payload: String, ctx: &mut Context<Self>) {
        let (kind, rest) = payload.split_at(payload.len().min(1));
        match kind {
            "n" => self.relay_stored(rest, ctx),
            "r" => self.relay_row(rest, ctx),
            "e" => self.relay_inline(rest),
            "c" => {
                if let Ok(id) = rest.parse() {
                    self.execute(id, ctx);
                }
            }
            "a" => {
                if let Ok(id) = rest.parse() {
                    self.answered(id, ctx);
                }
            }
            _ => tracing::warn!(payload, "a notification of no known kind"),
        }
    }

    /// A stored notification (`<run> <seq>`): read and sent to this process's clients, unless
    /// this process recorded it.
    fn relay_stored(&self, rest: &str, ctx: &mut Context<Self>) {
        let Some((run, seq)) = rest
            .split_once(' ')
            .and_then(|(r, s)| Some((r.parse().ok()?, s.parse().ok()?)))
        else {
            return;
        };
        let (store, hub, me) = (self.store.clone(), self.hub.clone(), Arc::clone(&self.me));
        ctx.spawn(
            async move {
                match store
                    .read(move |c| cluster::notification(c, RunId(run), seq))
                    .await
                {
                    Ok(Some((origin, project_id, alias, method, params))) => {
                        if origin.as_deref() != Some(&*me) {
                            let text = notification_text(&method, &params);
                            send(&hub, project_id, &alias, text, Some(seq));
                        }
                    }
                    Ok(None) => {}
                    Err(e) => tracing::warn!(error = %e, "cannot read a relayed notification"),
                }
            }
            .into_actor(self),
        );
    }

    /// A push relayed through its row (`<id>`).
    fn relay_row(&self, rest: &str, ctx: &mut Context<Self>) {
        let Ok(id) = rest.parse::<i32>() else { return };
        let (store, hub, me) = (self.store.clone(), self.hub.clone(), Arc::clone(&self.me));
        ctx.spawn(
            async move {
                match store.read(move |c| cluster::relayed(c, id)).await {
                    Ok(Some((origin, project_id, run, text))) if origin != *me => {
                        send(&hub, ProjectId(project_id), &run, text, None);
                    }
                    Ok(_) => {}
                    Err(e) => tracing::warn!(error = %e, "cannot read a relayed push"),
                }
            }
            .into_actor(self),
        );
    }

    /// A push carried in the payload (`<origin>\n<project>\n<run>\n<text>`).
    fn relay_inline(&self, rest: &str) {
        let mut parts = rest.splitn(4, '\n');
        let (Some(origin), Some(project), Some(run), Some(text)) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return;
        };
        if origin == &*self.me {
            return;
        }
        if let Ok(project) = project.parse() {
            send(&self.hub, ProjectId(project), run, text.to_owned(), None);
        }
    }

    /// A call (`c<id>`): executed here if it is addressed here, and answered.
    fn execute(&self, id: i32, ctx: &mut Context<Self>) {
        let Some(registry) = self.registry.clone() else {
            return;
        };
        let (store, me) = (self.store.clone(), Arc::clone(&self.me));
        ctx.spawn(
            async move {
                let call = match store.read(move |c| cluster::call(c, id)).await {
                    Ok(Some(call)) if call.target == *me && call.result.is_none() => call,
                    Ok(_) => return,
                    Err(e) => {
                        tracing::warn!(error = %e, id, "cannot read a call");
                        return;
                    }
                };
                let answer = match calls::decode_call(&call.method, &call.params) {
                    Ok(command) => registry
                        .send(Execute {
                            run_id: call.run_id,
                            command,
                        })
                        .await
                        .unwrap_or_else(|e| Err(RpcError::new(ErrorKind::Internal, e.to_string()))),
                    Err(e) => Err(e),
                };
                let result = calls::encode_answer(&answer);
                if let Err(e) = store
                    .write(move |c| cluster::answer_call(c, id, &result, now()))
                    .await
                {
                    tracing::warn!(error = %e, id, "cannot answer a call");
                }
            }
            .into_actor(self),
        );
    }

    /// An answer (`a<id>`) to a call made here: its caller is told.
    fn answered(&mut self, id: i32, ctx: &mut Context<Self>) {
        if !self.waiting.contains_key(&id) {
            return;
        }
        let store = self.store.clone();
        ctx.spawn(
            async move { store.read(move |c| cluster::call(c, id)).await }
                .into_actor(self)
                .map(move |read, act, _| match read {
                    Ok(Some(call)) => {
                        if let (Some(result), Some(tell)) = (call.result, act.waiting.remove(&id)) {
                            let _ = tell.send(result);
                        }
                    }
                    Ok(None) => {}
                    Err(e) => tracing::warn!(error = %e, id, "cannot read a call's answer"),
                }),
        );
    }

    /// After the LISTEN connection came back: the calls addressed here and the answers to
    /// calls made here that it may have missed.
    fn catch_up(&mut self, ctx: &mut Context<Self>) {
        let ids: Vec<i32> = self.waiting.keys().copied().collect();
        for id in ids {
            self.answered(id, ctx);
        }
        let (store, me) = (self.store.clone(), self.me.to_string());
        ctx.spawn(
            async move { store.read(move |c| cluster::pending_calls(c, &me)).await }
                .into_actor(self)
                .map(|read, act, ctx| match read {
                    Ok(ids) => ids.into_iter().for_each(|id| act.execute(id, ctx)),
                    Err(e) => tracing::warn!(error = %e, "cannot read the calls addressed here"),
                }),
        );
    }
}

impl Handler<Bind> for ClusterActor {
    type Result = ();

    fn handle(&mut self, Bind(registry): Bind, ctx: &mut Context<Self>) {
        self.registry = Some(registry);
        self.catch_up(ctx);
    }
}

impl Handler<RecordCall> for ClusterActor {
    type Result = ResponseActFuture<Self, Result<i32, RpcError>>;

    fn handle(&mut self, msg: RecordCall, _: &mut Context<Self>) -> Self::Result {
        let store = self.store.clone();
        let RecordCall {
            run_id,
            owner,
            method,
            params,
            me,
            answer,
        } = msg;
        let sent = async move {
            store
                .write(move |c| cluster::send_call(c, run_id, &owner, &me, &method, &params, now()))
                .await
                .map_err(|e| RpcError::new(ErrorKind::Internal, e.to_string()))
        };
        Box::pin(sent.into_actor(self).map(move |id, act, _| {
            let id = id?;
            act.waiting.insert(id, answer);
            Ok(id)
        }))
    }
}

impl Handler<Withdraw> for ClusterActor {
    type Result = ();

    fn handle(&mut self, Withdraw { id }: Withdraw, ctx: &mut Context<Self>) {
        self.waiting.remove(&id);
        let store = self.store.clone();
        let withdrawn = calls::encode_answer(&Err(RpcError::new(
            ErrorKind::Overloaded,
            "withdrawn: no answer in time",
        )));
        ctx.spawn(
            async move {
                if let Err(e) = store
                    .write(move |c| cluster::answer_call(c, id, &withdrawn, now()))
                    .await
                {
                    tracing::warn!(error = %e, id, "cannot withdraw a call");
                }
            }
            .into_actor(self),
        );
    }
}

impl Handler<Renew> for ClusterActor {
    type Result = ();

    /// On a connection of its own, not the writer's queue: a renewal that waited behind a busy
    /// writer would come too late, and the process would find its own hold expired.
    fn handle(&mut self, _: Renew, ctx: &mut Context<Self>) {
        let (renewer, me) = (Arc::clone(&self.renewer), self.me.to_string());
        let providers = self.providers.clone();
        let lease = i64::try_from(self.lease_ms).unwrap_or(i64::MAX);
        ctx.spawn(
            async move {
                let renewed = actix_rt::task::spawn_blocking(move || {
                    let mut conn = renewer.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                    diesel::Connection::transaction(&mut *conn, |c| {
                        let at = now();
                        let renewed = cluster::renew(c, &me, at, lease)?;
                        if !renewed {
                            // Expired (a long pause, or the database was away): whatever it
                            // held may be another's now; from here on it holds only what it
                            // takes again.
                            cluster::retire(c, &me)?;
                            cluster::register(c, &me, at, lease)?;
                        }
                        // Rows of processes long gone, and calls long answered.
                        cluster::sweep(c, rummy_provider::time::Millis(at.0 - lease.saturating_mul(10)))?;
                        Ok::<_, rummy_store::StoreError>((renewed, cluster::alive(c, at)?.len()))
                    })
                })
                .await;
                match renewed {
                    Ok(Ok((true, alive))) => providers.share(alive),
                    Ok(Ok((false, alive))) => {
                        providers.share(alive);
                        tracing::error!(
                            "this process's hold on its runs had expired; other processes may have taken them over"
                        );
                    }
                    Ok(Err(e)) => tracing::error!(error = %e, "cannot renew this process's hold on its runs"),
                    Err(e) => tracing::error!(error = %e, "cannot renew this process's hold on its runs"),
                }
            }
            .into_actor(self),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Gone: an earlier start of this very process, a process of this machine whose id no
    /// longer runs. Alive: this process, a running one of this machine, another machine's.
    #[test]
    fn processes_of_this_machine_that_are_gone() {
        let me = format!("vm/{}/beef", std::process::id());
        let alive = vec![
            me.clone(),
            format!("vm/{}/aaaa", std::process::id()),
            "vm/1/cafe".to_owned(),
            "vm/999999999/cafe".to_owned(),
            "other/999999999/cafe".to_owned(),
        ];
        assert_eq!(
            gone_here(&alive, &me),
            vec![
                format!("vm/{}/aaaa", std::process::id()),
                "vm/999999999/cafe".to_owned()
            ]
        );
    }
}
