//! The wall clock, read only here in the actor layer (core takes `now` as a value).

use rummy_core::time::Millis;
use std::time::{SystemTime, UNIX_EPOCH};

/// The current time in milliseconds since the Unix epoch.
pub fn now() -> Millis {
    let ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    Millis(i64::try_from(ms).unwrap_or(i64::MAX))
}
