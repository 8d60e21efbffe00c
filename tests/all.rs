//! The one integration binary: the real server on 127.0.0.1:0 with a temp home and the fake provider on loopback.

mod suite;
mod support;
