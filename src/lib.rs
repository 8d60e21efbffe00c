//! rummy: a team server that runs LLM agents over a keyed entry store.
//!
//! Layout (see `ARCHITECTURE.md`): `rummy_core` is the domain (store, entries,
//! parsing, assembly, wire types) with no async runtime; `rummy_actors` wires
//! it into actix actors; this crate is thin — configuration ([`env`]),
//! HTTP routes ([`http`]) and [`serve`], which starts everything on a socket
//! and stops it when the `shutdown` future resolves.

pub mod env;
pub mod http;
pub mod lock;
pub mod modes;
pub mod webpage;

use actix::prelude::*;
use actix_web::{web, App, HttpServer};
use rummy_actors::admission::Admission;
use rummy_actors::errors::HttpClientError;
use rummy_actors::hub::{CloseAll, NotificationHub};
use rummy_actors::metrics::Metrics;
use rummy_actors::provider::Providers;
use rummy_actors::registry::{CountRunActors, Recover, RunRegistry};
use rummy_actors::search::SearchClient;
use rummy_actors::services::sandbox::Sandbox;
use rummy_actors::services::shell::ShellRegistry;
use rummy_actors::services::Services;
use rummy_actors::session::{Seats, SessionDeps, Socket};
use rummy_actors::store::Store;
use rummy_actors::tokens::TokenWatch;
use rummy_actors::web_fetch::WebFetcher;
use rummy_core::config::Config;
use rummy_core::wire::jsonrpc::notification_text;
use rummy_core::wire::notifications::{Push, UiNotify};
use rummy_store::location::Location;
use rummy_store::{models, projects, StoreError};
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use thiserror::Error;

pub use rummy_core::config;

