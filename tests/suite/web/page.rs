//! `GET /` serves the web page from the binary: the page and its assets with
//! their content types, a strict Content-Security-Policy and caching headers; `/` with an
//! upgrade and `/ws` stay the WebSocket.

use crate::support::TestServer;
use pretty_assertions::assert_eq;
use rummy_testkit::RpcClient;
use serde_json::json;

fn http() -> reqwest::Client {
    reqwest::Client::builder().no_proxy().build().unwrap()
}

fn header(answer: &reqwest::Response, name: &str) -> String {
    answer
        .headers()
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned()
}

/// The page links its assets under one version; each is served with its content type, kept a
/// year under that version, and answered 304 when the browser already has it. Every answer
/// carries the policy that allows only this server, its WebSocket included.
#[actix_rt::test]
async fn the_page_and_its_assets_are_served_from_the_binary() {
    let server = TestServer::start().await;
    let base = format!("http://127.0.0.1:{}", server.port());
    let page = http().get(format!("{base}/")).send().await.unwrap();
    let policy = header(&page, "content-security-policy");
    let etag = header(&page, "etag");
    assert_eq!(
        (
            page.status().as_u16(),
            header(&page, "content-type"),
            header(&page, "cache-control"),
            header(&page, "x-content-type-options"),
        ),
        (
            200,
            "text/html; charset=utf-8".to_owned(),
            "no-cache".to_owned(),
            "nosniff".to_owned()
        )
    );
    let host = format!("127.0.0.1:{}", server.port());
    assert_eq!(
        policy,
        format!(
            "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
             connect-src 'self' ws://{host} wss://{host}; base-uri 'none'; form-action 'none'; \
             frame-ancestors 'none'"
        )
    );
    let html = page.text().await.unwrap();
    let version = etag.trim_matches('"').to_owned();
    assert!(
        html.contains(&format!("/assets/{version}/app.js")),
        "{html}"
    );
    assert!(
        !html.contains("http://") && !html.contains("https://"),
        "{html}"
    );

    let again = http()
        .get(format!("{base}/"))
        .header("If-None-Match", &etag)
        .send()
        .await
        .unwrap();
    assert_eq!(again.status().as_u16(), 304);

    let mut kinds = Vec::new();
    for name in ["app.js", "style.css", "icon.svg"] {
        let asset = http()
            .get(format!("{base}/assets/{version}/{name}"))
            .send()
            .await
            .unwrap();
        kinds.push((
            asset.status().as_u16(),
            header(&asset, "content-type"),
            header(&asset, "cache-control"),
        ));
    }
    let year = "public, max-age=31536000, immutable".to_owned();
    assert_eq!(
        kinds,
        vec![
            (
                200,
                "text/javascript; charset=utf-8".to_owned(),
                year.clone()
            ),
            (200, "text/css; charset=utf-8".to_owned(), year.clone()),
            (200, "image/svg+xml".to_owned(), year),
        ]
    );
    let old = http()
        .get(format!("{base}/assets/0123/app.js"))
        .send()
        .await
        .unwrap();
    let missing = http()
        .get(format!("{base}/assets/{version}/secrets.txt"))
        .send()
        .await
        .unwrap();
    assert_eq!(
        (
            old.status().as_u16(),
            header(&old, "cache-control"),
            missing.status().as_u16()
        ),
        (200, "no-cache".to_owned(), 404)
    );
    server.stop().await;
}

/// A WebSocket upgrade on `/` (and on `/ws`) is still the protocol, page or no page.
#[actix_rt::test]
async fn an_upgrade_on_the_root_is_still_the_websocket() {
    let server = TestServer::start().await;
    for url in [format!("ws://127.0.0.1:{}/", server.port()), server.url()] {
        let mut client = RpcClient::connect(&url).await.unwrap();
        assert_eq!(client.call("ping", json!({})).await.unwrap(), json!({}));
    }
    server.stop().await;
}

/// The page says whether the server needs a token (`<body data-token>`), so it asks for one
/// before it connects; its ETag changes with that, so a page kept from before the first token
/// was made is not reused.
#[actix_rt::test]
async fn the_page_says_whether_a_token_is_needed() {
    let server = TestServer::start().await;
    let base = format!("http://127.0.0.1:{}", server.port());
    let open = http().get(format!("{base}/")).send().await.unwrap();
    let open_etag = header(&open, "etag");
    let open_html = open.text().await.unwrap();
    let mut conn = rummy_store::database::open(&server.database()).unwrap();
    let ops = rummy_store::tokens::NewToken {
        user: "ops".into(),
        admin: true,
        projects: Vec::new(),
        expires_at: None,
    };
    rummy_store::tokens::create(&mut conn, &ops, &[4; 32], rummy_provider::time::Millis(1))
        .unwrap();
    let closed = http()
        .get(format!("{base}/"))
        .header("If-None-Match", &open_etag)
        .send()
        .await
        .unwrap();
    let (status, closed_etag) = (closed.status().as_u16(), header(&closed, "etag"));
    let closed_html = closed.text().await.unwrap();
    assert_eq!(
        (
            open_html.contains("<body data-token=\"none\">"),
            status,
            closed_etag == format!("{}-token\"", open_etag.trim_end_matches('"')),
            closed_html.contains("<body data-token=\"required\">"),
        ),
        (true, 200, true, true)
    );
    server.stop().await;
}
