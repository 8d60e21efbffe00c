//! The handles every actor shares: the store, the notification hub, the providers, the search backend, the configuration, admission to the places in flight, the in-memory state of project files (scan stamps, resolution locks) and of accepted commands.
//!
//! The shared state is defined here ([`stamps`], [`locks`], [`shell`]), below the modules
//! that act with `Services` (`files`, `proposals`, `shell`, `turn`): it never depends on
//! what uses it, so no module and `Services` need each other.

pub mod client_tools;
pub mod locks;
pub mod sandbox;
pub mod shell;
pub mod stamps;

use crate::admission::Admission;
use crate::cluster::Cluster;
use crate::hub::{publish_state, send, NotificationHub};
use crate::provider::Providers;
use crate::search::SearchClient;
use crate::store::Store;
use actix::Addr;
use locks::ResolutionLocks;
use rummy_core::config::Config;
use rummy_core::wire::jsonrpc::notification_text;
use rummy_core::wire::notifications::Push;
use rummy_store::ids::ProjectId;
use rummy_store::notifications::Recorded;
use shell::ShellRegistry;
use stamps::ScanStamps;
use std::sync::Arc;

/// Shared handles, cheap to clone.
#[derive(Clone)]
pub struct Services {
    /// The store (single writer, read pool).
    pub store: Store,
    /// Fan-out of notifications to sessions.
    pub hub: Addr<NotificationHub>,
    /// LLM providers.
    pub providers: Providers,
    /// The web search backend (`RUMMY_SEARXNG_URL`); without one `search` is not offered.
    pub search: Option<SearchClient>,
    /// Server configuration.
    pub config: Arc<Config>,
    /// What each project's last scan saw on disk, so rescans read only changed files.
    pub scan_stamps: ScanStamps,
    /// One resolution at a time per run and per project file (resolutions do their disk work
    /// off the store's writer).
    pub resolution_locks: ResolutionLocks,
    /// Accepted commands the server runs, and the turns waiting for commands' output.
    pub shell: ShellRegistry,
    /// How the server confines the commands it runs.
    pub sandbox: sandbox::Sandbox,
    /// Where a run asks for a place before its next loop while a fair-use limit applies.
    pub admission: Admission,
    /// The other server processes on the same PostgreSQL database, and this one's hold on its
    /// runs; `None` on SQLite (one process).
    pub cluster: Option<Cluster>,
    /// The tools clients offer runs, and the accepted calls waiting for their client.
    pub client_tools: client_tools::ClientTools,
    /// The model's web fetch (`RUMMY_WEB_FETCH`); `None` when it is off.
    pub web: Option<crate::web_fetch::WebFetcher>,
}

impl Services {
    /// Sends a notification to every session of the project, serialised once. One that would
    /// pass `RUMMY_MAX_MESSAGE_BYTES` is not sent (a warning says so): every push a client must
    /// not miss is a `run/state`, which is held to the limit when it is recorded, and what a
    /// dropped `run/proposal` announced is in it too.
    pub fn push<N: Push>(&self, project_id: ProjectId, run: &str, params: &N) {
        match serde_json::to_string(params) {
            Ok(json) if json.len() > self.store.bounds().result_bytes() => {
                tracing::warn!(
                    method = N::METHOD,
                    bytes = json.len(),
                    "a notification over the message limit was not sent"
                );
            }
            Ok(json) => self.send(project_id, run, notification_text(N::METHOD, &json)),
            Err(e) => {
                tracing::error!(method = N::METHOD, error = %e, "cannot serialise a notification")
            }
        }
    }

    /// Sends a recorded `run/state` push to every session of the project, as it was stored.
    pub fn publish_state(&self, project_id: ProjectId, run: &str, state: &Recorded) {
        publish_state(&self.hub, project_id, run, state);
    }

    fn send(&self, project_id: ProjectId, run: &str, text: String) {
        if let Some(cluster) = &self.cluster {
            cluster.relay(project_id, run, &text);
        }
        send(&self.hub, project_id, run, text, None);
    }
}
