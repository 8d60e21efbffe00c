//! Concurrent runs benchmark (QUALITY.md benchmark 2): N runs × 3 turns against the fake provider in its own process with 50 ms latency.
//!
//! `cargo run --release -p rummy-bench --bin runs -- 20 200 1000` prints, per N:
//! wall time, turns/s, run latency p50/p99, server CPU per turn, total CPU
//! (server + provider process), peak RSS, and achieved ÷ latency-bound ratio.
//! The server runs in this process (so its CPU and RSS are this process's);
//! the fake provider runs in a child process (`runs --fake-provider <ms>`).

use rummy::config::{Config, ModelSeed, OpenAiConfig, ProviderLimits};
use rummy_bench::quantile;
use rummy_testkit::{FakeProvider, Reply, RpcClient};
use serde_json::json;
use std::io::{BufRead, BufReader, Read};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const TURNS: u32 = 3;
const LATENCY_MS: u64 = 50;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--fake-provider") {
        return fake_provider(
            args.get(1)
                .and_then(|a| a.parse().ok())
                .unwrap_or(LATENCY_MS),
        );
    }
    let sizes: Vec<usize> = if args.is_empty() {
        vec![20, 200, 1000]
    } else {
        args.iter().filter_map(|a| a.parse().ok()).collect()
    };
    raise_open_file_limit();
    for n in sizes {
        if let Err(e) = bench(n) {
            eprintln!("runs={n}: failed: {e}");
            std::process::exit(1);
        }
    }
}

/// The model's reply on turn `turn` (1-based): a fact and a 102 until the last turn concludes 200.
fn reply_for_turn(turn: u32) -> String {
    let status = if turn >= TURNS { 200 } else { 102 };
    format!("<set path=\"known://step_{turn}\">step {turn} noted</set>\n<update status=\"{status}\">step {turn} done</update>")
}

/// The child process: answers every request after `latency_ms` until stdin closes; the turn is
/// read from the request (one `<update` in `<performed>` per earlier turn of the loop).
fn fake_provider(latency_ms: u64) {
    let Ok(provider) = FakeProvider::start() else {
        std::process::exit(1)
    };
    provider.set_responder(move |body| {
        let user = body["messages"][1]["content"].as_str().unwrap_or_default();
        let earlier = u32::try_from(user.matches("<update ").count()).unwrap_or(TURNS);
        Reply::content(reply_for_turn(earlier + 1)).delay(Duration::from_millis(latency_ms))
    });
    println!("{}", provider.base_url());
    let _ = std::io::stdin().read_to_end(&mut Vec::new());
}

/// Sockets for 1,000 runs' worth of connections need more than the common default of 1,024 descriptors.
fn raise_open_file_limit() {
    if let Err(e) = rlimit::increase_nofile_limit(65_536) {
        eprintln!("could not raise the open-file limit: {e}");
    }
}

fn cpu_seconds(pid: &str) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let fields: Vec<&str> = stat
        .rsplit(')')
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    // utime and stime are fields 14 and 15 of /proc/<pid>/stat (12 and 13 after the comm field).
    let ticks: f64 = fields.get(11..13).map_or(0.0, |f| {
        f.iter().filter_map(|v| v.parse::<f64>().ok()).sum()
    });
    ticks / 100.0
}

fn peak_rss_mb() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

