//! The web page (docs/design/clients.md): `GET /` without an upgrade answers the page, and
//! `/assets/<version>/<name>` its scripts, style and icon — all embedded in the binary, written
//! by hand (no build step, nothing from the network). The page speaks only the public protocol
//! over `/ws`.
//!
//! Assets live under a version (a hash of all of them), so a browser may keep them forever and
//! a new binary's page never runs an old script; the page itself is revalidated every time.
//! Every answer carries a strict Content-Security-Policy: scripts, styles and images from this
//! server only, and connections to this server's own WebSocket.

use actix_web::http::header::{self, HeaderValue};
use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest, HttpResponse, HttpResponseBuilder};
use std::sync::OnceLock;

/// One embedded file of the page.
struct Asset {
    /// Its name under `/assets/<version>/`.
    name: &'static str,
    /// Its content.
    body: &'static [u8],
    /// Its `Content-Type`.
    content_type: &'static str,
}

macro_rules! asset {
    ($name:literal, $type:expr) => {
        Asset {
            name: $name,
            body: include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/web/", $name)),
            content_type: $type,
        }
    };
}

const JS: &str = "text/javascript; charset=utf-8";

/// Every asset the page loads (`web/` at the repository's top).
const ASSETS: &[Asset] = &[
    asset!("app.js", JS),
    asset!("rpc.js", JS),
    asset!("store.js", JS),
    asset!("view.js", JS),
    asset!("timeline.js", JS),
    asset!("diff.js", JS),
    asset!("dom.js", JS),
    asset!("style.css", "text/css; charset=utf-8"),
    asset!("icon.svg", "image/svg+xml"),
];

/// The page; `{{assets}}` is replaced with the versioned asset directory.
const INDEX: &str = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/web/index.html"));

/// A year: versioned assets never change under their URL.
const IMMUTABLE: &str = "public, max-age=31536000, immutable";

/// The assets' version: an FNV-1a hash of every asset and the page, in hex. Computed once.
pub fn version() -> &'static str {
    static VERSION: OnceLock<String> = OnceLock::new();
    VERSION.get_or_init(|| {
        let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
        let bodies = ASSETS.iter().map(|a| a.body).chain([INDEX.as_bytes()]);
        for byte in bodies.flatten() {
            hash ^= u64::from(*byte);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
        format!("{hash:016x}")
    })
}

/// The page as served: its asset links point at this version, and its `<body data-token>`
/// says whether the server needs a token (`required`) or not (`none`), so the page asks for
/// one before it connects rather than connecting without one first.
fn index_html(token_required: bool) -> &'static str {
    static REQUIRED: OnceLock<String> = OnceLock::new();
    static NONE: OnceLock<String> = OnceLock::new();
    let (cell, word) = if token_required {
        (&REQUIRED, "required")
    } else {
        (&NONE, "none")
    };
    cell.get_or_init(|| {
        INDEX
            .replace("{{assets}}", &format!("/assets/{}", version()))
            .replace("{{token}}", word)
    })
}

/// The Content-Security-Policy for a page reached as `host`: everything from this server only;
/// the WebSocket named explicitly (`ws:`/`wss:` on the same host), since not every browser
/// lets `'self'` cover it. A `Host` that is not a plain host name leaves it to `'self'`.
pub fn content_security_policy(host: Option<&str>) -> String {
    let sockets = host
        .filter(|h| {
            !h.is_empty()
                && h.chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | ':' | '[' | ']'))
        })
        .map(|h| format!(" ws://{h} wss://{h}"))
        .unwrap_or_default();
    format!(
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
         connect-src 'self'{sockets}; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    )
}

/// Whether the request's `If-None-Match` already names `etag`.
fn fresh(req: &HttpRequest, etag: &str) -> bool {
    req.headers()
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.split(',')
                .any(|tag| tag.trim() == etag || tag.trim() == "*")
        })
}

/// An answer with the headers every page answer carries.
fn secured(req: &HttpRequest, status: StatusCode) -> HttpResponseBuilder {
    let host = req
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok());
    let mut builder = HttpResponse::build(status);
    builder
        .insert_header((
            header::CONTENT_SECURITY_POLICY,
            content_security_policy(host),
        ))
        .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
        .insert_header((header::REFERRER_POLICY, "no-referrer"))
        .insert_header((header::X_FRAME_OPTIONS, "DENY"));
    builder
}

