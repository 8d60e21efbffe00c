//! HTTP routes: the WebSocket upgrade on `/` and `/ws`, and `/health` for load balancers.

use actix_web::{web, HttpRequest, HttpResponse};
use rummy_actors::session::{upgrade, SessionDeps};

/// Registers every route.
pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/", web::get().to(websocket))
        .route("/ws", web::get().to(websocket))
        .route("/health", web::get().to(health));
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
