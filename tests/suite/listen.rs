//! Where and how the server listens: a network bind needs tokens unless
//! `RUMMY_INSECURE` says otherwise, and `RUMMY_TLS_CERT`/`RUMMY_TLS_KEY` make it speak TLS.

use rummy::config::{Config, TlsFiles};
use rummy::ServeError;
use rummy_provider::time::Millis;
use rummy_store::tokens::{self, NewToken};
use std::net::{IpAddr, Ipv4Addr};
use std::path::PathBuf;
use tempfile::TempDir;

fn config_on(home: &TempDir, bind: IpAddr) -> Config {
    let mut config =
        crate::support::database::on_home_database(Config::with_home(home.path().to_path_buf()));
    config.port = 0;
    config.access.bind = bind;
    config
}

const ANY: IpAddr = IpAddr::V4(Ipv4Addr::UNSPECIFIED);

/// On a network bind, or behind a trusted proxy, a server with no token refuses to start and
/// says how to make one; with RUMMY_INSECURE it starts anyway.
#[actix_rt::test]
async fn a_network_without_tokens_is_refused_unless_insecure() {
    let home = TempDir::new().unwrap();
    let refused = rummy::serve(config_on(&home, ANY), std::future::pending()).await;
    match refused {
        Err(ServeError::Insecure { reach }) => assert_eq!(reach, "the network on 0.0.0.0"),
        Err(other) => panic!("{other}"),
        Ok(_) => panic!("served the network without tokens"),
    }
    let mut proxied = config_on(&home, IpAddr::V4(Ipv4Addr::LOCALHOST));
    proxied.access.trust_proxy = true;
    let refused = rummy::serve(proxied, std::future::pending()).await;
    assert!(
        matches!(refused, Err(ServeError::Insecure { .. })),
        "a proxied server without tokens started"
    );
    let mut insecure = config_on(&home, ANY);
    insecure.access.insecure = true;
    let handle = rummy::serve(insecure, std::future::pending())
        .await
        .expect("an insecure server starts");
    let mut client = rummy_testkit::RpcClient::connect(&handle.ws_url())
        .await
        .unwrap();
    assert_eq!(
        client.call("ping", serde_json::json!({})).await.unwrap(),
        serde_json::json!({})
    );
    handle.stop().await;
}

/// Once a token exists (made before the server ever started, as a container bootstraps), a
/// network bind starts.
#[actix_rt::test]
async fn a_network_bind_starts_once_a_token_exists() {
    let home = TempDir::new().unwrap();
    let config = config_on(&home, ANY);
    let mut conn = rummy_store::database::open(&config.database()).unwrap();
    let admin = NewToken {
        user: "ops".into(),
        admin: true,
        projects: Vec::new(),
        expires_at: None,
    };
    tokens::create(&mut conn, &admin, &[9; 32], Millis(0)).unwrap();
    drop(conn);
    let handle = rummy::serve(config, std::future::pending())
        .await
        .expect("starts with a token");
    assert!(handle.ws_url().starts_with("ws://127.0.0.1:"));
    handle.stop().await;
}

/// With a certificate and key the server speaks TLS: an HTTPS client that trusts the test CA
/// reads /health, and the WebSocket URL is wss://.
#[actix_rt::test]
async fn tls_serves_https() {
    let fixtures = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tls");
    let home = TempDir::new().unwrap();
    let mut config = config_on(&home, IpAddr::V4(Ipv4Addr::LOCALHOST));
    config.access.tls = Some(TlsFiles {
        cert: fixtures.join("server.pem"),
        key: fixtures.join("server.key"),
    });
    let handle = rummy::serve(config, std::future::pending())
        .await
        .expect("a TLS server starts");
    let url = handle.ws_url();
    assert!(url.starts_with("wss://127.0.0.1:"), "{url}");
    let ca =
        reqwest::Certificate::from_pem(&std::fs::read(fixtures.join("ca.pem")).unwrap()).unwrap();
    let client = reqwest::Client::builder()
        .add_root_certificate(ca)
        .build()
        .unwrap();
    let health = format!("https://localhost:{}/health", handle.addr().port());
    let body = client
        .get(&health)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&body).unwrap()["database"]["writable"],
        serde_json::json!(true),
        "{body}"
    );
    let plain = reqwest::get(format!("http://127.0.0.1:{}/health", handle.addr().port())).await;
    assert!(plain.is_err() || !plain.unwrap().status().is_success());
    handle.stop().await;
}

/// A certificate file that holds no certificate stops the start with the file named.
#[actix_rt::test]
async fn an_unusable_certificate_is_named() {
    let home = TempDir::new().unwrap();
    let empty = home.path().join("empty.pem");
    std::fs::write(&empty, "").unwrap();
    let mut config = config_on(&home, IpAddr::V4(Ipv4Addr::LOCALHOST));
    config.access.tls = Some(TlsFiles {
        cert: empty.clone(),
        key: empty.clone(),
    });
    match rummy::serve(config, std::future::pending()).await {
        Err(ServeError::Tls(message)) => {
            assert_eq!(
                message,
                format!("{}: no certificate in it", empty.display())
            )
        }
        Err(other) => panic!("{other}"),
        Ok(_) => panic!("started without a certificate"),
    }
}
