//! The built binary: its start-up line on stdout and a clean exit on SIGTERM.

use crate::support::process::ServerProcess;
use rummy_testkit::RpcClient;
use serde_json::json;
use std::process::{Command, Stdio};
use std::time::Duration;

/// Connects to the server on `port`, pings it and closes.
async fn answers_a_ping(port: u16) {
    let mut client = RpcClient::connect(&format!("ws://127.0.0.1:{port}/"))
        .await
        .unwrap();
    assert_eq!(client.call("ping", json!({})).await.unwrap(), json!({}));
    client.close().await;
}

/// `rummy serve` prints exactly one stdout line once it accepts connections, serves, and exits 0 on SIGTERM.
#[actix_rt::test]
async fn binary_prints_its_address_and_stops_on_sigterm() {
    let home = tempfile::TempDir::new().unwrap();
    let mut served = ServerProcess::start(home.path(), &[], Stdio::null());
    answers_a_ping(served.port).await;

    let exit = served.terminate();
    assert!(exit.success(), "exit status {exit:?}");
    assert_eq!(
        served.lines.recv_timeout(Duration::from_secs(5)).unwrap(),
        None,
        "stdout has exactly one line"
    );
    match crate::support::database::of_home(home.path()) {
        rummy_store::location::Location::Sqlite(db) => assert!(db.exists()),
        // The server used its PostgreSQL database and made no file of its own.
        rummy_store::location::Location::Postgres(_) => {
            assert!(!home.path().join("rummy.db").exists())
        }
    }
}

/// A log reader that went away (`rummy serve 2>&1 | head -1`) neither takes the server down nor
/// keeps it from stopping: a failed log write is dropped, not a panic in the task that logged.
#[actix_rt::test]
async fn a_closed_log_stream_neither_stops_the_server_nor_keeps_it_running() {
    let home = tempfile::TempDir::new().unwrap();
    let mut served = ServerProcess::start(home.path(), &[], Stdio::piped());
    drop(served.child.stderr.take());
    answers_a_ping(served.port).await;

    let exit = served.terminate();
    assert!(exit.success(), "exit status {exit:?}");
}

/// A port already in use is a clear error and a non-zero exit.
#[actix_rt::test]
async fn port_in_use_fails_clearly() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let home = tempfile::TempDir::new().unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_rummy"))
        .arg("serve")
        .env_clear()
        .env("PORT", port.to_string())
        .env("RUMMY_HOME", home.path())
        .envs(crate::support::database::vars(home.path()))
        .output()
        .unwrap();
    assert!(!output.status.success());
    assert!(output.stdout.is_empty());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(&format!("cannot listen on 127.0.0.1:{port}")),
        "{stderr}"
    );
}

/// A start-up line that cannot be written is reported as the I/O failure it is, not as a port
/// that could not be bound, and the process ends non-zero.
#[actix_rt::test]
async fn an_unwritable_stdout_is_reported_as_such() {
    let home = tempfile::TempDir::new().unwrap();
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_rummy"))
        .arg("serve")
        .env_clear()
        .env("PORT", "0")
        .env("RUMMY_HOME", home.path())
        .envs(crate::support::database::vars(home.path()))
        .stdout(full)
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("rummy: server I/O failed: No space left on device"),
        "{stderr}"
    );
    assert!(!stderr.contains("cannot listen"), "{stderr}");
}
