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
/// # Errors
/// When the I/O runtime cannot be started; the future is then not run.
pub fn block_on<F: Future>(future: F) -> Result<F::Output, String> {
    let _context = runtime()?.enter();
    let waker = Waker::from(Arc::new(Unpark(thread::current())));
    let mut cx = Context::from_waker(&waker);
    // Outside tokio's cooperative budget: called from a task of another runtime (an actix
    // arbiter), the budget is that task's, which no scheduler refills while this thread
    // blocks — once spent, every channel would answer "not yet" forever.
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
