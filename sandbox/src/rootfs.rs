//! The command's private root: a tmpfs holding only the allowed paths, each bound where it is
//! on the host (read-only or read-write), a private size-capped `/tmp`, a `/proc` of the
//! command's own PID namespace, and a minimal `/dev`; the server's own files are covered
//! wherever they lie under an allowed path. Everything else of the host is not there at all:
//! other projects, `/home`, `/run` and its sockets, `/var`, `/sys`.
//!
//! The steps are bubblewrap's: the mounts are made private, a tmpfs becomes the root with the
//! host's root under `/oldroot`, the new tree is built on another tmpfs from there, and a last
//! `pivot_root` makes it the root and drops the host's.

use crate::spec::{within, Spec, SYSTEM_READ};
use rustix::fs::StatVfsMountFlags;
use rustix::mount::{MountFlags, MountPropagationFlags, UnmountFlags};
use std::ffi::CString;
use std::path::{Path, PathBuf};

/// Device files a command may use (bound from the host's `/dev`).
pub(crate) const DEVICES: &[&str] = &["null", "zero", "full", "random", "urandom"];

/// Size of the private `/dev/shm`.
const SHM_BYTES: u64 = 64 * 1024 * 1024;

/// What the private root holds, for the Landlock rules that follow it.
pub(crate) struct Built {
    /// Read-only paths that exist in the new root.
    pub read: Vec<PathBuf>,
    /// Read-write paths that exist in the new root.
    pub write: Vec<PathBuf>,
    /// Whether a private `/proc` is mounted, or why not.
    pub proc: Result<(), String>,
}

/// One mount of the plan, at its path in the new root.
enum Op {
    /// The host's `source` bound at the same path; read-only or not.
    Bind { path: PathBuf, writable: bool },
    /// A symbolic link as the host has it (`/bin -> usr/bin` on merged-`/usr` systems).
    Link { path: PathBuf, target: PathBuf },
    /// The private `/tmp`.
    Tmp { bytes: u64 },
}

impl Op {
    fn path(&self) -> &Path {
        match self {
            Op::Bind { path, .. } | Op::Link { path, .. } => path,
            Op::Tmp { .. } => Path::new("/tmp"),
        }
    }
}

