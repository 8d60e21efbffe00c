//! The confinement of one accepted command the server runs.
//!
//! The server cannot confine a child itself: it has many threads (a user namespace needs a
//! single-threaded caller) and `unsafe` is forbidden here (no `pre_exec`). So it runs its own
//! binary as a helper, `rummy __sandbox run`, giving it a [`Spec`] on stdin, and the helper
//! works in two stages:
//!
//! 1. [`outer`], in the server's namespaces: ties its life to the server's (`PR_SET_PDEATHSIG`),
//!    joins the command's cgroups, unshares user, mount, PID, IPC, UTS and — with network off
//!    — network namespaces, maps its own uid and gid, and starts stage 2. It waits, reports
//!    limits the command hit, and exits with stage 2's code.
//! 2. [`init`], PID 1 of the new PID namespace: builds a private root ([`rootfs`]: the
//!    allowed paths bound where they are, a private size-capped `/tmp`, its own `/proc`, a
//!    minimal `/dev`, the server's files hidden), sets rlimits, restricts itself with
//!    Landlock ([`rules`]: file system, TCP ports, signals and abstract sockets), drops every
//!    capability, becomes non-dumpable, and runs `/bin/sh -c <command>`. It reaps whatever
//!    is orphaned and exits when the shell does: the kernel then kills everything left in the
//!    namespace. Killing stage 1 kills stage 2 (its death signal), and so the namespace.
//!
//! [`Report`] is what a probe (`rummy __sandbox probe`) found: the server probes once at
//! start-up and runs no command itself when a required layer is missing.

pub mod cgroup;
mod init;
mod outer;
pub mod report;
mod rootfs;
mod rules;
pub mod spec;

pub use report::{Layer, LayerName, Report};
pub use spec::{Limits, Network, Spec};

use std::ffi::OsString;
use std::io::Read;
use std::process::ExitCode;

/// The first argument that makes the `rummy` binary a sandbox helper.
pub const HELPER_ARG: &str = "__sandbox";

/// The exit code of a helper that could not confine the command (nothing of it ran).
pub const SETUP_FAILED: u8 = 125;

/// Prefix of every line the sandbox itself writes into a command's stderr.
pub const NOTE_PREFIX: &str = "rummy sandbox:";

/// One process's end as an exit code: its own code, or 128 + the signal that ended it (as a
/// shell reports it); [`SETUP_FAILED`] when neither is known.
fn exit_byte(code: Option<i32>, signal: Option<i32>) -> u8 {
    match (code, signal) {
        (Some(code), _) => u8::try_from(code & 0xff).unwrap_or(SETUP_FAILED),
        (None, Some(signal)) => u8::try_from(128 + (signal & 0x7f)).unwrap_or(SETUP_FAILED),
        (None, None) => SETUP_FAILED,
    }
}

/// Whether this process was started as a sandbox helper (`args` are the process's arguments,
/// the program name first).
pub fn is_helper(args: &[OsString]) -> bool {
    args.get(1).is_some_and(|a| a == HELPER_ARG)
}

/// The helper's `main`: `__sandbox run` (stage 1, also for a probe) or `__sandbox init`
/// (stage 2, started by stage 1). Must run before the process starts any thread.
pub fn helper_main(args: &[OsString]) -> ExitCode {
    let stage = args.get(2).and_then(|a| a.to_str()).unwrap_or_default();
    let spec = match read_spec() {
        Ok(spec) => spec,
        Err(e) => {
            eprintln!("{NOTE_PREFIX} cannot read the command's description: {e}");
            return ExitCode::from(SETUP_FAILED);
        }
    };
    match stage {
        "run" => outer::run(&spec),
        "init" => init::run(&spec),
        other => {
            eprintln!("{NOTE_PREFIX} unknown stage {other:?}");
            ExitCode::from(SETUP_FAILED)
        }
    }
}

/// Reads the spec from stdin (all of it: the server closes the pipe after writing).
fn read_spec() -> Result<Spec, String> {
    let mut text = String::new();
    std::io::stdin()
        .read_to_string(&mut text)
        .map_err(|e| e.to_string())?;
    serde_json::from_str(&text).map_err(|e| e.to_string())
}
