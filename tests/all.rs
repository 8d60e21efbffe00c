//! The one integration binary: the real server on 127.0.0.1:0 with a temp home and the fake provider on loopback.

// A test harness should fail loudly at the first surprise.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod suite;
mod support;
