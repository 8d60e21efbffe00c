//! `StoreActor`: the only writer. It owns the one writing SQLite connection in a one-thread `SyncArbiter`; reads go to a read-only pool.

use actix::prelude::*;
use diesel::SqliteConnection;
use rummy_core::db::{self, ReadPool};
use rummy_core::store::StoreError;
use std::path::Path;
use std::sync::Mutex;

/// A unit of store work: a call into `rummy_core::store` over one connection.
pub type Work<R> = Box<dyn FnOnce(&mut SqliteConnection) -> Result<R, StoreError> + Send>;

/// A unit of writing work, run in one transaction.
pub struct Write<R>(Work<R>);

impl<R: Send + 'static> Message for Write<R> {
    type Result = Result<R, StoreError>;
}

/// Owns the writing connection; every write of the server passes through it, one at a time.
pub struct StoreActor {
    conn: SqliteConnection,
}

impl Actor for StoreActor {
    type Context = SyncContext<Self>;
}

impl<R: Send + 'static> Handler<Write<R>> for StoreActor {
    type Result = Result<R, StoreError>;

    /// Runs the unit in an immediate transaction: it commits whole or not at all.
    fn handle(&mut self, msg: Write<R>, _: &mut Self::Context) -> Self::Result {
        self.conn.immediate_transaction(|conn| (msg.0)(conn))
    }
}

/// The handle actors use to reach the store: writes to the `StoreActor`, reads from the pool.
#[derive(Clone)]
pub struct Store {
    writer: Addr<StoreActor>,
    readers: ReadPool,
}

impl Store {
    /// Opens the database (running migrations), seeds the scheme registry and starts the writer.
    /// Must be called inside a running actix system.
    pub fn open(path: &Path, readers: u32) -> Result<Store, StoreError> {
        let mut conn = db::open_writer(path)?;
        rummy_core::store::schemes::seed(&mut conn)?;
        let pool = db::open_read_pool(path, readers)?;
        // SyncArbiter wants a shareable factory; it calls it once per thread, and there is one thread.
        let slot = Mutex::new(Some(conn));
        let writer = SyncArbiter::start(1, move || StoreActor {
            conn: match slot.lock().ok().and_then(|mut s| s.take()) {
                Some(conn) => conn,
                None => unreachable_connection(),
            },
        });
        Ok(Store {
            writer,
            readers: pool,
        })
    }

    /// Runs `f` on the writing connection in one transaction.
    pub async fn write<R, F>(&self, f: F) -> Result<R, StoreError>
    where
        R: Send + 'static,
        F: FnOnce(&mut SqliteConnection) -> Result<R, StoreError> + Send + 'static,
    {
        self.writer
            .send(Write(Box::new(f)))
            .await
            .map_err(|e| StoreError::Pool(format!("store writer unavailable: {e}")))?
    }

    /// Runs `f` on a read-only connection off the async threads.
    pub async fn read<R, F>(&self, f: F) -> Result<R, StoreError>
    where
        R: Send + 'static,
        F: FnOnce(&mut SqliteConnection) -> Result<R, StoreError> + Send + 'static,
    {
        let pool = self.readers.clone();
        actix_rt::task::spawn_blocking(move || {
            let mut conn = pool.get().map_err(|e| StoreError::Pool(e.to_string()))?;
            f(&mut conn)
        })
        .await
        .map_err(|e| StoreError::Pool(format!("read task failed: {e}")))?
    }
}

/// A second writer would break the single-writer invariant; the arbiter has one thread, so this never runs.
fn unreachable_connection() -> SqliteConnection {
    tracing::error!("StoreActor factory called twice; refusing to open a second writer");
    std::process::abort()
}
