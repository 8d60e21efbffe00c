//! `StoreActor`: the only writer. It owns the one writing SQLite connection on an arbiter thread
//! of its own; reads go to a read-only pool.
//!
//! Writes commit in groups: every unit that queued while the previous group ran joins the next
//! transaction, each unit in a savepoint of its own (a unit alone in its group runs in the
//! transaction itself, which is its savepoint's equivalent). A unit that fails rolls back alone; the
//! others commit together, and each caller hears its unit's result only after that commit. Under
//! load this spends one commit (and its WAL frames) on many units instead of one per unit.
//!
//! The writer does not checkpoint the write-ahead log itself: a thread with a connection of its
//! own does, every 200 ms, so copying the log into the database and its fsync never stall a
//! write. The log starts over from its beginning only when a write begins with all of it
//! copied, which writes that never pause never do (each pass ends with newer commits in the log):
//! so once a pass has copied a log of [`RESTART_AFTER_FRAMES`], the writer copies the few frames
//! committed since, between two groups, and its next write starts the log over.

use crate::metrics::Metrics;
use actix::prelude::*;
use actix::WeakAddr;
use diesel::connection::TransactionManager;
use diesel::Connection;
use rummy_core::wire::bounded::Bounds;
use rummy_store::database::{self as db, ReadPool};
use rummy_store::db::Db;
use rummy_store::location::Location;
use rummy_store::StoreError;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{mpsc, Arc};
use std::time::Duration;
use tokio::sync::oneshot;

/// A unit of store work: a call into `rummy_store` over one connection.
pub type Work<R> = Box<dyn FnOnce(&mut Db) -> Result<R, StoreError> + Send>;

/// A unit of writing work: it commits whole or not at all.
pub struct Write<R>(Work<R>);

impl<R: Send + 'static> Message for Write<R> {
    type Result = Result<R, StoreError>;
}

/// The writer, as [`StoreError::Stopped`] names it.
const WRITER: &str = "the store writer";

/// The most units one transaction takes; later ones wait for the next group.
const MAX_GROUP: usize = 64;

/// A queued unit with its caller, its result type erased.
trait Unit: Send {
    /// Runs the unit, keeping its result; true when it succeeded. In a savepoint of its own,
    /// which a failure rolls back, unless it is `alone` in its group: then it runs in the
    /// group's transaction itself (a savepoint would only repeat it) and a failure must roll
    /// the transaction back.
    fn run(&mut self, conn: &mut Db, alone: bool) -> bool;
    /// Answers the caller: the unit's result, or `failed` when the group did not commit.
    fn settle(self: Box<Self>, failed: Option<&Arc<StoreError>>);
}

struct Pending<R> {
    work: Option<Work<R>>,
    result: Option<Result<R, StoreError>>,
    reply: oneshot::Sender<Result<R, StoreError>>,
}

impl<R: Send + 'static> Unit for Pending<R> {
    fn run(&mut self, conn: &mut Db, alone: bool) -> bool {
        let Some(work) = self.work.take() else {
            return false;
        };
        let result = catch_unwind(AssertUnwindSafe(|| {
            if alone {
                work(conn)
            } else {
                conn.transaction(work)
            }
        }))
        .unwrap_or_else(|_| {
            if !alone {
                // The savepoint is still open: roll it back so the group goes on without it.
                let _ = <Db as Connection>::TransactionManager::rollback_transaction(conn);
            }
            Err(StoreError::Panicked)
        });
        let ok = result.is_ok();
        self.result = Some(result);
        ok
    }

    fn settle(self: Box<Self>, failed: Option<&Arc<StoreError>>) {
        let result = match (failed, self.result) {
            (Some(e), _) => Err(StoreError::Uncommitted(Arc::clone(e))),
            (None, Some(result)) => result,
            // A group that committed ran every unit: only a writer dropping the unit unrun
            // could leave it without a result.
            (None, None) => Err(StoreError::Stopped(WRITER)),
        };
        let _ = self.reply.send(result);
    }
}

/// Why a group's transaction did not commit.
enum Group {
    /// Its only unit failed; the unit holds the error.
    Alone,
    /// Beginning or committing the transaction failed.
    Store(StoreError),
}
impl From<diesel::result::Error> for Group {
    fn from(e: diesel::result::Error) -> Self {
        Group::Store(e.into())
    }
}

