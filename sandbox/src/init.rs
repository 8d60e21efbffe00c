//! Stage 2 of the helper: PID 1 of the command's PID namespace. It builds the private root,
//! sets the limits, restricts itself with Landlock, gives up every capability, and runs the
//! command; it reaps what is orphaned and exits with the shell, which kills everything else
//! left in the namespace.

use crate::report::{LayerName, Report};
use crate::spec::{Network, Spec};
use crate::{exit_byte, rootfs, rules, NOTE_PREFIX, SETUP_FAILED};
use rustix::io::Errno;
use rustix::process::{Resource, Rlimit, Signal, WaitOptions};
use rustix::thread::{CapabilitySet, CapabilitySets};
use std::io::Write;
use std::process::{Command, ExitCode, Stdio};

/// Runs stage 2 for `spec`.
pub(crate) fn run(spec: &Spec) -> ExitCode {
    match confine(spec) {
        Ok(report) if spec.probe => {
            let text = serde_json::to_string(&report).unwrap_or_default();
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "{text}");
            let _ = out.flush();
            ExitCode::SUCCESS
        }
        Ok(_) => command(spec),
        Err(why) if spec.probe => {
            let mut report = Report::failed(&why);
            report.set(LayerName::UserNamespace, true, "unshared");
            let text = serde_json::to_string(&report).unwrap_or_default();
            println!("{text}");
            ExitCode::SUCCESS
        }
        Err(why) => {
            eprintln!("{NOTE_PREFIX} the command did not run: {why}");
            ExitCode::from(SETUP_FAILED)
        }
    }
}

/// Everything before the command; the layers as they turned out. Any failure of a required
/// layer is an error: the command never runs less confined than the probe said.
fn confine(spec: &Spec) -> Result<Report, String> {
    rustix::process::set_parent_process_death_signal(Some(Signal::KILL))
        .map_err(|e| format!("cannot tie the sandbox's init to its helper: {e}"))?;
    let mut report = Report::default();
    let pid = rustix::process::getpid().as_raw_pid();
    if pid != 1 {
        return Err(format!("the sandbox's init is process {pid}, not 1"));
    }
    report.set(
        LayerName::PidNamespace,
        true,
        "own PID namespace; its processes die with the command",
    );
    let built = rootfs::build(spec)?;
    report.set(
        LayerName::MountNamespace,
        true,
        "private root with only the allowed paths",
    );
    match &built.proc {
        Ok(()) => report.set(LayerName::Proc, true, "private /proc of its own processes"),
        Err(why) => report.set(
            LayerName::Proc,
            true,
            format!("no /proc at all (a private one could not be mounted: {why})"),
        ),
    }
    match &spec.network {
        Network::Off => report.set(
            LayerName::Network,
            true,
            "own network namespace, no interface but a down loopback",
        ),
        Network::Ports { ports } => report.set(
            LayerName::Network,
            true,
            format!("host network, TCP to ports {ports:?} only"),
        ),
    }
    limit(Resource::Data, spec.limits.memory_bytes)?;
    limit(Resource::Nproc, spec.limits.pids)?;
    limit(Resource::Core, 0)?;
    let landlock = rules::restrict(spec, &built)?;
    report.set(LayerName::Landlock, true, landlock);
    drop_capabilities()?;
    rustix::process::set_dumpable_behavior(rustix::process::DumpableBehavior::NotDumpable)
        .map_err(|e| format!("cannot make the sandbox's init non-dumpable: {e}"))?;
    Ok(report)
}

/// Sets a hard and soft rlimit.
fn limit(resource: Resource, value: u64) -> Result<(), String> {
    let limit = Rlimit {
        current: Some(value),
        maximum: Some(value),
    };
    rustix::process::setrlimit(resource, limit)
        .map_err(|e| format!("cannot set the {resource:?} limit: {e}"))
}

/// Gives up every capability for good: the bounding set (so no exec regains one, even as
/// uid 0), the ambient, permitted, effective and inheritable sets; and no new privileges.
fn drop_capabilities() -> Result<(), String> {
    for bit in 0..64 {
        match rustix::thread::remove_capability_from_bounding_set(CapabilitySet::from_bits_retain(
            1 << bit,
        )) {
            Ok(()) => {}
            // Past the kernel's last capability.
            Err(Errno::INVAL) => break,
            Err(e) => return Err(format!("cannot drop capability {bit}: {e}")),
        }
    }
    match rustix::thread::clear_ambient_capability_set() {
        Ok(()) | Err(Errno::INVAL) => {}
        Err(e) => return Err(format!("cannot clear the ambient capabilities: {e}")),
    }
    rustix::thread::set_capabilities(
        None,
        CapabilitySets {
            effective: CapabilitySet::empty(),
            permitted: CapabilitySet::empty(),
            inheritable: CapabilitySet::empty(),
        },
    )
    .map_err(|e| format!("cannot drop the capabilities: {e}"))?;
    rustix::thread::set_no_new_privs(true).map_err(|e| format!("cannot set no_new_privs: {e}"))
}

/// Runs the shell and reaps until it ends; its exit code (128 + signal when killed).
fn command(spec: &Spec) -> ExitCode {
    let spawned = Command::new("/bin/sh")
        .arg("-c")
        .arg(&spec.command)
        .current_dir(&spec.cwd)
        .env_clear()
        .envs(spec.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(Stdio::inherit())
        .stderr(Stdio::inherit())
        .spawn();
    let child = match spawned {
        Ok(child) => child,
        Err(e) => {
            eprintln!("{NOTE_PREFIX} cannot start /bin/sh: {e}");
            return ExitCode::from(SETUP_FAILED);
        }
    };
    let shell = i32::try_from(child.id()).unwrap_or(0);
    let code = loop {
        match rustix::process::wait(WaitOptions::empty()) {
            Ok(Some((pid, status))) if pid.as_raw_pid() == shell => {
                break exit_byte(status.exit_status(), status.terminating_signal());
            }
            Ok(_) | Err(Errno::INTR) => {}
            Err(e) => {
                eprintln!("{NOTE_PREFIX} lost the command: {e}");
                break SETUP_FAILED;
            }
        }
    };
    if code != 0 && tmp_full() {
        eprintln!(
            "{NOTE_PREFIX} the private /tmp is full ({} MiB): the command could write no more there",
            spec.tmp_bytes / (1024 * 1024)
        );
    }
    ExitCode::from(code)
}

/// Whether the private `/tmp` has no room left.
fn tmp_full() -> bool {
    rustix::fs::statvfs("/tmp").is_ok_and(|s| s.f_bavail == 0)
}
