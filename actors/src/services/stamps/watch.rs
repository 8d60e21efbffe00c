//! Whether anything a project scan takes may have changed since that scan: inotify watches on
//! every directory the scan walked.
//!
//! The kernel queues an event while the write, create, delete or rename that causes it runs,
//! so once such a call has returned, reading the queue sees it: a project none of whose
//! directories has an event queued is unchanged since its watches were set, and a loop start
//! need not walk it again. Changes
//! inotify cannot see — writes through a shared memory map, or made by another machine to a
//! network filesystem — are why watching can be turned off (`RUMMY_WATCH_FILES=0`); and an
//! edit proposed from a stale read is still refused at accept, which compares the disk.

use std::path::Path;

#[cfg(target_os = "linux")]
use rustix::{
    fd::OwnedFd,
    fs::inotify::{self, CreateFlags, ReadFlags, WatchFlags},
    io::Errno,
};

/// The server's one inotify queue: the kernel limits queues per user (often to 128, shared
/// with every editor that user runs), not the directories one queue watches.
#[derive(Debug)]
pub struct Watch {
    #[cfg(target_os = "linux")]
    fd: OwnedFd,
}

/// What a read of the queue found.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Drained {
    /// The watch descriptors of the directories that changed.
    pub changed: Vec<i32>,
    /// Watches that ended (their directory went): their descriptors may be reused.
    pub ended: Vec<i32>,
    /// Events were lost (the queue overflowed or could not be read): anything may have changed.
    pub lost: bool,
}

/// What changes a directory's watch reports: anything that alters a file's content, metadata
/// or name, or the directory itself (reads and opens are left out — the scan makes them).
#[cfg(target_os = "linux")]
const CHANGES: WatchFlags = WatchFlags::MODIFY
    .union(WatchFlags::ATTRIB)
    .union(WatchFlags::CLOSE_WRITE)
    .union(WatchFlags::CREATE)
    .union(WatchFlags::DELETE)
    .union(WatchFlags::DELETE_SELF)
    .union(WatchFlags::MOVE_SELF)
    .union(WatchFlags::MOVED_FROM)
    .union(WatchFlags::MOVED_TO)
    .union(WatchFlags::ONLYDIR);

impl Watch {
    /// A queue watching nothing yet.
    #[cfg(target_os = "linux")]
    pub fn new() -> std::io::Result<Watch> {
        let fd = inotify::init(CreateFlags::NONBLOCK | CreateFlags::CLOEXEC)?;
        Ok(Watch { fd })
    }

    /// Watching needs inotify; elsewhere every loop start scans.
    #[cfg(not(target_os = "linux"))]
    pub fn new() -> std::io::Result<Watch> {
        Err(std::io::ErrorKind::Unsupported.into())
    }

    /// Empties the queue.
    #[cfg(target_os = "linux")]
    pub fn drain(&self) -> Drained {
        // Room for the largest event (a header and a file name of up to 255 bytes) many times.
        let mut buf = [std::mem::MaybeUninit::<u8>::uninit(); 4096];
        let mut events = inotify::Reader::new(&self.fd, &mut buf);
        let mut drained = Drained::default();
        loop {
            match events.next() {
                Ok(event) => {
                    let flags = event.events();
                    if flags.contains(ReadFlags::QUEUE_OVERFLOW) {
                        drained.lost = true;
                    } else if flags.contains(ReadFlags::IGNORED) {
                        drained.ended.push(event.wd());
                    } else {
                        drained.changed.push(event.wd());
                    }
                }
                Err(Errno::WOULDBLOCK) => return drained,
                Err(Errno::INTR) => {}
                Err(_) => {
                    drained.lost = true;
                    return drained;
                }
            }
        }
    }

    #[cfg(not(target_os = "linux"))]
    pub fn drain(&self) -> Drained {
        Drained {
            lost: true,
            ..Drained::default()
        }
    }