fn bench(n: usize) -> Result<(), String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut child = Command::new(exe)
        .args(["--fake-provider", &LATENCY_MS.to_string()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| e.to_string())?;
    let mut line = String::new();
    BufReader::new(child.stdout.take().ok_or("no stdout")?)
        .read_line(&mut line)
        .map_err(|e| e.to_string())?;
    let base = line.trim().to_owned();
    let child_pid = child.id().to_string();

    let home = tempfile::TempDir::new().map_err(|e| e.to_string())?;
    let project = tempfile::TempDir::new().map_err(|e| e.to_string())?;
    for i in 0..20 {
        std::fs::write(
            project.path().join(format!("file_{i:02}.txt")),
            format!("line {i}\n").repeat(20),
        )
        .map_err(|e| e.to_string())?;
    }
    let mut config = Config::with_home(home.path().to_path_buf());
    config.port = 0;
    config.providers.limits.insert(
        "openai".into(),
        ProviderLimits {
            concurrency: n.max(8),
            ..ProviderLimits::default()
        },
    );
    config.models = vec![ModelSeed {
        alias: "fast".into(),
        actual: "openai/fake".into(),
        context_length: None,
        fallback: None,
    }];
    config.providers.openai = Some(OpenAiConfig {
        base_url: base,
        api_key: None,
    });

    let system = actix_rt::System::new();
    let result = system.block_on(async move {
        let server = rummy::serve(config, std::future::pending()).await.map_err(|e| e.to_string())?;
        let url = server.ws_url();
        let mut client = RpcClient::connect(&url).await.map_err(|e| format!("{e:?}"))?;
        client.set_timeout(Duration::from_secs(600));
        let root = project.path().display().to_string();
        client.call("rummy/hello", json!({ "name": "bench", "projectRoot": root })).await.map_err(|e| format!("{e:?}"))?;
        let cpu_before = cpu_seconds("self");
        let child_before = cpu_seconds(&child_pid);
        let started = Instant::now();
        let mut starts = std::collections::HashMap::new();
        for i in 0..n {
            let alias = format!("r{i}");
            client
                .call("set", json!({ "path": format!("run://{alias}"), "body": "Work", "attributes": { "model": "fast" } }))
                .await
                .map_err(|e| format!("{e:?}"))?;
            starts.insert(alias, Instant::now());
        }
        let mut latencies = Vec::with_capacity(n);
        let record = |state: &serde_json::Value,
                      starts: &mut std::collections::HashMap<String, Instant>,
                      latencies: &mut Vec<Duration>| {
            if state["status"] == json!(200) {
                if let Some(start) = state["run"].as_str().and_then(|r| starts.remove(r)) {
                    latencies.push(start.elapsed());
                }
            }
        };
        while !starts.is_empty() {
            // Take one run/state (waiting if need be), then everything else buffered, so the
            // client's buffer of ui/render and run/progress never grows.
            let state = client
                .next_notification("run/state", Duration::from_secs(600))
                .await
                .map_err(|e| format!("{e:?}"))?;
            record(&state, &mut starts, &mut latencies);
            for message in client.drain_notifications() {
                if message["method"] == json!("run/state") {
                    record(&message["params"], &mut starts, &mut latencies);
                }
            }
        }
        let wall = started.elapsed();
        let server_cpu = cpu_seconds("self") - cpu_before;
        let provider_cpu = cpu_seconds(&child_pid) - child_before;
        latencies.sort_unstable();
        let turns = (n as f64) * f64::from(TURNS);
        let turns_per_s = turns / wall.as_secs_f64();
        let bound = n as f64 / (LATENCY_MS as f64 / 1000.0);
        println!(
            "runs={n:<5} turns={turns:<6} wall={:>7.2}s turns/s={turns_per_s:>8.1} latency p50={:>7.0?} p99={:>7.0?} \
             server_cpu/turn={:>6.2}ms total_cpu={:>6.2}s (server {server_cpu:.2}s + provider {provider_cpu:.2}s) \
             peak_rss={:>6.1}MB achieved/bound={:.2}",
            wall.as_secs_f64(),
            quantile(&latencies, 0.5),
            quantile(&latencies, 0.99),
            server_cpu * 1000.0 / turns,
            server_cpu + provider_cpu,
            peak_rss_mb(),
            turns_per_s / bound,
        );
        client.close().await;
        server.stop().await;
        Ok::<(), String>(())
    });
    drop(child.stdin.take());
    let _ = child.wait();
    result
}