/// Tells the actor to commit what has queued.
struct Flush;

impl Message for Flush {
    type Result = ();
}

/// Tells the writer to copy into the database what the checkpoint thread's last pass left: the
/// frames committed while it ran.
struct FinishCheckpoint;

impl Message for FinishCheckpoint {
    type Result = ();
}

/// Owns the writing connection; every write of the server passes through it, one group at a time.
pub struct StoreActor {
    conn: Db,
    queued: Vec<Box<dyn Unit>>,
    /// Where each group's commit time and size are counted.
    metrics: Arc<Metrics>,
    /// Dropped with the actor, which ends the checkpoint thread.
    _checkpoints: mpsc::Sender<()>,
}

/// How often the checkpoint thread copies the write-ahead log into the database.
const CHECKPOINT_EVERY: Duration = Duration::from_millis(200);

/// A log this long (in frames, about a page each; SQLite's own automatic checkpoint waits for
/// as many) is started over even while writes never pause.
const RESTART_AFTER_FRAMES: i32 = 1000;

/// The checkpoint thread: a passive checkpoint every [`CHECKPOINT_EVERY`] on a connection of
/// its own, so the copy and its fsync are off the writer's path; a last one when the writer
/// is gone. After a pass that copied all of a long log, the writer finishes it.
fn checkpoints(
    mut conn: diesel::SqliteConnection,
    stop: mpsc::Receiver<()>,
    writer: WeakAddr<StoreActor>,
) {
    loop {
        let last = matches!(
            stop.recv_timeout(CHECKPOINT_EVERY),
            Err(mpsc::RecvTimeoutError::Disconnected)
        );
        match db::checkpoint(&mut conn) {
            // Only after a pass that copied all it saw: when a reader on an older snapshot
            // held it back, the writer could copy no more.
            Ok(pass) if pass.log >= RESTART_AFTER_FRAMES && pass.checkpointed == pass.log => {
                if let Some(writer) = writer.upgrade() {
                    writer.do_send(FinishCheckpoint);
                }
            }
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "WAL checkpoint failed; trying again later"),
        }
        if last {
            return;
        }
    }
}

impl Actor for StoreActor {
    type Context = Context<Self>;

    /// The arbiter thread exists for this actor alone; it ends with it.
    fn stopped(&mut self, _: &mut Self::Context) {
        Arbiter::current().stop();
    }
}

impl<R: Send + 'static> Handler<Write<R>> for StoreActor {
    type Result = ResponseFuture<Result<R, StoreError>>;

    /// Queues the unit; the group it joins commits once the mailbox is drained.
    fn handle(&mut self, msg: Write<R>, ctx: &mut Self::Context) -> Self::Result {
        let (reply, answer) = oneshot::channel();
        if self.queued.is_empty() {
            // Runs after every message already in the mailbox has been queued.
            ctx.notify(Flush);
        }
        self.queued.push(Box::new(Pending {
            work: Some(msg.0),
            result: None,
            reply,
        }));
        Box::pin(async move { answer.await.map_err(|_| StoreError::Stopped(WRITER))? })
    }
}

impl Handler<Flush> for StoreActor {
    type Result = ();

    fn handle(&mut self, _: Flush, ctx: &mut Self::Context) {
        let take = self.queued.len().min(MAX_GROUP);
        let mut group: Vec<Box<dyn Unit>> = self.queued.drain(..take).collect();
        if !self.queued.is_empty() {
            ctx.notify(Flush);
        }
        let alone = group.len() == 1;
        let started = std::time::Instant::now();
        let committed = rummy_store::db::immediate_transaction(&mut self.conn, |conn| {
            let mut all_ok = true;
            for unit in &mut group {
                all_ok &= unit.run(conn, alone);
            }
            if alone && !all_ok {
                // Rolls the transaction back; the unit keeps its own error for its caller.
                return Err(Group::Alone);
            }
            Ok(())
        });
        self.metrics
            .commit_seconds
            .observe(started.elapsed().as_secs_f64());
        self.metrics.group_units.observe(group.len() as f64);
        let failed = match committed {
            Ok(()) | Err(Group::Alone) => None,
            Err(Group::Store(e)) => Some(Arc::new(e)),
        };
        if let Some(e) = &failed {
            tracing::error!(error = %e, units = group.len(), "a group of store writes failed to commit");
        }
        for unit in group {
            unit.settle(failed.as_ref());
        }
    }
}

