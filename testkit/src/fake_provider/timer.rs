//! The clock behind a reply's simulated latency, precise to tens of microseconds.
//!
//! tokio's timer rounds every deadline up to its next millisecond tick and the worker wakes
//! on the tick after, so a "50 ms" reply went out 51–52 ms after its request arrived — and a
//! benchmark against a 50 ms bound charged that to the server. This timer is one thread that
//! sleeps on a condition variable until the earliest deadline (the kernel's high-resolution
//! timer, not a tick) and wakes that deadline's waiter.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Instant;
use tokio::sync::oneshot;

/// The timer; its thread ends when this is dropped.
pub(crate) struct PreciseTimer {
    inner: Arc<Inner>,
}

#[derive(Default)]
struct Inner {
    queue: Mutex<Queue>,
    changed: Condvar,
}

#[derive(Default)]
struct Queue {
    due: BinaryHeap<Reverse<Due>>,
    /// Orders waiters with the same deadline by arrival.
    next_serial: u64,
    stopped: bool,
}

struct Due {
    at: Instant,
    serial: u64,
    wake: oneshot::Sender<()>,
}

impl PartialEq for Due {
    fn eq(&self, other: &Self) -> bool {
        (self.at, self.serial) == (other.at, other.serial)
    }
}
impl Eq for Due {}
impl PartialOrd for Due {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Due {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.at, self.serial).cmp(&(other.at, other.serial))
    }
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl PreciseTimer {
    /// Starts the timer's thread.
    pub(crate) fn start() -> std::io::Result<PreciseTimer> {
        let inner = Arc::new(Inner::default());
        let thread_side = Arc::clone(&inner);
        std::thread::Builder::new()
            .name("fake-provider-timer".into())
            .spawn(move || run(&thread_side))?;
        Ok(PreciseTimer { inner })
    }

    /// Resolves at `at` (at once when it has passed).
    pub(crate) async fn sleep_until(&self, at: Instant) {
        if at <= Instant::now() {
            return;
        }
        let (wake, woken) = oneshot::channel();
        {
            let mut queue = self.inner.lock();
            let serial = queue.next_serial;
            queue.next_serial += 1;
            queue.due.push(Reverse(Due { at, serial, wake }));
        }
        self.inner.changed.notify_one();
        // An error means the timer stopped with the provider; the reply is moot then.
        let _ = woken.await;
    }
}

impl Drop for PreciseTimer {
    fn drop(&mut self) {
        self.inner.lock().stopped = true;
        self.inner.changed.notify_one();
    }
}

/// The timer thread: wakes every waiter whose deadline has come, then sleeps until the next.
fn run(inner: &Inner) {
    let mut queue = inner.lock();
    loop {
        if queue.stopped {
            return;
        }
        let now = Instant::now();
        while queue.due.peek().is_some_and(|Reverse(due)| due.at <= now) {
            if let Some(Reverse(due)) = queue.due.pop() {
                // The waiter may have gone (its request was dropped); nothing to wake then.
                let _ = due.wake.send(());
            }
        }
        queue = match queue.due.peek().map(|Reverse(due)| due.at - now) {
            Some(wait) => {
                inner
                    .changed
                    .wait_timeout(queue, wait)
                    .unwrap_or_else(PoisonError::into_inner)
                    .0
            }
            None => inner
                .changed
                .wait(queue)
                .unwrap_or_else(PoisonError::into_inner),
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// Waiters wake in deadline order, whatever order they came in, and none before its deadline.
    #[tokio::test]
    async fn wakes_waiters_in_deadline_order_and_never_early() {
        let timer = Arc::new(PreciseTimer::start().unwrap());
        let start = Instant::now();
        let mut waiters = Vec::new();
        for ms in [7u64, 3, 5] {
            let timer = Arc::clone(&timer);
            let at = start + Duration::from_millis(ms);
            waiters.push(tokio::spawn(async move {
                timer.sleep_until(at).await;
                (ms, at, Instant::now())
            }));
        }
        let mut woken = Vec::new();
        for waiter in waiters {
            woken.push(waiter.await.unwrap());
        }
        assert!(woken.iter().all(|(_, at, woke)| woke >= at));
        woken.sort_by_key(|(_, _, woke)| *woke);
        let order: Vec<u64> = woken.iter().map(|(ms, _, _)| *ms).collect();
        assert_eq!(order, [3, 5, 7]);
    }

    /// A deadline already past resolves at once, without the thread.
    #[tokio::test]
    async fn a_past_deadline_resolves_at_once() {
        let timer = PreciseTimer::start().unwrap();
        let past = Instant::now() - Duration::from_millis(5);
        tokio::time::timeout(Duration::from_millis(100), timer.sleep_until(past))
            .await
            .unwrap();
    }
}
