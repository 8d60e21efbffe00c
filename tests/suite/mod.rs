//! End-to-end behaviour, one module per area.

mod accepts;
mod access;
mod audit;
mod binary;
mod client;
mod clients;
mod commands;
mod crash;
mod docs;
mod entries;
mod healing;
mod history;
mod hostile;
mod isolation;
mod layering;
mod lifecycle;
mod listen;
mod pipeline;
mod project;
mod protocol;
mod providers;
mod restart;
mod runs;
mod search;
mod store;
mod tokens;
