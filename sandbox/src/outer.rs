//! Stage 1 of the helper, in the server's namespaces: ties its life to the server, joins the
//! command's cgroups, unshares the namespaces, maps its ids, and starts stage 2 as PID 1 of
//! the new PID namespace; then waits, says which cgroup limit the command hit, and exits
//! with stage 2's code.

use crate::cgroup;
use crate::report::{LayerName, Report};
use crate::spec::{Network, Spec};
use crate::{exit_byte, HELPER_ARG, NOTE_PREFIX, SETUP_FAILED};
use rustix::process::Signal;
use rustix::thread::{CapabilitySet, CapabilitySets, UnshareFlags};
use std::io::{Read, Write};
use std::os::unix::process::ExitStatusExt;
use std::process::{Command, ExitCode, Stdio};

/// Runs stage 1 for `spec`.
pub(crate) fn run(spec: &Spec) -> ExitCode {
    match confine(spec) {
        Ok(code) => code,
        Err(why) if spec.probe => {
            print_report(&Report::failed(&why));
            ExitCode::SUCCESS
        }
        Err(why) => {
            eprintln!("{NOTE_PREFIX} the command did not run: {why}");
            ExitCode::from(SETUP_FAILED)
        }
    }
}

/// Everything stage 1 does; an error says which step failed (nothing of the command ran).
fn confine(spec: &Spec) -> Result<ExitCode, String> {
    rustix::process::set_parent_process_death_signal(Some(Signal::KILL))
        .map_err(|e| format!("cannot tie the helper to the server: {e}"))?;
    // The server may have died before the death signal was set: the parent is then another.
    let parent = rustix::process::getppid().map(|p| p.as_raw_pid());
    if parent != i32::try_from(spec.parent).ok() {
        return Err("the server is gone".to_owned());
    }
    let me = std::process::id().to_string();
    let mut joined = Vec::new();
    for dir in &spec.cgroups {
        std::fs::write(dir.join("cgroup.procs"), &me)
            .map_err(|e| format!("cannot join cgroup {}: {e}", dir.display()))?;
        joined.push(dir.clone());
    }
    // Root makes the namespaces with its own capabilities (a user namespace could not map uid
    // 0 from inside: that needs CAP_SETFCAP in the parent namespace); anyone else makes a user
    // namespace first. Either way stage 2 gives up every capability before the command starts.
    let root = rustix::process::getuid().is_root();
    let mut flags =
        UnshareFlags::NEWNS | UnshareFlags::NEWPID | UnshareFlags::NEWIPC | UnshareFlags::NEWUTS;
    if spec.network == Network::Off {
        flags |= UnshareFlags::NEWNET;
    }
    if !root {
        flags |= UnshareFlags::NEWUSER;
    }
    unshare(flags).map_err(|e| {
        format!(
            "cannot create the namespaces ({}mount, PID, IPC, UTS{}): {e}{}",
            if root { "" } else { "user, " },
            if spec.network == Network::Off {
                ", network"
            } else {
                ""
            },
            if root {
                ""
            } else {
                "; unprivileged user namespaces may be disabled (a sysctl, AppArmor or seccomp)"
            }
        )
    })?;
    if !root {
        map_ids()?;
        keep_capabilities_across_exec()?;
    }

    let mut child = Command::new("/proc/self/exe")
        .arg(HELPER_ARG)
        .arg("init")
        .env_clear()
        .stdin(Stdio::piped())
        .stdout(if spec.probe {
            Stdio::piped()
        } else {
            Stdio::inherit()
        })
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| format!("cannot start the sandbox's init: {e}"))?;
    let text = serde_json::to_vec(spec).map_err(|e| e.to_string())?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin
            .write_all(&text)
            .map_err(|e| format!("cannot hand the command to the sandbox's init: {e}"))?;
    }
    let mut probed = String::new();
    if let Some(mut out) = child.stdout.take() {
        out.read_to_string(&mut probed)
            .map_err(|e| format!("cannot read the probe: {e}"))?;
    }
    let status = child
        .wait()
        .map_err(|e| format!("lost the sandbox's init: {e}"))?;

    if spec.probe {
        let mut report: Report = serde_json::from_str(&probed)
            .map_err(|e| format!("the sandbox's init failed ({status}) before it reported: {e}"))?;
        if root {
            report.set(
                LayerName::UserNamespace,
                true,
                "not needed: the server runs as root; the command keeps no capability",
            );
        } else {
            report.set(
                LayerName::UserNamespace,
                true,
                "unshared by an unprivileged helper",
            );
        }
        let detail = limits_detail(spec, &joined);
        report.set(LayerName::Limits, detail.0, detail.1);
        print_report(&report);
        return Ok(ExitCode::SUCCESS);
    }
    for note in cgroup::limits_hit(&joined, spec.limits) {
        eprintln!("{NOTE_PREFIX} {note}");
    }
    Ok(ExitCode::from(exit_byte(status.code(), status.signal())))
}

