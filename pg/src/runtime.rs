//! The runtime that drives every PostgreSQL socket, and how a synchronous caller waits on it.

use std::future::Future;
use std::pin::pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll, Wake, Waker};
use std::thread::{self, Thread};
use tokio::runtime::{Builder, Runtime};

/// The one runtime of PostgreSQL I/O, or why it could not be built.
static RUNTIME: OnceLock<Result<Runtime, String>> = OnceLock::new();

/// The runtime every connection's driver task runs on: one worker thread (a connection's work
/// is waiting on its socket), timers on (`connect_timeout` needs them).
pub(crate) fn runtime() -> Result<&'static Runtime, String> {
    RUNTIME
        .get_or_init(|| {
            Builder::new_multi_thread()
                .worker_threads(1)
                .thread_name("rummy-pg")
                .enable_all()
                .build()
                .map_err(|e| format!("cannot start the PostgreSQL I/O thread: {e}"))
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// Wakes the thread that waits in [`block_on`].
struct Unpark(Thread);

impl Wake for Unpark {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.0.unpark();
    }
}

/// Runs `future` to completion on the calling thread, parking it between polls; sockets and
/// timers the future touches belong to the crate's I/O runtime, whose worker wakes this
/// thread. Unlike a runtime's own `block_on` this works inside another runtime's thread (an
/// actix arbiter), where blocking is the caller's choice, as with any synchronous database
/// call.
///
/// The future runs outside tokio's cooperative budget. Inside another runtime's task that
/// budget is the task's, spent by every query the task made so far; once it is spent, a tokio
/// primitive (diesel-async's locks) answers `Pending` and leaves its wake to that runtime's
/// scheduler, for when the task yields — which a thread parked here never does: it would wait
/// forever.
///
/// # Errors
/// When the I/O runtime cannot be started; the future is then not run.
pub fn block_on<F: Future>(future: F) -> Result<F::Output, String> {
    let _context = runtime()?.enter();
    let waker = Waker::from(Arc::new(Unpark(thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut future = pin!(tokio::task::unconstrained(future));
    loop {
        if let Poll::Ready(output) = future.as_mut().poll(&mut cx) {
            return Ok(output);
        }
        // A wake before this park makes it return at once; a spurious return polls again.
        thread::park();
    }
}

/// Lets diesel-async's synchronous wrapper wait through [`block_on`].
#[derive(Debug, Clone, Copy)]
pub struct Parked;

impl diesel_async::async_connection_wrapper::BlockOn for Parked {
    fn block_on<F: Future>(&self, f: F) -> F::Output {
        match block_on(f) {
            Ok(output) => output,
            // Every connection is made through [`block_on`] first, so the runtime exists
            // before a wrapper can be asked to wait on it.
            Err(e) => unreachable!("{e}"),
        }
    }

    fn get_runtime() -> Self {
        Parked
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// Inside another runtime's task, more waits on tokio primitives than a task's budget
    /// allows still complete: the budget's deferred wake would never come to a parked thread.
    #[test]
    fn a_task_that_spent_its_budget_still_gets_its_answers() {
        let (done, finished) = std::sync::mpsc::channel();
        thread::spawn(move || {
            let outer = Builder::new_current_thread().enable_all().build().unwrap();
            let counted = outer.block_on(async {
                let lock = tokio::sync::Mutex::new(0);
                for _ in 0..1_000 {
                    block_on(async { *lock.lock().await += 1 }).unwrap();
                }
                lock.into_inner()
            });
            let _ = done.send(counted);
        });
        assert_eq!(finished.recv_timeout(Duration::from_secs(30)), Ok(1_000));
    }
}
