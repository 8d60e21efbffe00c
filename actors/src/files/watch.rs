//! Whether anything a project scan takes may have changed since that scan: inotify watches on
//! every directory the scan walked.
//!
//! The kernel queues an event while the write, create, delete or rename that causes it runs,
//! so once such a call has returned, reading the queue sees it: a project whose queue is empty
//! is unchanged since its watches were set, and a loop start need not walk it again. Changes
//! inotify cannot see — writes through a shared memory map, or made by another machine to a
//! network filesystem — are why watching can be turned off (`RUMMY_WATCH_FILES=0`); and an
//! edit proposed from a stale read is still refused at accept, which compares the disk.

use std::collections::HashSet;
use std::path::PathBuf;

#[cfg(target_os = "linux")]
use rustix::{
    fd::OwnedFd,
    fs::inotify::{self, CreateFlags, ReadFlags, WatchFlags},
    io::Errno,
};

/// The inotify queue of one project root and the directories it watches.
#[derive(Debug)]
pub struct Watch {
    #[cfg(target_os = "linux")]
    fd: OwnedFd,
    /// The watch descriptors in force.
    watched: HashSet<i32>,
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
        Ok(Watch {
            fd,
            watched: HashSet::new(),
        })
    }

    /// Watching needs inotify; elsewhere every loop start scans.
    #[cfg(not(target_os = "linux"))]
    pub fn new() -> std::io::Result<Watch> {
        Err(std::io::ErrorKind::Unsupported.into())
    }

    /// Empties the queue; whether it held anything (an unreadable queue counts as a change).
    #[cfg(target_os = "linux")]
    pub fn changed(&mut self) -> bool {
        // Room for the largest event (a header and a file name of up to 255 bytes) many times.
        let mut buf = [std::mem::MaybeUninit::<u8>::uninit(); 4096];
        let mut events = inotify::Reader::new(&self.fd, &mut buf);
        let mut changed = false;
        loop {
            match events.next() {
                Ok(event) => {
                    changed = true;
                    // The directory went (or its filesystem): its watch is gone with it.
                    if event.events().contains(ReadFlags::IGNORED) {
                        self.watched.remove(&event.wd());
                    }
                }
                Err(Errno::WOULDBLOCK) => return changed,
                Err(Errno::INTR) => {}
                Err(_) => return true,
            }
        }
    }

    #[cfg(not(target_os = "linux"))]
    pub fn changed(&mut self) -> bool {
        true
    }

    /// Watches every directory in `dirs`. Whether any of them was not watched before: changes
    /// made there between the scan and now were not seen, so the next loop start scans again.
    #[cfg(target_os = "linux")]
    pub fn cover(&mut self, dirs: &[PathBuf]) -> std::io::Result<bool> {
        let mut added = false;
        for dir in dirs {
            match inotify::add_watch(&self.fd, dir.as_path(), CHANGES) {
                Ok(wd) => added |= self.watched.insert(wd),
                // Gone since the scan walked it: its parent's watch saw it go.
                Err(Errno::NOENT | Errno::NOTDIR) => added = true,
                // Out of watches (or another lasting failure): this root cannot be watched.
                Err(e) => return Err(e.into()),
            }
        }
        Ok(added)
    }

    #[cfg(not(target_os = "linux"))]
    pub fn cover(&mut self, _dirs: &[PathBuf]) -> std::io::Result<bool> {
        Err(std::io::ErrorKind::Unsupported.into())
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    fn watching(dirs: &[PathBuf]) -> std::io::Result<Watch> {
        let mut watch = Watch::new()?;
        assert!(watch.cover(dirs)?, "new directories are reported");
        assert!(!watch.changed());
        Ok(watch)
    }

    #[test]
    fn reading_and_listing_are_not_changes() {
        let dir = tempfile::TempDir::new().unwrap();
        std::fs::write(dir.path().join("a.txt"), "a").unwrap();
        let mut watch = watching(&[dir.path().to_path_buf()]).unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.path().join("a.txt")).unwrap(),
            "a"
        );
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
        let _ = std::fs::metadata(dir.path().join("a.txt")).unwrap();
        assert!(!watch.changed());
    }

    #[test]
    fn writes_creations_removals_and_renames_are_changes() {
        let dir = tempfile::TempDir::new().unwrap();
        let sub = dir.path().join("src");
        std::fs::create_dir(&sub).unwrap();
        std::fs::write(sub.join("a.txt"), "a").unwrap();
        let mut watch = watching(&[dir.path().to_path_buf(), sub.clone()]).unwrap();
        let steps: [&dyn Fn(); 5] = [
            &|| std::fs::write(sub.join("a.txt"), "changed").unwrap(),
            &|| std::fs::write(sub.join("b.txt"), "new").unwrap(),
            &|| std::fs::rename(sub.join("b.txt"), sub.join("c.txt")).unwrap(),
            &|| std::fs::remove_file(sub.join("c.txt")).unwrap(),
            &|| std::fs::create_dir(dir.path().join("docs")).unwrap(),
        ];
        for (i, step) in steps.iter().enumerate() {
            step();
            assert!(watch.changed(), "step {i} was seen");
            assert!(!watch.changed(), "step {i} was seen once");
        }
    }

    #[test]
    fn a_watched_directory_that_goes_is_watched_anew_when_it_returns() {
        let dir = tempfile::TempDir::new().unwrap();
        let sub = dir.path().join("src");
        std::fs::create_dir(&sub).unwrap();
        let dirs = [dir.path().to_path_buf(), sub.clone()];
        let mut watch = watching(&dirs).unwrap();
        std::fs::remove_dir(&sub).unwrap();
        assert!(watch.changed());
        std::fs::create_dir(&sub).unwrap();
        assert!(watch.changed());
        assert!(
            watch.cover(&dirs).unwrap(),
            "the new directory is a new watch"
        );
        assert!(!watch.cover(&dirs).unwrap(), "watching again adds nothing");
        std::fs::write(sub.join("a.txt"), "a").unwrap();
        assert!(watch.changed());
    }

    #[test]
    fn a_directory_gone_before_it_is_watched_counts_as_unseen() {
        let dir = tempfile::TempDir::new().unwrap();
        let mut watch = Watch::new().unwrap();
        assert!(watch.cover(&[dir.path().join("gone")]).unwrap());
    }
}
