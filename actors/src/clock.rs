//! The wall clock, read only here in the actor layer (core takes `now` as a value).

use rummy_provider::time::Millis;
use rummy_store::entries::WriteCtx;
use std::time::SystemTime;

/// The current time in milliseconds since the Unix epoch.
pub fn now() -> Millis {
    Millis::from_system_time(SystemTime::now())
}

/// The context of a write made now: the configuration's token `divisor` and the current time.
pub fn write_ctx(divisor: u32) -> WriteCtx {
    WriteCtx {
        divisor,
        now: now(),
    }
}
