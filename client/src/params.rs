//! What each method is sent: the protocol's own params types (`rummy_protocol::params`), the
//! very ones the server reads — camelCase on the wire, an absent option left out rather than
//! sent as `null`.

pub use rummy_protocol::params::*;
