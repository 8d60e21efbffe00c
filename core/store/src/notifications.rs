//! Pushed notifications, numbered per run so a reconnecting client can replay what it missed.

use super::cached::{cached, Bind, StaticSql};
use super::StoreError;
use crate::db::Db;
use crate::ids::RunId;
use crate::schema::notifications;
use diesel::prelude::*;
use rummy_provider::time::Millis;
use serde::Serialize;

/// A stored notification.
#[derive(Debug, Clone, PartialEq, Queryable, Selectable)]
#[diesel(table_name = notifications, check_for_backend(diesel::sqlite::Sqlite, diesel::pg::Pg))]
pub struct StoredNotification {
    /// The run it belongs to.
    pub run_id: RunId,
    /// Its per-run sequence number.
    pub seq: i32,
    /// The JSON-RPC method (`run/state`).
    pub method: String,
    /// The params, as JSON text.
    pub params: String,
    /// When it was pushed.
    pub created_at: i64,
}

/// A recorded notification's params: the JSON text stored for replay, which is also what is
/// sent to clients — serialised once — and its number in the run's sequence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recorded(String, i32);

impl Recorded {
    /// The params as JSON text.
    pub fn json(&self) -> &str {
        &self.0
    }

    /// Its per-run sequence number.
    pub fn seq(&self) -> i32 {
        self.1
    }

    /// The params parsed back into a value (tests inspect them so).
    #[cfg(any(test, feature = "testing"))]
    pub fn value(&self) -> serde_json::Value {
        serde_json::from_str(&self.0).unwrap_or(serde_json::Value::Null)
    }
}

struct Insert;
impl StaticSql for Insert {
    const SQL: &'static str =
        "INSERT INTO notifications (run_id, seq, method, params, created_at) \
                               VALUES (?, ?, ?, ?, ?)";
}

/// Stores the run's notification numbered `seq` (taken from the run's counter by the caller:
/// `runs::take_push`), with `seq` set in its params, and returns the params.
///
/// `params` must serialise as a JSON object.
pub fn record<P: Serialize>(
    conn: &mut Db,
    run_id: RunId,
    seq: i32,
    method: &str,
    params: &P,
    now: Millis,
) -> Result<Recorded, StoreError> {
    /// The params with their sequence number beside their own fields.
    #[derive(Serialize)]
    struct Numbered<'a, P> {
        #[serde(flatten)]
        params: &'a P,
        seq: i32,
    }
    let text = serde_json::to_string(&Numbered { params, seq })?;
    cached::<Insert>(&[
        Bind::Int(run_id.0),
        Bind::Int(seq),
        Bind::Text(method),
        Bind::Text(&text),
        Bind::Big(now.0),
    ])
    .execute(conn)?;
    Ok(Recorded(text, seq))
}

/// The run's notifications after `seq`, oldest first, at most `limit`.
pub fn since(
    conn: &mut Db,
    run_id: RunId,
    seq: i32,
    limit: i64,
) -> Result<Vec<StoredNotification>, StoreError> {
    Ok(notifications::table
        .filter(notifications::run_id.eq(run_id))
        .filter(notifications::seq.gt(seq))
        .order(notifications::seq.asc())
        .limit(limit)
        .select(StoredNotification::as_select())
        .load(conn)?)
}