/// Builds the private root and makes it `/`; the working directory is then `spec.cwd`.
pub(crate) fn build(spec: &Spec) -> Result<Built, String> {
    let step = |what: &'static str| move |e: rustix::io::Errno| format!("{what}: {e}");
    rustix::mount::mount_change(
        "/",
        MountPropagationFlags::PRIVATE | MountPropagationFlags::REC,
    )
    .map_err(step("cannot make the mounts private"))?;
    let base = ["/tmp", "/mnt", "/var/tmp", "/dev"]
        .into_iter()
        .map(Path::new)
        .find(|p| p.is_dir())
        .ok_or("no directory to build the private root on")?;
    tmpfs(base, "mode=0755", MountFlags::empty()).map_err(step("cannot mount the base tmpfs"))?;
    mkdir(&base.join("newroot"))?;
    mkdir(&base.join("oldroot"))?;
    rustix::process::pivot_root(base, base.join("oldroot"))
        .map_err(step("cannot pivot to the base"))?;
    std::env::set_current_dir("/").map_err(|e| e.to_string())?;
    let new = Path::new("/newroot");
    let old = Path::new("/oldroot");
    tmpfs(new, "mode=0755", MountFlags::empty()).map_err(step("cannot mount the new root"))?;

    let mut built = Built {
        read: Vec::new(),
        write: Vec::new(),
        proc: Ok(()),
    };
    let mut plan = Vec::new();
    let system = SYSTEM_READ.iter().map(PathBuf::from);
    for (path, writable) in system
        .chain(spec.read.iter().cloned())
        .map(|p| (p, false))
        .chain(spec.write.iter().map(|p| (p.clone(), true)))
    {
        let host = under(old, &path);
        match std::fs::symlink_metadata(&host) {
            Ok(meta) if meta.file_type().is_symlink() => {
                let target = std::fs::read_link(&host).map_err(|e| e.to_string())?;
                plan.push(Op::Link { path, target });
            }
            Ok(_) => {
                if writable {
                    built.write.push(path.clone());
                } else {
                    built.read.push(path.clone());
                }
                plan.push(Op::Bind { path, writable });
            }
            // A path this host does not have is simply not there.
            Err(_) => {}
        }
    }
    plan.push(Op::Tmp {
        bytes: spec.tmp_bytes,
    });
    // Parents before children, so a path inside another is bound on top of it.
    plan.sort_by_key(|op| op.path().components().count());
    for op in &plan {
        apply(op, old, new)?;
    }
    for hidden in &spec.hide {
        let covered = built
            .read
            .iter()
            .chain(&built.write)
            .any(|p| within(hidden, p));
        if covered {
            hide(hidden, old, new)?;
        }
    }
    dev(old, new)?;
    let proc_dir = new.join("proc");
    mkdir(&proc_dir)?;
    built.proc = rustix::mount::mount(
        "proc",
        &proc_dir,
        "proc",
        MountFlags::NOSUID | MountFlags::NODEV | MountFlags::NOEXEC,
        None,
    )
    .map_err(|e| e.to_string());

    rustix::mount::unmount(old, UnmountFlags::DETACH)
        .map_err(step("cannot drop the host's root"))?;
    std::env::set_current_dir(new).map_err(|e| e.to_string())?;
    rustix::process::pivot_root(".", ".").map_err(step("cannot pivot to the new root"))?;
    rustix::mount::unmount(".", UnmountFlags::DETACH).map_err(step("cannot drop the base"))?;
    std::env::set_current_dir(&spec.cwd)
        .map_err(|e| format!("cannot enter {}: {e}", spec.cwd.display()))?;
    Ok(built)
}

/// `path` (absolute) under `root`.
fn under(root: &Path, path: &Path) -> PathBuf {
    root.join(path.strip_prefix("/").unwrap_or(path))
}

/// Makes a directory and its parents.
fn mkdir(path: &Path) -> Result<(), String> {
    std::fs::create_dir_all(path).map_err(|e| format!("cannot make {}: {e}", path.display()))
}

/// Mounts a tmpfs with `options` at `at`.
fn tmpfs(at: &Path, options: &str, extra: MountFlags) -> rustix::io::Result<()> {
    let data = CString::new(options).map_err(|_| rustix::io::Errno::INVAL)?;
    rustix::mount::mount(
        "tmpfs",
        at,
        "tmpfs",
        MountFlags::NOSUID | MountFlags::NODEV | extra,
        Some(data.as_c_str()),
    )
}

/// Carries out one step of the plan.
fn apply(op: &Op, old: &Path, new: &Path) -> Result<(), String> {
    match op {
        Op::Link { path, target } => {
            let at = under(new, path);
            if let Some(parent) = at.parent() {
                mkdir(parent)?;
            }
            std::os::unix::fs::symlink(target, &at)
                .map_err(|e| format!("cannot link {}: {e}", path.display()))
        }
        Op::Tmp { bytes } => {
            let at = under(new, Path::new("/tmp"));
            mkdir(&at)?;
            tmpfs(&at, &format!("mode=1777,size={bytes}"), MountFlags::empty())
                .map_err(|e| format!("cannot mount the private /tmp: {e}"))
        }
        Op::Bind { path, writable } => bind(&under(old, path), &under(new, path), *writable)
            .map_err(|e| format!("cannot bind {}: {e}", path.display())),
    }
}

