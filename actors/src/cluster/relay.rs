//! Sends this process's pushes that are not stored (progress, proposals, streamed text, a
//! cancelled stream) to the other processes: a thread of its own with a connection of its own,
//! one round trip for every push queued meanwhile, in the order they came.

use rummy_store::cluster::{self, Push};
use rummy_store::db::Db;
use rummy_store::ids::ProjectId;
use std::sync::mpsc;
use std::sync::Arc;

/// Most pushes one round trip carries.
const BATCH: usize = 256;

/// The relay's queue.
#[derive(Clone)]
pub struct Relay(mpsc::Sender<Push>);

impl Relay {
    /// Connects to `url` and starts the relay's thread; it ends when every handle is dropped.
    pub fn start(url: &str, me: Arc<str>) -> Result<Relay, String> {
        let conn = rummy_pg::PgConn::connect(url).map_err(|e| e.to_string())?;
        let (tx, rx) = mpsc::channel();
        let url = url.to_owned();
        std::thread::Builder::new()
            .name("rummy-relay".into())
            .spawn(move || relay(Db::Pg(conn), &url, &me, &rx))
            .map_err(|e| e.to_string())?;
        Ok(Relay(tx))
    }

    /// Queues a push for the other processes.
    pub fn push(&self, project_id: ProjectId, run: &str, text: &str) {
        let _ = self.0.send(Push {
            project_id: project_id.0,
            run: run.to_owned(),
            text: text.to_owned(),
        });
    }
}

/// The relay's thread: waits for a push, takes what else queued, sends all of it in one
/// round trip; reconnects when the connection fails (what failed is lost: clients catch up
/// with `getRun`).
fn relay(mut conn: Db, url: &str, me: &str, rx: &mpsc::Receiver<Push>) {
    while let Ok(first) = rx.recv() {
        let mut batch = vec![first];
        batch.extend(rx.try_iter().take(BATCH - 1));
        if let Err(e) = cluster::relay(&mut conn, me, &batch, crate::clock::now()) {
            tracing::warn!(error = %e, "relaying pushes to the other server processes failed");
            match rummy_pg::PgConn::connect(url) {
                Ok(fresh) => conn = Db::Pg(fresh),
                Err(e) => tracing::warn!(error = %e, "cannot reconnect the push relay"),
            }
        }
    }
}
