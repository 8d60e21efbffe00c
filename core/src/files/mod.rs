//! The project's files as entries: scanning the root on disk, syncing the project-scoped entries, and giving runs their views.
//!
//! Files are project-scoped bare-path entries (every run of the project sees
//! the same content through its own view). A scan honours `.gitignore`
//! (also outside a git checkout), skips hidden files (so `.env` secrets are
//! never read), binaries, files over the size cap, and symlinks (never
//! followed, so nothing outside the root is read). What is written or
//! removed for an accepted proposal goes through [`root::Root`], which
//! follows no symlink at any component and touches only regular files.

pub mod root;
pub mod scan;
pub mod sync;

pub use scan::{scan, scan_since, Scan, ScanLimits, ScannedFile, Stamps};