/// Binds `source` at `target` (made to match: a directory or an empty file), then makes it
/// read-only unless `writable`, keeping the flags the kernel locks on it.
fn bind(source: &Path, target: &Path, writable: bool) -> Result<(), String> {
    let is_dir = source.is_dir();
    if !target.exists() {
        if is_dir {
            mkdir(target)?;
        } else {
            if let Some(parent) = target.parent() {
                mkdir(parent)?;
            }
            std::fs::File::create(target).map_err(|e| e.to_string())?;
        }
    }
    rustix::mount::mount_bind_recursive(source, target).map_err(|e| e.to_string())?;
    if !writable {
        let kept = locked_flags(source);
        rustix::mount::mount_remount(
            target,
            MountFlags::BIND | MountFlags::RDONLY | MountFlags::NOSUID | MountFlags::NODEV | kept,
            "",
        )
        .map_err(|e| format!("cannot make it read-only: {e}"))?;
    }
    Ok(())
}

/// The flags of the mount holding `path` that a remount inside a user namespace must keep.
fn locked_flags(path: &Path) -> MountFlags {
    let Ok(stat) = rustix::fs::statvfs(path) else {
        return MountFlags::empty();
    };
    let mut flags = MountFlags::empty();
    for (from, to) in [
        (StatVfsMountFlags::NOEXEC, MountFlags::NOEXEC),
        (StatVfsMountFlags::NOATIME, MountFlags::NOATIME),
        (StatVfsMountFlags::NODIRATIME, MountFlags::NODIRATIME),
        (StatVfsMountFlags::RELATIME, MountFlags::RELATIME),
    ] {
        if stat.f_flag.contains(from) {
            flags |= to;
        }
    }
    flags
}

/// Covers one of the server's files under an allowed path: a directory with an empty
/// read-only tmpfs, a file with the host's `/dev/null`.
fn hide(path: &Path, old: &Path, new: &Path) -> Result<(), String> {
    let at = under(new, path);
    let host = under(old, path);
    let Ok(meta) = std::fs::metadata(&host) else {
        return Ok(());
    };
    let hidden = if meta.is_dir() {
        tmpfs(
            &at,
            "mode=0000,size=4096",
            MountFlags::RDONLY | MountFlags::NOEXEC,
        )
    } else {
        rustix::mount::mount_bind(old.join("dev/null"), &at).and_then(|()| {
            rustix::mount::mount_remount(
                &at,
                MountFlags::BIND | MountFlags::RDONLY | MountFlags::NOSUID | MountFlags::NOEXEC,
                "",
            )
        })
    };
    hidden.map_err(|e| format!("cannot hide {}: {e}", path.display()))
}

/// A minimal `/dev`: the harmless devices, the standard stream links and a small `/dev/shm`.
fn dev(old: &Path, new: &Path) -> Result<(), String> {
    let dev = new.join("dev");
    mkdir(&dev)?;
    tmpfs(&dev, "mode=0755", MountFlags::NOEXEC).map_err(|e| format!("cannot mount /dev: {e}"))?;
    for name in DEVICES {
        let source = old.join("dev").join(name);
        if !source.exists() {
            continue;
        }
        let target = dev.join(name);
        std::fs::File::create(&target).map_err(|e| e.to_string())?;
        rustix::mount::mount_bind(&source, &target)
            .map_err(|e| format!("cannot bind /dev/{name}: {e}"))?;
    }
    for (link, target) in [
        ("fd", "/proc/self/fd"),
        ("stdin", "/proc/self/fd/0"),
        ("stdout", "/proc/self/fd/1"),
        ("stderr", "/proc/self/fd/2"),
    ] {
        std::os::unix::fs::symlink(target, dev.join(link)).map_err(|e| e.to_string())?;
    }
    let shm = dev.join("shm");
    mkdir(&shm)?;
    std::fs::set_permissions(&shm, std::os::unix::fs::PermissionsExt::from_mode(0o1777))
        .map_err(|e| e.to_string())?;
    tmpfs(
        &shm,
        &format!("mode=1777,size={SHM_BYTES}"),
        MountFlags::NOEXEC,
    )
    .map_err(|e| format!("cannot mount /dev/shm: {e}"))?;
    Ok(())
}