/// `GET /` without an upgrade: the page, revalidated on every load (its ETag is the version
/// and whether a token is required: the page a browser kept from before the first token was
/// made is not fresh).
pub fn page(req: &HttpRequest, token_required: bool) -> HttpResponse {
    let etag = if token_required {
        format!("\"{}-token\"", version())
    } else {
        format!("\"{}\"", version())
    };
    let status = if fresh(req, &etag) {
        StatusCode::NOT_MODIFIED
    } else {
        StatusCode::OK
    };
    let mut answer = secured(req, status);
    answer
        .insert_header((header::CACHE_CONTROL, "no-cache"))
        .insert_header((header::ETAG, etag));
    if status == StatusCode::NOT_MODIFIED {
        return answer.finish();
    }
    answer
        .content_type("text/html; charset=utf-8")
        .body(index_html(token_required))
}

/// `GET /assets/{version}/{name}`: an embedded asset. Under the current version it may be kept
/// a year; under another (a page loaded before the binary changed) it is served, uncached.
pub async fn asset(req: HttpRequest, path: web::Path<(String, String)>) -> HttpResponse {
    let (asked, name) = path.into_inner();
    let Some(asset) = ASSETS.iter().find(|a| a.name == name) else {
        return secured(&req, StatusCode::NOT_FOUND)
            .content_type("text/plain; charset=utf-8")
            .body("no such asset\n");
    };
    let current = asked == version();
    let etag = format!("\"{}\"", version());
    if current && fresh(&req, &etag) {
        return secured(&req, StatusCode::NOT_MODIFIED)
            .insert_header((header::ETAG, etag))
            .finish();
    }
    let mut answer = secured(&req, StatusCode::OK);
    answer.insert_header((
        header::CONTENT_TYPE,
        HeaderValue::from_static(asset.content_type),
    ));
    if current {
        answer
            .insert_header((header::CACHE_CONTROL, IMMUTABLE))
            .insert_header((header::ETAG, etag));
    } else {
        answer.insert_header((header::CACHE_CONTROL, "no-cache"));
    }
    answer.body(asset.body)
}

/// Whether a request asks to become a WebSocket (`Upgrade: websocket`).
pub fn wants_upgrade(req: &HttpRequest) -> bool {
    req.headers()
        .get(header::UPGRADE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case("websocket"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    /// The policy names the page's own WebSocket for a plain host, and only `'self'` for a
    /// `Host` that could smuggle another directive.
    #[test]
    fn the_policy_allows_only_the_servers_own_socket() {
        assert_eq!(
            content_security_policy(Some("127.0.0.1:3044")),
            "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
             connect-src 'self' ws://127.0.0.1:3044 wss://127.0.0.1:3044; base-uri 'none'; \
             form-action 'none'; frame-ancestors 'none'"
        );
        assert_eq!(
            content_security_policy(Some("evil; script-src *")),
            content_security_policy(None)
        );
    }

    /// Every module the page imports is embedded, and the page links the versioned directory.
    #[test]
    fn every_imported_module_is_embedded() {
        let imports: Vec<&str> = ASSETS
            .iter()
            .filter(|a| a.name.ends_with(".js"))
            .flat_map(|a| {
                std::str::from_utf8(a.body)
                    .unwrap_or_default()
                    .lines()
                    .filter_map(|l| l.split("from \"./").nth(1))
                    .filter_map(|rest| rest.split('"').next())
                    .collect::<Vec<_>>()
            })
            .collect();
        let missing: Vec<&&str> = imports
            .iter()
            .filter(|i| !ASSETS.iter().any(|a| a.name == **i))
            .collect();
        assert_eq!(missing, Vec::<&&str>::new());
        assert!(index_html(false).contains(&format!("/assets/{}/app.js", version())));
        assert!(index_html(true).contains("<body data-token=\"required\">"));
        assert!(index_html(false).contains("<body data-token=\"none\">"));
    }
}
