//! The one integration binary: the real server on 127.0.0.1:0 with a temp home and the fake provider on loopback.

#![expect(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test harness should fail loudly at the first surprise"
)]

mod suite;
mod support;
