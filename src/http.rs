//! HTTP routes: the WebSocket upgrade on `/` and `/ws`, the web page on `/` without an upgrade
//! (and its assets, [`crate::webpage`]), `/health` for load balancers and `/metrics` for
//! Prometheus.

use actix_web::http::header;
use actix_web::{web, HttpRequest, HttpResponse};
use rummy_actors::health;
use rummy_actors::hub::BacklogBytes;
use rummy_actors::metrics::Snapshot;
use rummy_actors::session::{admin_bearer, upgrade, SessionDeps};
use rummy_core::access::bearer::metrics_open;
use rummy_store::location::Location;
use rummy_store::stats;
use serde_json::json;

/// Registers every route.
pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/", web::get().to(root))
        .route("/ws", web::get().to(websocket))
        .route(
            "/assets/{version}/{name}",
            web::get().to(crate::webpage::asset),
        )
        .route("/health", web::get().to(health))
        .route("/metrics", web::get().to(metrics));
}

/// `/`: a WebSocket when the request asks to upgrade, else the web page.
async fn root(
    req: HttpRequest,
    stream: web::Payload,
    deps: web::Data<SessionDeps>,
) -> Result<HttpResponse, actix_web::Error> {
    if crate::webpage::wants_upgrade(&req) {
        upgrade(&req, stream, deps.get_ref().clone()).await
    } else {
        // Unknown (the database cannot be read): the page asks for a token first.
        let required = deps
            .svc
            .store
            .read(rummy_store::tokens::any)
            .await
            .unwrap_or(true);
        Ok(crate::webpage::page(&req, required))
    }
}

async fn websocket(
    req: HttpRequest,
    stream: web::Payload,
    deps: web::Data<SessionDeps>,
) -> Result<HttpResponse, actix_web::Error> {
    upgrade(&req, stream, deps.get_ref().clone()).await
}

/// `GET /health`, unauthenticated and free of secrets: 200 `{"status":"ok", ...}` when the
/// database took a write (a probe row rewritten and committed), 503 `{"status":"unavailable",
/// ...}` when not; with the database's backend (`sqlite` or `postgres`), the version and the
/// names of the configured providers (never their keys or addresses). Load balancers and
/// `rummy doctor --health` read it.
async fn health(deps: web::Data<SessionDeps>) -> HttpResponse {
    let svc = &deps.svc;
    let writable = health::database_writable(&svc.store).await;
    let providers: Vec<&str> = svc
        .config
        .configured_providers()
        .into_iter()
        .map(|(name, _)| name)
        .collect();
    let body = json!({
        "status": if writable.is_ok() { "ok" } else { "unavailable" },
        "version": env!("CARGO_PKG_VERSION"),
        "database": { "writable": writable.is_ok(), "backend": svc.store.location().backend() },
        "providers": providers,
    });
    let mut response = if writable.is_ok() {
        HttpResponse::Ok()
    } else {
        HttpResponse::ServiceUnavailable()
    };
    response
        .content_type("application/json")
        .body(format!("{body}\n"))
}

/// The Prometheus text format's content type.
const PROMETHEUS_TEXT: &str = "text/plain; version=0.0.4; charset=utf-8";

/// `GET /metrics`: for an admin token (`Authorization: Bearer`, the scheme in any case), from
/// anywhere and under any `Host`; without one, only for a request from a loopback peer whose
/// `Host` is a loopback name (`localhost`, `127.0.0.1`, `[::1]`, any port) — and never when
/// the server sits behind a proxy (`RUMMY_TRUST_PROXY`), whose every request comes from
/// loopback. Anyone else is refused 403.
async fn metrics(req: HttpRequest, deps: web::Data<SessionDeps>) -> HttpResponse {
    let proxied = deps.svc.config.access.trust_proxy;
    let loopback = req.peer_addr().is_some_and(|peer| peer.ip().is_loopback());
    let host = req
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok());
    let allowed = metrics_open(loopback, host, proxied) || {
        let authorization = req
            .headers()
            .get(header::AUTHORIZATION)
            .map(|h| String::from_utf8_lossy(h.as_bytes()).into_owned());
        admin_bearer(&deps, authorization.as_deref()).await
    };
    if !allowed {
        tracing::warn!(peer = ?req.peer_addr(), host = ?host, "/metrics refused: neither loopback nor an admin token");
        return HttpResponse::Forbidden()
            .content_type("text/plain; charset=utf-8")
            .body("forbidden: /metrics needs an admin token (Authorization: Bearer), or a request from loopback to a loopback Host (localhost, 127.0.0.1, [::1]) without RUMMY_TRUST_PROXY\n");
    }
    let svc = &deps.svc;
    let counts = match svc.store.read(stats::counts).await {
        Ok(counts) => counts,
        Err(e) => {
            tracing::error!(error = %e, "/metrics: cannot read the counts");
            return HttpResponse::ServiceUnavailable()
                .content_type("text/plain; charset=utf-8")
                .body("the database cannot be read\n");
        }
    };
    let wal_bytes = match svc.store.location() {
        Location::Sqlite(path) => {
            let mut wal = path.as_os_str().to_owned();
            wal.push("-wal");
            std::fs::metadata(&wal).map_or(0, |m| m.len())
        }
        Location::Postgres(_) => 0,
    };
    let snapshot = Snapshot {
        runs_by_status: counts.runs_by_status,
        loops_queued: counts.loops_queued,
        wal_bytes,
        connections: deps.seats.taken(),
        backlog_bytes: svc.hub.send(BacklogBytes).await.unwrap_or(0),
        projects: counts.projects,
    };
    HttpResponse::Ok()
        .content_type(PROMETHEUS_TEXT)
        .body(svc.store.metrics().render(&snapshot))
}
