//! rummy: a team server that runs LLM agents over a keyed entry store.
//!
//! Layout (see `ARCHITECTURE.md`): `rummy_core` is the domain (store, entries,
//! parsing, assembly, wire types) with no async runtime; `rummy_actors` wires
//! it into actix actors; this crate is thin — configuration ([`env`]),
//! HTTP routes ([`http`]) and [`serve`], which starts everything on a socket
//! and stops it when the `shutdown` future resolves.

pub mod env;
pub mod http;

use actix::prelude::*;
use actix_web::{web, App, HttpServer};
use rummy_actors::hub::{CloseAll, NotificationHub};
use rummy_actors::provider::Providers;
use rummy_actors::registry::{Recover, RunRegistry};
use rummy_actors::search::SearchClient;
use rummy_actors::services::Services;
use rummy_actors::session::{Seats, SessionDeps, Socket};
use rummy_actors::store::Store;
use rummy_core::config::Config;
use rummy_core::store::{models, StoreError};
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use thiserror::Error;

pub use rummy_core::config;

/// Why the server could not start.
#[derive(Debug, Error)]
pub enum ServeError {
    /// `RUMMY_HOME` or the database directory could not be created.
    #[error("cannot create {path}: {source}")]
    Home {
        /// The directory.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// The database could not be opened or migrated.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A provider could not be set up.
    #[error("provider setup failed: {0}")]
    Provider(String),
    /// The search backend's client could not be set up.
    #[error("search setup failed: {0}")]
    Search(String),
    /// Writing the start-up line or running the server failed.
    #[error("server I/O failed: {0}")]
    Io(#[from] std::io::Error),
    /// The port could not be bound (in use, or not permitted).
    #[error("cannot listen on 127.0.0.1:{port}: {source}")]
    Bind {
        /// The port asked for.
        port: u16,
        /// The cause.
        source: std::io::Error,
    },
}

/// A running server.
pub struct ServerHandle {
    addr: SocketAddr,
    http: actix_web::dev::ServerHandle,
    hub: Addr<NotificationHub>,
    seats: Seats,
    done: actix_rt::task::JoinHandle<std::io::Result<()>>,
}

impl ServerHandle {
    /// The bound address (the real port when `PORT=0`).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The WebSocket URL clients connect to.
    pub fn ws_url(&self) -> String {
        format!("ws://127.0.0.1:{}/", self.addr.port())
    }

    /// Stops accepting, closes sessions (1001), lets in-flight requests answer, and waits for the server to end.
    pub async fn stop(self) {
        shutdown(&self.hub, &self.seats, &self.http).await;
        let _ = self.done.await;
    }

    /// Waits until the server ends (after the shutdown future resolved).
    pub async fn wait(self) -> std::io::Result<()> {
        match self.done.await {
            Ok(result) => result,
            Err(e) => Err(std::io::Error::other(e.to_string())),
        }
    }
}

/// The shutdown sequence: sessions are told the server goes away (so graceful
/// stop does not wait on long-lived WebSockets), then HTTP stops gracefully.
/// Running turns are left to be recovered as interrupted on the next start.
async fn shutdown(hub: &Addr<NotificationHub>, seats: &Seats, http: &actix_web::dev::ServerHandle) {
    let _ = hub.send(CloseAll).await;
    // Each session sends its close frame and closes its connection itself. Waiting (briefly)
    // for them lets HTTP stop at once: a worker that still holds a connection when the stop
    // begins looks again only a second later.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(1);
    while seats.taken() > 0 && std::time::Instant::now() < deadline {
        actix_rt::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    http.stop(true).await;
}

fn create_dir(path: &std::path::Path) -> Result<(), ServeError> {
    std::fs::create_dir_all(path).map_err(|source| ServeError::Home {
        path: path.display().to_string(),
        source,
    })
}

/// Starts the server on `127.0.0.1:config.port`; it stops when `shutdown` resolves.
///
/// Must be called inside an actix system (`#[actix_rt::main]`, `#[actix_rt::test]`).
/// Returns once the socket is bound and accepting. Runs that a crash left
/// mid-loop are recovered before the first connection is accepted.
pub async fn serve(
    config: Config,
    shutdown_signal: impl Future<Output = ()> + 'static,
) -> Result<ServerHandle, ServeError> {
    create_dir(&config.home)?;
    if let Some(dir) = config
        .db_path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
    {
        create_dir(dir)?;
    }
    let store = Store::open(&config.db_path, 4)?;
    let seeds = config.models.clone();
    store
        .write(move |c| {
            let now = rummy_actors::clock::now();
            seeds
                .iter()
                .try_for_each(|seed| models::upsert(c, seed, now).map(|_| ()))
        })
        .await?;
    let providers = Providers::start(&config, store.clone()).map_err(ServeError::Provider)?;
    let search = SearchClient::from_config(&config).map_err(ServeError::Search)?;
    let port = config.port;
    let hub = NotificationHub::new(config.limits.max_backlog_bytes).start();
    let svc = Services {
        store,
        hub: hub.clone(),
        providers,
        search,
        config: Arc::new(config),
        scan_stamps: Default::default(),
        resolution_locks: Default::default(),
    };
    let registry = RunRegistry::new(svc.clone()).start();
    match registry.send(Recover).await {
        Ok(Ok(0)) => {}
        Ok(Ok(n)) => tracing::warn!(loops = n, "recovered interrupted loops"),
        Ok(Err(e)) => tracing::error!(error = %e, "recovery failed"),
        Err(e) => tracing::error!(error = %e, "recovery failed"),
    }
    let seats = Seats::new(svc.config.access.max_connections);
    let deps = SessionDeps {
        svc,
        registry,
        seats: seats.clone(),
    };
    let server = HttpServer::new(move || {
        App::new()
            .app_data(web::Data::new(deps.clone()))
            .configure(http::routes)
    })
    .workers(2)
    .shutdown_timeout(5)
    // A WebSocket session that ends stops its socket for reading (`Socket`), so the server
    // closes the connection as soon as the close frame is out. Any other connection that
    // outlives its response lingers this long for the peer's FIN: actix-http computes that
    // deadline from a clock it refreshes every 500 ms and never polls one already past when
    // the linger starts, so the wait stays well above the refresh.
    .client_disconnect_timeout(std::time::Duration::from_millis(1_500))
    // Each connection keeps a duplicate of its descriptor for that.
    .on_connect(|conn, data| {
        if let Some(socket) = conn
            .downcast_ref::<actix_web::rt::net::TcpStream>()
            .and_then(Socket::of)
        {
            data.insert(socket);
        }
    })
    // Notifications are small frames sent back to back; with Nagle's algorithm each one after
    // the first waits for the client's delayed ACK (up to 40 ms on Linux).
    .tcp_nodelay(true)
    .disable_signals()
    .bind(("127.0.0.1", port))
    .map_err(|source| ServeError::Bind { port, source })?;
    let addr = server
        .addrs()
        .first()
        .copied()
        .ok_or_else(|| ServeError::Bind {
            port,
            source: std::io::Error::other("no address bound"),
        })?;
    let server = server.run();
    let http = server.handle();
    let done = actix_rt::spawn(server);
    let (stop_http, stop_hub, stop_seats) = (http.clone(), hub.clone(), seats.clone());
    actix_rt::spawn(async move {
        shutdown_signal.await;
        tracing::info!("shutting down");
        shutdown(&stop_hub, &stop_seats, &stop_http).await;
    });
    tracing::info!(%addr, "listening");
    Ok(ServerHandle {
        addr,
        http,
        hub,
        seats,
        done,
    })
}
