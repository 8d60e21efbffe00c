//! End-to-end behaviour, one module per area.

mod binary;
mod layering;
mod lifecycle;
mod protocol;
mod runs;