/// Why the server could not start.
#[derive(Debug, Error)]
pub enum ServeError {
    /// `RUMMY_HOME`, the database directory or the database's files could not be created or
    /// made private (0700, 0600).
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
    /// A provider's HTTP client could not be built.
    #[error("provider setup failed: {0}")]
    Provider(#[source] HttpClientError),
    /// The connections to the other server processes (PostgreSQL) could not be opened.
    #[error("cannot join the other server processes: {0}")]
    Cluster(String),
    /// The search backend's HTTP client could not be built.
    #[error("search setup failed: {0}")]
    Search(#[source] HttpClientError),
    /// The web fetch's HTTP client could not be built.
    #[error("web fetch setup failed: {0}")]
    WebFetch(#[source] HttpClientError),
    /// Writing the start-up line or running the server failed.
    #[error("server I/O failed: {0}")]
    Io(#[from] std::io::Error),
    /// Another server holds the database (its lock file names it).
    #[error("{0}")]
    Locked(#[from] lock::Held),
    /// The database's lock file could not be opened or locked.
    #[error("cannot lock {path}: {source}")]
    Lock {
        /// The lock file.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// The address could not be bound (in use, or not permitted).
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// The cause.
        source: std::io::Error,
    },
    /// Clients from other machines could reach the server, and no token exists.
    #[error("refusing to serve {reach} without tokens: anyone who can reach it could start runs and write files as this user. Create an admin token first (rummy token create --user NAME --admin), or set RUMMY_INSECURE=1 to serve it open anyway")]
    Insecure {
        /// What makes the server reachable.
        reach: String,
    },
    /// The metrics registry could not be built (a series' name was refused).
    #[error("metrics: {0}")]
    Metrics(String),
    /// The TLS certificate or key could not be used.
    #[error("TLS: {0}")]
    Tls(String),
}

/// A running server.
pub struct ServerHandle {
    addr: SocketAddr,
    /// The SQLite database's lock, held while the server lives (none on PostgreSQL).
    _lock: Option<lock::DbLock>,
    http: actix_web::dev::ServerHandle,
    hub: Addr<NotificationHub>,
    seats: Seats,
    tls: bool,
    commands: ShellRegistry,
    registry: Addr<RunRegistry>,
    done: actix_rt::task::JoinHandle<std::io::Result<()>>,
}

impl ServerHandle {
    /// The bound address (the real port when `PORT=0`).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The WebSocket URL clients on this machine connect to (`wss://` with TLS; a wildcard
    /// bind is reached on loopback).
    pub fn ws_url(&self) -> String {
        let scheme = if self.tls { "wss" } else { "ws" };
        let host = match self.addr.ip() {
            ip if ip.is_unspecified() && ip.is_ipv6() => "[::1]".to_owned(),
            ip if ip.is_unspecified() => "127.0.0.1".to_owned(),
            std::net::IpAddr::V6(ip) => format!("[{ip}]"),
            ip => ip.to_string(),
        };
        format!("{scheme}://{host}:{}/", self.addr.port())
    }

    /// How many runs have an actor now: a run has one only while it has something to do (a
    /// loop claimed, running, waiting or finishing), and an idle one retires.
    pub async fn run_actors(&self) -> usize {
        self.registry.send(CountRunActors).await.unwrap_or(0)
    }

    /// Stops accepting, kills the commands it runs, closes sessions (1001), lets in-flight
    /// requests answer, and waits for the server to end.
    pub async fn stop(self) {
        shutdown(&self.hub, &self.seats, &self.http, &self.commands).await;
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

/// The shutdown sequence: the accepted commands the server runs are killed (their
/// process groups), sessions get a `ui/notify` saying the server is stopping, then are told
/// the server goes away (so graceful
/// stop does not wait on long-lived WebSockets), then HTTP stops gracefully.
/// Running turns and the killed commands' channels are left to be recovered as
/// interrupted on the next start.
async fn shutdown(
    hub: &Addr<NotificationHub>,
    seats: &Seats,
    http: &actix_web::dev::ServerHandle,
    commands: &ShellRegistry,
) {
    commands.shutdown();
    // Every person connected hears why their connection is about to close.
    let notice = rummy_core::wire::notices::stopping();
    let text = serde_json::to_string(&notice)
        .ok()
        .map(|params| notification_text(UiNotify::METHOD, &params));
    let _ = hub.send(CloseAll { notice: text }).await;
    // Each session answers its calls in flight (for at most `SHUTDOWN_GRACE`), then sends its
    // close frame and closes its connection itself. Waiting for them lets HTTP stop at once: a
    // worker that still holds a connection when the stop begins looks again only a second later.
    let deadline = std::time::Instant::now()
        + rummy_actors::session::SHUTDOWN_GRACE
        + std::time::Duration::from_secs(1);
    while seats.taken() > 0 && std::time::Instant::now() < deadline {
        actix_rt::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    http.stop(true).await;
}

/// Joins the other server processes on the PostgreSQL database at `url`: this process's row
/// (its id names it as the holder of its runs and the writer of its notifications), the LISTEN
/// connection and the push relay.
async fn join(
    store: &Store,
    hub: &Addr<NotificationHub>,
    providers: &Providers,
    url: &str,
    lease_ms: u64,
) -> Result<rummy_actors::cluster::Cluster, ServeError> {
    let me: Arc<str> = Arc::from(process_id());
    let (id, lease) = (me.to_string(), i64::try_from(lease_ms).unwrap_or(i64::MAX));
    let alive = store
        .write(move |c| {
            // The writer's notifications carry this process's name (`notifications.origin`).
            rummy_store::cluster::name_connection(c, &id)?;
            let now = rummy_actors::clock::now();
            rummy_store::cluster::register(c, &id, now, lease)?;
            Ok(rummy_store::cluster::alive(c, now)?.len())
        })
        .await?;
    // Its part of the providers' limits from the first call (the others take theirs at their
    // next renewal).
    providers.share(alive);
    tracing::info!(process = %me, processes = alive, lease_ms, "joined the server processes on PostgreSQL");
    rummy_actors::cluster::start(
        store.clone(),
        hub.clone(),
        providers.clone(),
        url,
        me,
        lease_ms,
    )
    .map_err(ServeError::Cluster)
}

/// A name for this process unique among the processes of a database: host, process id and
/// the moment it started.
fn process_id() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "host".to_owned());
    format!(
        "{host}/{}/{:x}",
        std::process::id(),
        rummy_actors::clock::now().0
    )
}

/// Makes a directory of the server's (mode 0700 for what it creates).
fn create_dir(path: &std::path::Path) -> Result<(), ServeError> {
    modes::create_private_dir(path).map_err(|source| ServeError::Home {
        path: path.display().to_string(),
        source,
    })
}

/// Refuses to serve a network without tokens unless `RUMMY_INSECURE` says so,
/// which is then logged loudly.
async fn refuse_open_network(config: &Config, store: &Store) -> Result<(), ServeError> {
    let access = &config.access;
    if !access.networked() {
        return Ok(());
    }
    if store.read(rummy_store::tokens::any).await? {
        return Ok(());
    }
    let reach = if access.trust_proxy {
        "clients behind a reverse proxy (RUMMY_TRUST_PROXY)".to_owned()
    } else {
        format!("the network on {}", access.bind)
    };
    if access.insecure {
        tracing::warn!(
            "RUMMY_INSECURE: serving {reach} without tokens; anyone who can reach it can start runs and write files"
        );
        return Ok(());
    }
    Err(ServeError::Insecure { reach })
}

/// The listener's TLS configuration from its PEM files.
fn tls_config(files: &rummy_core::config::TlsFiles) -> Result<rustls::ServerConfig, ServeError> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let certs = CertificateDer::pem_file_iter(&files.cert)
        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
        .map_err(|e| ServeError::Tls(format!("{}: {e}", files.cert.display())))?;
    if certs.is_empty() {
        return Err(ServeError::Tls(format!(
            "{}: no certificate in it",
            files.cert.display()
        )));
    }
    let key = PrivateKeyDer::from_pem_file(&files.key)
        .map_err(|e| ServeError::Tls(format!("{}: {e}", files.key.display())))?;
    rustls::ServerConfig::builder_with_provider(std::sync::Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .and_then(|builder| builder.with_no_client_auth().with_single_cert(certs, key))
    .map_err(|e| ServeError::Tls(e.to_string()))
}

/// Logs what the server runs with, for whoever reads its log first: the version, the database
/// (its backend, and its file or its URL without credentials),
/// where it listens, the providers (names and bases, never keys) and the models; then a WARN
/// line for each setting that looks wrong (`Config::warnings`).
fn startup_summary(config: &Config, addr: SocketAddr) {
    let providers: Vec<String> = config
        .configured_providers()
        .into_iter()
        .map(|(name, base)| format!("{name}={base}"))
        .collect();
    let models: Vec<String> = config
        .models
        .iter()
        .map(|m| format!("{}={}", m.alias, m.actual))
        .collect();
    tracing::info!(
        version = env!("CARGO_PKG_VERSION"),
        backend = config.database().backend(),
        database = %config.database().display(),
        bind = %addr,
        providers = %providers.join(" "),
        models = %models.join(" "),
        "rummy started"
    );
    if providers.is_empty() {
        tracing::warn!("no provider is configured: runs cannot call a model; set OPENAI_BASE_URL (or OLLAMA_BASE_URL, OPENROUTER_API_KEY, XAI_API_KEY)");
    }
    for warning in config.warnings() {
        tracing::warn!("{warning}");
    }
}

/// Starts the server on `RUMMY_BIND:PORT`; it stops when `shutdown` resolves.
///
/// Must be called inside an actix system (`#[actix_rt::main]`, `#[actix_rt::test]`).
/// Returns once the socket is bound and accepting. Runs that a crash left
/// mid-loop are recovered before the first connection is accepted. The database
/// is one server's at a time: a server already using it makes this fail with
/// [`ServeError::Locked`], naming that server's address.
pub async fn serve(
    config: Config,
    shutdown_signal: impl Future<Output = ()> + 'static,
) -> Result<ServerHandle, ServeError> {
    modes::secure_home(&config.home).map_err(|source| ServeError::Home {
        path: config.home.display().to_string(),
        source,
    })?;
    // A port in use (or not permitted) is found before anything starts: recovering runs or
    // starting actors for a server that cannot listen would be work done for nothing.
    let asked = SocketAddr::new(config.access.bind, config.port);
    let probe = (config.port != 0)
        .then(|| std::net::TcpListener::bind(asked))
        .transpose()
        .map_err(|source| ServeError::Bind {
            addr: asked,
            source,
        })?;
    let database = config.database();
    // An SQLite file is one server's; a PostgreSQL database is shared by every process that
    // leases its runs (docs/design/scale.md).
    let mut db_lock = match &database {
        Location::Sqlite(path) => {
            if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                create_dir(dir)?;
            }
            let lock = lock::DbLock::take(path)?;
            modes::secure_database(path).map_err(|source| ServeError::Home {
                path: path.display().to_string(),
                source,
            })?;
            Some(lock)
        }
        Location::Postgres(_) => None,
    };
    let metrics = Metrics::new().map_err(|e| ServeError::Metrics(e.to_string()))?;
    let store = Store::open(&database, 4, Arc::new(metrics))?
        .bounded(rummy_core::wire::bounded::Bounds::of(&config.limits));
    refuse_open_network(&config, &store).await?;
    let tls = config.access.tls.as_ref().map(tls_config).transpose()?;
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
    let web = WebFetcher::from_settings(&config.web).map_err(ServeError::WebFetch)?;
    let addr = SocketAddr::new(config.access.bind, config.port);
    let hub = NotificationHub::new(config.limits.max_backlog_bytes).start();
    let cluster = match &database {
        Location::Postgres(url) => {
            Some(join(&store, &hub, &providers, url, config.limits.lease_ms).await?)
        }
        Location::Sqlite(_) => None,
    };
    let ceilings = store.read(projects::ceilings).await?;
    let admission = Admission::start(
        config.fair.run_limits(),
        ceilings,
        store.clone(),
        hub.clone(),
    );
    // The server's memory (provider keys, tokens) cannot be read through /proc or ptrace by a
    // process of the same user, such as an unconfined command.
    if let Err(e) =
        rustix::process::set_dumpable_behavior(rustix::process::DumpableBehavior::NotDumpable)
    {
        tracing::warn!(error = %e, "cannot make the server non-dumpable");
    }
    let sandbox = Sandbox::start(&config);
    let svc = Services {
        store,
        hub: hub.clone(),
        providers,
        search,
        config: Arc::new(config),
        scan_stamps: Default::default(),
        resolution_locks: Default::default(),
        shell: Default::default(),
        sandbox,
        admission,
        cluster: cluster.clone(),
        client_tools: Default::default(),
        web,
    };
    let registry = RunRegistry::new(svc.clone()).start();
    let svc_store = svc.store.clone();
    match registry.send(Recover).await {
        Ok(Ok(0)) => {}
        Ok(Ok(n)) => tracing::warn!(loops = n, "recovered interrupted loops"),
        Ok(Err(e)) => tracing::error!(error = %e, "recovery failed"),
        Err(e) => tracing::error!(error = %e, "recovery failed"),
    }
    let seats = Seats::new(svc.config.access.max_connections);
    let deps_config = Arc::clone(&svc.config);
    let tokens = TokenWatch::new(svc.store.clone()).start();
    let commands = svc.shell.clone();
    let deps = SessionDeps {
        svc,
        registry: registry.clone(),
        seats: seats.clone(),
        anonymous: Seats::new(deps_config.access.max_anonymous_connections),
        tokens,
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
        let plain = conn.downcast_ref::<actix_web::rt::net::TcpStream>();
        let tls = conn
            .downcast_ref::<actix_tls::accept::rustls_0_23::TlsStream<actix_web::rt::net::TcpStream>>()
            .map(|tls| tls.get_ref().0);
        if let Some(socket) = plain.or(tls).and_then(Socket::of) {
            data.insert(socket);
        }
    })
    // Notifications are small frames sent back to back; with Nagle's algorithm each one after
    // the first waits for the client's delayed ACK (up to 40 ms on Linux).
    .tcp_nodelay(true)
    .disable_signals();
    let with_tls = tls.is_some();
    drop(probe);
    let server = match tls {
        Some(tls) => server.bind_rustls_0_23(addr, tls),
        None => server.bind(addr),
    }
    .map_err(|source| ServeError::Bind { addr, source })?;
    let addr = server
        .addrs()
        .first()
        .copied()
        .ok_or_else(|| ServeError::Bind {
            addr,
            source: std::io::Error::other("no address bound"),
        })?;
    if let Some(lock) = &mut db_lock {
        lock.record(addr.port())?;
    }
    let server = server.run();
    let http = server.handle();
    let done = actix_rt::spawn(server);
    let (stop_http, stop_hub, stop_seats, stop_commands) =
        (http.clone(), hub.clone(), seats.clone(), commands.clone());
    let stop_store = svc_store;
    actix_rt::spawn(async move {
        shutdown_signal.await;
        tracing::info!("shutting down");
        shutdown(&stop_hub, &stop_seats, &stop_http, &stop_commands).await;
        // The other processes take this one's runs over at once, not once its hold expires.
        if let Some(cluster) = cluster {
            let me = cluster.me().to_owned();
            if let Err(e) = stop_store
                .write(move |c| rummy_store::cluster::retire(c, &me))
                .await
            {
                tracing::warn!(error = %e, "cannot hand this process's runs to the others");
            }
        }
    });
    tracing::info!(%addr, "listening");
    startup_summary(&deps_config, addr);
    Ok(ServerHandle {
        addr,
        _lock: db_lock,
        http,
        hub,
        seats,
        tls: with_tls,
        commands,
        registry,
        done,
    })
}