    /// Watches `dir`: its watch descriptor (the same for a directory already watched), or
    /// `None` when it is gone (its parent's watch saw it go). An error means this directory
    /// cannot be watched (out of watches, or no permission).
    #[cfg(target_os = "linux")]
    pub fn add(&self, dir: &Path) -> std::io::Result<Option<i32>> {
        match inotify::add_watch(&self.fd, dir, CHANGES) {
            Ok(wd) => Ok(Some(wd)),
            Err(Errno::NOENT | Errno::NOTDIR) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    #[cfg(not(target_os = "linux"))]
    pub fn add(&self, _dir: &Path) -> std::io::Result<Option<i32>> {
        Err(std::io::ErrorKind::Unsupported.into())
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn changed(wds: &[i32]) -> Drained {
        Drained {
            changed: wds.to_vec(),
            ..Drained::default()
        }
    }

    #[test]
    fn reading_and_listing_are_not_changes() {
        let dir = tempfile::TempDir::new().unwrap();
        std::fs::write(dir.path().join("a.txt"), "a").unwrap();
        let watch = Watch::new().unwrap();
        watch.add(dir.path()).unwrap().unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.path().join("a.txt")).unwrap(),
            "a"
        );
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
        let _ = std::fs::metadata(dir.path().join("a.txt")).unwrap();
        assert_eq!(watch.drain(), Drained::default());
    }

    #[test]
    fn writes_creations_removals_and_renames_are_changes_of_their_directory() {
        let dir = tempfile::TempDir::new().unwrap();
        let sub = dir.path().join("src");
        std::fs::create_dir(&sub).unwrap();
        std::fs::write(sub.join("a.txt"), "a").unwrap();
        let watch = Watch::new().unwrap();
        let root = watch.add(dir.path()).unwrap().unwrap();
        let src = watch.add(&sub).unwrap().unwrap();
        assert_eq!(
            watch.add(&sub).unwrap(),
            Some(src),
            "a directory has one watch"
        );
        let steps: [(&dyn Fn(), i32); 5] = [
            (&|| std::fs::write(sub.join("b.txt"), "new").unwrap(), src),
            (
                &|| std::fs::rename(sub.join("b.txt"), sub.join("c.txt")).unwrap(),
                src,
            ),
            (&|| std::fs::remove_file(sub.join("c.txt")).unwrap(), src),
            (
                &|| std::fs::create_dir(dir.path().join("docs")).unwrap(),
                root,
            ),
            (
                &|| std::fs::write(dir.path().join("x.txt"), "x").unwrap(),
                root,
            ),
        ];
        for (i, (step, wd)) in steps.iter().enumerate() {
            step();
            let drained = watch.drain();
            assert!(!drained.changed.is_empty(), "step {i} was seen");
            assert!(
                drained.changed.iter().all(|w| w == wd),
                "step {i}: {drained:?}"
            );
            assert_eq!(watch.drain(), Drained::default(), "step {i} was seen once");
        }
        std::fs::write(sub.join("a.txt"), "changed").unwrap();
        let drained = watch.drain();
        assert!(
            drained.changed.contains(&src) && !drained.lost,
            "{drained:?}"
        );
    }

    #[test]
    fn a_directory_that_goes_ends_its_watch() {
        let dir = tempfile::TempDir::new().unwrap();
        let sub = dir.path().join("src");
        std::fs::create_dir(&sub).unwrap();
        let watch = Watch::new().unwrap();
        let root = watch.add(dir.path()).unwrap().unwrap();
        let src = watch.add(&sub).unwrap().unwrap();
        std::fs::remove_dir(&sub).unwrap();
        let drained = watch.drain();
        assert!(
            drained.changed.contains(&root) && drained.ended == vec![src],
            "{drained:?}"
        );
        std::fs::create_dir(&sub).unwrap();
        assert_eq!(watch.drain(), changed(&[root]));
    }

    #[test]
    fn a_directory_gone_before_it_is_watched_has_no_watch() {
        let dir = tempfile::TempDir::new().unwrap();
        let watch = Watch::new().unwrap();
        assert_eq!(watch.add(&dir.path().join("gone")).unwrap(), None);
    }
}
