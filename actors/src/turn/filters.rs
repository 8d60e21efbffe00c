//! The turn step that judges a model command's body filter before the command is dispatched:
//! the candidates read on a read connection, the filter (XPath, JSONPath, regex over bodies up
//! to the filter limits) run on the blocking pool — never on the store's writer, which
//! serialises every project's writes, nor on an arbiter thread serving other runs.
//!
//! At most [`concurrent`] filters run at once across the server: a run that filters huge bodies
//! waits for a permit instead of taking every blocking thread. The write that dispatches the
//! command checks that the candidates did not change since (`selection::Judged::fits`).

use crate::services::Services;
use rummy_core::ids::RunId;
use rummy_core::store::selection::{self, FilterCall, Judged};
use rummy_core::store::StoreError;
use std::sync::OnceLock;
use tokio::sync::Semaphore;

/// How many body filters may run at once: the machine's cores, at least two.
fn concurrent() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get().max(2))
}

fn permits() -> &'static Semaphore {
    static PERMITS: OnceLock<Semaphore> = OnceLock::new();
    PERMITS.get_or_init(|| Semaphore::new(concurrent()))
}

/// Judges `call` over the run's entries as they are now.
pub(crate) async fn judge(
    svc: &Services,
    run_id: RunId,
    call: FilterCall,
) -> Result<Judged, StoreError> {
    let reading = call.clone();
    let candidates = svc
        .store
        .read(move |c| selection::candidates(c, run_id, &reading))
        .await?;
    let _permit = permits()
        .acquire()
        .await
        .map_err(|e| StoreError::Task(Box::new(e)))?;
    actix_rt::task::spawn_blocking(move || selection::judge(&call, &candidates))
        .await
        .map_err(|e| StoreError::Task(Box::new(e)))
}
