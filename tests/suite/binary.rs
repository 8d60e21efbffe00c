//! The built binary: its start-up line on stdout and a clean exit on SIGTERM.

use rummy_testkit::RpcClient;
use serde_json::json;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// A `rummy serve` child and its stdout lines as they arrive (`None` at end of output).
struct Served {
    child: Child,
    lines: mpsc::Receiver<Option<String>>,
    port: u16,
}

/// Starts the binary on a free port and waits for its start-up line.
fn serve(home: &std::path::Path, stderr: Stdio) -> Served {
    let mut child = Command::new(env!("CARGO_BIN_EXE_rummy"))
        .arg("serve")
        .env_clear()
        .env("PORT", "0")
        .env("RUMMY_HOME", home)
        .stdout(Stdio::piped())
        .stderr(stderr)
        .spawn()
        .expect("binary starts");
    let stdout = child.stdout.take().unwrap();
    let (tx, lines) = mpsc::channel::<Option<String>>();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(Some(line));
        }
        let _ = tx.send(None);
    });
    let line = lines
        .recv_timeout(Duration::from_secs(30))
        .unwrap()
        .expect("a start-up line");
    let port: u16 = line
        .strip_prefix("rummy listening on ws://127.0.0.1:")
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("unexpected start-up line {line:?}"));
    Served { child, lines, port }
}

/// Sends SIGTERM and waits up to 10 s for the exit.
fn terminate(child: &mut Child) -> ExitStatus {
    let status = Command::new("kill")
        .arg("-TERM")
        .arg(child.id().to_string())
        .status()
        .unwrap();
    assert!(status.success());
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(exit) = child.try_wait().unwrap() {
            return exit;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            panic!("did not exit within 10 s of SIGTERM");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

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
    let mut served = serve(home.path(), Stdio::null());
    answers_a_ping(served.port).await;

    let exit = terminate(&mut served.child);
    assert!(exit.success(), "exit status {exit:?}");
    assert_eq!(
        served.lines.recv_timeout(Duration::from_secs(5)).unwrap(),
        None,
        "stdout has exactly one line"
    );
    assert!(home.path().join("rummy.db").exists());
}

/// A log reader that went away (`rummy serve 2>&1 | head -1`) neither takes the server down nor
/// keeps it from stopping: a failed log write is dropped, not a panic in the task that logged.
#[actix_rt::test]
async fn a_closed_log_stream_neither_stops_the_server_nor_keeps_it_running() {
    let home = tempfile::TempDir::new().unwrap();
    let mut served = serve(home.path(), Stdio::piped());
    drop(served.child.stderr.take());
    answers_a_ping(served.port).await;

    let exit = terminate(&mut served.child);
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
