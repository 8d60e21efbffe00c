//! `Seats`: the count of open WebSocket sessions, bounded by `RUMMY_MAX_CONNECTIONS`, so a
//! client opening connections without end is refused (HTTP 503) rather than served until the
//! server runs out of memory or file descriptors.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// The server's session places; clones share them.
#[derive(Debug, Clone)]
pub struct Seats {
    taken: Arc<AtomicUsize>,
    max: usize,
}

/// One taken place, given back when dropped (the session ends).
#[derive(Debug)]
pub struct Seat(Arc<AtomicUsize>);

impl Seats {
    /// `max` places.
    pub fn new(max: usize) -> Seats {
        Seats {
            taken: Arc::default(),
            max,
        }
    }

    /// The most sessions open at once.
    pub fn max(&self) -> usize {
        self.max
    }

    /// How many places are taken now.
    pub fn taken(&self) -> usize {
        self.taken.load(Ordering::Acquire)
    }

    /// Takes a place, or `None` when all are taken.
    pub fn take(&self) -> Option<Seat> {
        self.taken
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < self.max).then_some(n + 1)
            })
            .ok()
            .map(|_| Seat(Arc::clone(&self.taken)))
    }
}

impl Drop for Seat {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Places run out at the maximum and come back when a seat is dropped.
    #[test]
    fn places_are_bounded_and_returned() {
        let seats = Seats::new(2);
        let a = seats.take().unwrap();
        let _b = seats.take().unwrap();
        assert!(seats.take().is_none());
        drop(a);
        assert!(seats.take().is_some());
    }
}
