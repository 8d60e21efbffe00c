//! What `/health` and `server/doctor` check of the server itself: that the database takes a
//! write, and which providers are configured.

use crate::clock::now;
use crate::store::Store;
use rummy_store::health;
use std::time::Duration;

/// How long the write probe may take before the database counts as not writable: a writer
/// stuck that long is as good as one that refuses.
const PROBE_TIMEOUT: Duration = Duration::from_secs(5);

/// Proves the database writable: the probe row rewritten and committed through the writer,
/// within [`PROBE_TIMEOUT`]; else why not.
pub async fn database_writable(store: &Store) -> Result<(), String> {
    let probe = store.write(|c| health::probe(c, now()));
    match tokio::time::timeout(PROBE_TIMEOUT, probe).await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => {
            tracing::error!(error = %e, "health probe: the database did not take a write");
            Err(e.to_string())
        }
        Err(_) => {
            tracing::error!(
                timeout_s = PROBE_TIMEOUT.as_secs(),
                "health probe: the database writer did not answer"
            );
            Err(format!(
                "the database writer did not answer within {} s",
                PROBE_TIMEOUT.as_secs()
            ))
        }
    }
}
