//! HTTP routes: the WebSocket upgrade on `/` and `/ws`, the web page on `/` without an upgrade
//! (and its assets, [`crate::webpage`]), and `/health` for load balancers.

use actix_web::{web, HttpRequest, HttpResponse};
use rummy_actors::session::{upgrade, SessionDeps};

/// Registers every route.
pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/", web::get().to(root))
        .route("/ws", web::get().to(websocket))
        .route(
            "/assets/{version}/{name}",
            web::get().to(crate::webpage::asset),
        )
        .route("/health", web::get().to(health));
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
        Ok(crate::webpage::page(&req))
    }
}

async fn websocket(
    req: HttpRequest,
    stream: web::Payload,
    deps: web::Data<SessionDeps>,
) -> Result<HttpResponse, actix_web::Error> {
    upgrade(&req, stream, deps.get_ref().clone()).await
}

async fn health() -> HttpResponse {
    HttpResponse::Ok().content_type("text/plain").body("ok\n")
}
