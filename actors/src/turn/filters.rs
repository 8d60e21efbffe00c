//! The turn step that judges a model command's body filter before the command is dispatched:
//! the candidates read on a read connection, the filter (XPath, JSONPath, regex over bodies up
//! to the filter limits) run on the blocking pool — never on the store's writer, which
//! serialises every project's writes, nor on an arbiter thread serving other runs.
//!
//! At most [`concurrent`] filters run at once across the server: a run that filters huge bodies
//! waits for a permit instead of taking every blocking thread. The write that dispatches the
//! command checks that the candidates did not change since (`selection::Judged::fits`).

use crate::services::Services;
use rummy_store::ids::RunId;
use rummy_store::selection::{self, FilterCall, Judged};
use rummy_store::StoreError;
use std::sync::{Arc, OnceLock};
use tokio::sync::Semaphore;

/// How many body filters may run at once: the machine's cores, at least two.
fn concurrent() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get().max(2))
}

fn permits() -> Arc<Semaphore> {
    static PERMITS: OnceLock<Arc<Semaphore>> = OnceLock::new();
    Arc::clone(PERMITS.get_or_init(|| Arc::new(Semaphore::new(concurrent()))))
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
    let permit = permits()
        .acquire_owned()
        .await
        .map_err(|e| StoreError::Task(Box::new(e)))?;
    // The permit goes with the work: a turn cancelled meanwhile stops waiting for it, but the
    // filter it started still counts until it ends.
    actix_rt::task::spawn_blocking(move || {
        let judged = selection::judge(&call, &candidates);
        drop(permit);
        judged
    })
    .await
    .map_err(|e| StoreError::Task(Box::new(e)))
}