impl Handler<FinishCheckpoint> for StoreActor {
    type Result = ();

    /// Copies the frames committed since the checkpoint thread's pass; nothing else writes
    /// meanwhile, so all of the log is then copied and the next write starts it over.
    fn handle(&mut self, _: FinishCheckpoint, _: &mut Self::Context) {
        let Db::Sqlite(conn) = &mut self.conn else {
            return;
        };
        if let Err(e) = db::checkpoint(conn) {
            tracing::warn!(error = %e, "finishing a WAL checkpoint failed; the log goes on growing until the next");
        }
    }
}

/// The handle actors use to reach the store: writes to the `StoreActor`, reads from the pool.
#[derive(Clone)]
pub struct Store {
    writer: Addr<StoreActor>,
    readers: ReadPool,
    metrics: Arc<Metrics>,
    location: Arc<Location>,
    /// What every answer and push written through this handle is held to.
    bounds: Bounds,
}

impl Store {
    /// Opens the database (running migrations), writes the scheme registry and starts the writer
    /// on an arbiter thread of its own. Must be called inside a running actix system. The
    /// server's `metrics` travel with the handle: every actor holds one. An SQLite database
    /// gets the checkpoint thread; PostgreSQL checkpoints by itself.
    pub fn open(
        location: &Location,
        readers: u32,
        metrics: Arc<Metrics>,
    ) -> Result<Store, StoreError> {
        let mut conn = db::open(location)?;
        rummy_store::schemes::write_registry(&mut conn)?;
        let pool = db::open_read_pool(location, readers)?;
        let checkpointer = match location {
            Location::Sqlite(path) => Some(db::open_checkpointer(path)?),
            Location::Postgres(_) => None,
        };
        db::hand_off_checkpoints(&mut conn)?;
        let (stop, stopped) = mpsc::channel();
        let arbiter = Arbiter::new();
        let counted = Arc::clone(&metrics);
        let writer = StoreActor::start_in_arbiter(&arbiter.handle(), move |_| StoreActor {
            conn,
            queued: Vec::new(),
            metrics: counted,
            _checkpoints: stop,
        });
        if let Some(checkpointer) = checkpointer {
            // A weak address: the thread must not keep the writer alive, since the writer's
            // end is what ends the thread.
            let weak = writer.downgrade();
            std::thread::Builder::new()
                .name("rummy-checkpoint".into())
                .spawn(move || checkpoints(checkpointer, stopped, weak))
                .map_err(StoreError::Spawn)?;
        }
        Ok(Store {
            writer,
            readers: pool,
            metrics,
            location: Arc::new(location.clone()),
            bounds: Bounds::default(),
        })
    }

    /// The same store, its pushes and answers held to `bounds` (the configuration's limits;
    /// [`Store::open`] starts with the defaults).
    pub fn bounded(mut self, bounds: Bounds) -> Store {
        self.bounds = bounds;
        self
    }

    /// What answers and pushes are held to: `RUMMY_INLINE_BODY_BYTES` and
    /// `RUMMY_MAX_MESSAGE_BYTES`.
    pub fn bounds(&self) -> Bounds {
        self.bounds
    }

    /// The server's metrics.
    pub fn metrics(&self) -> &Arc<Metrics> {
        &self.metrics
    }

    /// Where the database is.
    pub fn location(&self) -> &Location {
        &self.location
    }

    /// Runs `f` on the writing connection; it commits whole or not at all, and this resolves
    /// after the commit.
    pub async fn write<R, F>(&self, f: F) -> Result<R, StoreError>
    where
        R: Send + 'static,
        F: FnOnce(&mut Db) -> Result<R, StoreError> + Send + 'static,
    {
        self.writer
            .send(Write(Box::new(f)))
            .await
            .map_err(|_| StoreError::Stopped(WRITER))?
    }

    /// Runs `f` on a read-only connection off the async threads.
    pub async fn read<R, F>(&self, f: F) -> Result<R, StoreError>
    where
        R: Send + 'static,
        F: FnOnce(&mut Db) -> Result<R, StoreError> + Send + 'static,
    {
        let pool = self.readers.clone();
        actix_rt::task::spawn_blocking(move || {
            let mut conn = pool.get()?;
            f(&mut conn)
        })
        .await
        .map_err(|e| StoreError::Task(Box::new(e)))?
    }
}
