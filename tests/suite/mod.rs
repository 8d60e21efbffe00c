//! End-to-end behaviour, one module per area.

mod binary;
mod layering;
mod protocol;
mod runs;
