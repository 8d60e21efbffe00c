//! rummy's text: what the server reads out of a model's reply and how it selects and changes
//! text, as pure functions over strings.
//!
//! - [`parse`]: reading tool commands out of model replies (here: the lowest layer, every
//!   other crate reads replies through it and it needs nothing of theirs);
//! - [`hedberg`]: patterns (glob, regex, sed, xpath, jsonpath) and edit formats (here: the store
//!   filters and the tools edit with the same patterns; the SQL functions that call them live in
//!   `rummy-store`, which owns the database);
//! - [`path`]: entry paths and their schemes (here: both parsers and the store normalise paths
//!   the same way);
//! - [`token_estimate`]: the model-token estimate of a text (here: an edit's result, the
//!   store's counts and the context budget use one estimate);
//! - [`web`]: a web page's HTML as readable text, and a site's `robots.txt` (here: text from
//!   anyone on the web, read by pure functions the fuzzer can drive).
//!
//! Invariant: no database, no I/O, no clock (the layering tests check it).

pub mod hedberg;
pub mod parse;
pub mod path;
pub mod token_estimate;
pub mod web;
