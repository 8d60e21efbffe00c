//! Where the model's web fetches may go: the addresses never reached ([`address`]) and the
//! domains a project lets the model fetch without asking ([`domains`]). Pure: the fetcher
//! (`actors`) resolves names and asks these before it connects, at every redirect.

pub mod address;
pub mod domains;
