//! Sends this process's pushes that are not stored (progress, proposals, streamed text, a
//! cancelled stream) to the other processes: a thread of its own with a connection of its own,
//! one round trip for every push queued meanwhile, in the order they came.

use diesel::connection::SimpleConnection;
use rummy_core::ids::ProjectId;
use std::sync::mpsc;
use std::sync::Arc;

/// The most bytes a push travels in a notification's payload (PostgreSQL allows 8,000 bytes
/// with the channel's name); a larger one goes through `relayed_pushes`, its id in the payload.
const INLINE_BYTES: usize = 7_800;

/// Most pushes one round trip carries.
const BATCH: usize = 256;

/// One push on its way.
struct Push {
    project_id: ProjectId,
    run: String,
    text: String,
}

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
            .spawn(move || relay(conn, &url, &me, &rx))
            .map_err(|e| e.to_string())?;
        Ok(Relay(tx))
    }

    /// Queues a push for the other processes.
    pub fn push(&self, project_id: ProjectId, run: &str, text: &str) {
        let _ = self.0.send(Push {
            project_id,
            run: run.to_owned(),
            text: text.to_owned(),
        });
    }
}

/// `text` as an SQL string literal (`standard_conforming_strings`, on by default since
/// PostgreSQL 9.1: only the quote is doubled).
fn literal(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

/// The statement that relays one push.
fn statement(me: &str, push: &Push) -> String {
    let inline = format!("e{me}\n{}\n{}\n{}", push.project_id.0, push.run, push.text);
    if inline.len() <= INLINE_BYTES {
        return format!(
            "SELECT pg_notify('{}', {});",
            super::PUSH_CHANNEL,
            literal(&inline)
        );
    }
    format!(
        "INSERT INTO relayed_pushes (origin, project_id, run, text, created_at) \
         VALUES ({}, {}, {}, {}, {});",
        literal(me),
        push.project_id.0,
        literal(&push.run),
        literal(&push.text),
        crate::clock::now().0
    )
}

/// The relay's thread: waits for a push, takes what else queued, sends all of it in one
/// round trip; reconnects when the connection fails (what failed is lost: clients catch up
/// with `getRun`).
fn relay(mut conn: rummy_pg::PgConn, url: &str, me: &str, rx: &mpsc::Receiver<Push>) {
    while let Ok(first) = rx.recv() {
        let mut sql = statement(me, &first);
        for push in rx.try_iter().take(BATCH - 1) {
            sql.push_str(&statement(me, &push));
        }
        if let Err(e) = conn.batch_execute(&sql) {
            tracing::warn!(error = %e, "relaying pushes to the other server processes failed");
            match rummy_pg::PgConn::connect(url) {
                Ok(fresh) => conn = fresh,
                Err(e) => tracing::warn!(error = %e, "cannot reconnect the push relay"),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small push rides the payload, its quotes doubled; a large one goes through the table.
    #[test]
    fn small_pushes_ride_the_payload_and_large_ones_the_table() {
        let small = Push {
            project_id: ProjectId(3),
            run: "r".into(),
            text: r#"{"it's":1}"#.into(),
        };
        assert_eq!(
            statement("p1", &small),
            "SELECT pg_notify('rummy_push', 'ep1\n3\nr\n{\"it''s\":1}');"
        );
        let large = Push {
            text: "x".repeat(INLINE_BYTES),
            ..small
        };
        assert!(statement("p1", &large).starts_with(
            "INSERT INTO relayed_pushes (origin, project_id, run, text, created_at) VALUES ('p1', 3, 'r', 'xxx"
        ));
    }
}