/// `unshare(2)` for namespaces only. rustix deprecates its safe wrapper because `CLONE_FILES`
/// can leave another thread with descriptors it does not own; these flags never include it,
/// and the helper has one thread, so the call is sound.
#[allow(deprecated)]
fn unshare(flags: UnshareFlags) -> std::io::Result<()> {
    debug_assert!(!flags.contains(UnshareFlags::FILES));
    rustix::thread::unshare(flags).map_err(Into::into)
}

/// Maps the helper's own uid and gid to themselves inside the new user namespace (no other id
/// exists there), after giving up `setgroups` as an unprivileged map requires.
fn map_ids() -> Result<(), String> {
    let uid = rustix::process::getuid().as_raw();
    let gid = rustix::process::getgid().as_raw();
    match std::fs::write("/proc/self/setgroups", "deny") {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(format!("cannot deny setgroups: {e}")),
    }
    std::fs::write("/proc/self/uid_map", format!("{uid} {uid} 1"))
        .map_err(|e| format!("cannot map the uid: {e}"))?;
    std::fs::write("/proc/self/gid_map", format!("{gid} {gid} 1"))
        .map_err(|e| format!("cannot map the gid: {e}"))?;
    Ok(())
}

/// Makes the capabilities the new user namespace gave stage 1 ambient, so that stage 2 (an
/// exec, as the same non-root uid) still has them to build its root; stage 2 drops them all
/// before the command starts.
fn keep_capabilities_across_exec() -> Result<(), String> {
    let sets = rustix::thread::capabilities(None)
        .map_err(|e| format!("cannot read the capabilities: {e}"))?;
    rustix::thread::set_capabilities(
        None,
        CapabilitySets {
            inheritable: sets.permitted,
            ..sets
        },
    )
    .map_err(|e| format!("cannot make the capabilities inheritable: {e}"))?;
    for bit in 0..64 {
        let cap = CapabilitySet::from_bits_retain(1 << bit);
        if sets.permitted.contains(cap) {
            rustix::thread::configure_capability_in_ambient_set(cap, true)
                .map_err(|e| format!("cannot keep capability {bit}: {e}"))?;
        }
    }
    Ok(())
}

/// Whether the process limit holds (and how the limits are kept): a pids cgroup always; the
/// rlimit otherwise, which the kernel does not apply to root.
fn limits_detail(spec: &Spec, joined: &[std::path::PathBuf]) -> (bool, String) {
    let memory = spec.limits.memory_bytes;
    let pids = spec.limits.pids;
    if !joined.is_empty() {
        return (
            true,
            format!(
                "cgroup: {pids} processes, {memory} bytes of memory; rlimit on data per process"
            ),
        );
    }
    if rustix::process::getuid().is_root() {
        (
            false,
            format!(
                "rlimits only: {memory} bytes of data per process; no process limit (root is \
                 exempt from RLIMIT_NPROC and no pids cgroup is writable)"
            ),
        )
    } else {
        (
            true,
            format!("rlimits: {pids} processes, {memory} bytes of data per process"),
        )
    }
}

/// Writes a probe's report on stdout.
fn print_report(report: &Report) {
    let text = serde_json::to_string(report).unwrap_or_default();
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{text}");
    let _ = out.flush();
}
