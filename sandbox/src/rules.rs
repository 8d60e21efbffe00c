//! The Landlock ruleset of a command, made in its private root: read and execute its read
//! paths, `/dev` and `/proc`; write its write paths, `/tmp` and `/dev/shm`; read and write the
//! harmless devices; TCP only to the allowed ports (none with network off); no signal to, and
//! no abstract socket of, a process outside the sandbox. Everything else is denied, a second
//! wall behind the mount namespace.

use crate::rootfs::{Built, DEVICES};
use crate::spec::{Network, Spec};
use landlock::{
    Access, AccessFs, AccessNet, LandlockStatus, NetPort, PathBeneath, PathFd, Ruleset,
    RulesetAttr, RulesetCreatedAttr, RulesetStatus, Scope, ABI,
};
use std::path::{Path, PathBuf};

/// The ABI whose rights are asked for; a kernel with less enforces what it has (reported).
const ABI_WANTED: ABI = ABI::V6;

/// Restricts this process (and so the command) for good; what is enforced, in words.
pub(crate) fn restrict(spec: &Spec, built: &Built) -> Result<String, String> {
    let fail = |e: landlock::RulesetError| format!("Landlock: {e}");
    let read = AccessFs::from_read(ABI_WANTED);
    let all = AccessFs::from_all(ABI_WANTED);
    let device = AccessFs::ReadFile | AccessFs::WriteFile | AccessFs::Truncate;
    let mut rules: Vec<(PathBuf, _)> = Vec::new();
    rules.extend(built.read.iter().map(|p| (p.clone(), read)));
    rules.push(("/dev".into(), AccessFs::ReadFile | AccessFs::ReadDir));
    if built.proc.is_ok() {
        rules.push(("/proc".into(), AccessFs::ReadFile | AccessFs::ReadDir));
    }
    rules.extend(DEVICES.iter().map(|d| (Path::new("/dev").join(d), device)));
    rules.extend(built.write.iter().map(|p| (p.clone(), all)));
    rules.push(("/tmp".into(), all));
    rules.push(("/dev/shm".into(), all));

    let mut ruleset = Ruleset::default()
        .handle_access(all)
        .map_err(fail)?
        .handle_access(AccessNet::BindTcp | AccessNet::ConnectTcp)
        .map_err(fail)?
        .scope(Scope::AbstractUnixSocket | Scope::Signal)
        .map_err(fail)?
        .create()
        .map_err(fail)?;
    for (path, access) in rules {
        // A path that is not there (a device the host lacks) has nothing to allow.
        let Ok(fd) = PathFd::new(&path) else {
            continue;
        };
        // Directory rights on a file are refused: a file gets the file rights of its access.
        let access = if path.is_dir() {
            access
        } else {
            access & AccessFs::from_file(ABI_WANTED)
        };
        ruleset = ruleset
            .add_rule(PathBeneath::new(fd, access))
            .map_err(fail)?;
    }
    if let Network::Ports { ports } = &spec.network {
        for &port in ports {
            ruleset = ruleset
                .add_rule(NetPort::new(port, AccessNet::ConnectTcp))
                .map_err(fail)?;
        }
    }
    let status = ruleset.restrict_self().map_err(fail)?;
    let abi = match status.landlock {
        LandlockStatus::Available {
            effective_abi,
            kernel_abi,
        } => kernel_abi.unwrap_or(effective_abi as i32),
        LandlockStatus::NotEnabled | LandlockStatus::NotImplemented => 0,
    };
    if matches!(spec.network, Network::Ports { .. }) && abi < 4 {
        return Err(format!(
            "network for commands needs Landlock ABI 4 (TCP rules) to keep the host's \
             loopback out of reach; this kernel has ABI {abi}"
        ));
    }
    match status.ruleset {
        RulesetStatus::FullyEnforced => Ok(format!("Landlock ABI {abi}, fully enforced")),
        RulesetStatus::PartiallyEnforced => Ok(format!(
            "Landlock ABI {abi}, partly enforced (this kernel lacks some of ABI {}'s rights)",
            ABI_WANTED as i32
        )),
        RulesetStatus::NotEnforced => Err(format!(
            "Landlock is not enforced here ({:?})",
            status.landlock
        )),
    }
}
