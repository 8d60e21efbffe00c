//! The locks that keep two resolutions of one proposal, or of one file, in order: per run, and per project root and file.
//!
//! Shared through `Services`; `proposals::resolve` takes a run's lock, then its files' locks
//! sorted, for the whole of a resolution.

use rummy_store::ids::RunId;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use tokio::sync::OwnedMutexGuard;

/// What a lock serialises. Locks are taken in this order (a run's, then its files sorted), so
/// two resolutions never wait on each other in a circle.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum LockKey {
    /// One run's resolutions.
    Run(RunId),
    /// One file (normalised path) under one project root.
    File(PathBuf, String),
}

/// The server's resolution locks: per run, and per project root and file.
#[derive(Debug, Clone, Default)]
pub struct ResolutionLocks(Arc<Mutex<HashMap<LockKey, Arc<tokio::sync::Mutex<()>>>>>);

impl ResolutionLocks {
    /// Waits for the lock of `key` and holds it until the answer is dropped.
    pub(crate) async fn lock(&self, key: LockKey) -> Held {
        let mutex = Arc::clone(
            self.0
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .entry(key.clone())
                .or_default(),
        );
        let guard = mutex.lock_owned().await;
        Held {
            locks: self.clone(),
            key,
            guard: Some(guard),
        }
    }

    /// How many keys are locked or waited on (the map forgets a key nobody holds).
    #[cfg(test)]
    fn len(&self) -> usize {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).len()
    }
}

/// A held lock.
pub(crate) struct Held {
    locks: ResolutionLocks,
    key: LockKey,
    guard: Option<OwnedMutexGuard<()>>,
}

impl Drop for Held {
    fn drop(&mut self) {
        let mut map = self.locks.0.lock().unwrap_or_else(PoisonError::into_inner);
        self.guard.take();
        // Every holder and waiter has a clone, taken under the map's lock: when only the map's
        // is left, nobody needs the key any more.
        if map
            .get(&self.key)
            .is_some_and(|mutex| Arc::strong_count(mutex) == 1)
        {
            map.remove(&self.key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// A second holder of one key waits for the first; other keys do not; a key nobody holds
    /// is forgotten.
    #[actix_rt::test]
    async fn one_holder_per_key() {
        let locks = ResolutionLocks::default();
        let file = || LockKey::File(PathBuf::from("/p"), "a.txt".to_owned());
        let first = locks.lock(file()).await;
        let other = locks.lock(LockKey::Run(RunId(1))).await;
        let waiting = locks.clone();
        let second = actix_rt::spawn(async move {
            let _held = waiting.lock(file()).await;
        });
        actix_rt::time::sleep(Duration::from_millis(50)).await;
        assert!(!second.is_finished(), "the second holder waits");
        drop(first);
        second.await.unwrap();
        assert_eq!(locks.len(), 1, "only the run's key is still held");
        drop(other);
        assert_eq!(locks.len(), 0);
    }
}
