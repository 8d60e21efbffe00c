//! Turn overhead (QUALITY.md benchmark 1): server CPU per turn, the model's time excluded, at
//! 200 and 1,000 entries of context (materialisation and assembly included).
//!
//! `cargo run --release -p rummy-bench --bin turn -- 200 1000` runs, per size, runs of 3 turns
//! one after another against the fake provider in its own process (no latency), each over a
//! project of that many files, and prints the median and p99 of the server's CPU per turn: this
//! process's CPU less the bench client's, which runs on a thread of its own. Target: ≤ 1.2 ms
//! median at 200 entries.
//!
//! Every run is new, so each sample carries a run's creation and its loop's start (the first
//! turn reads the whole context; later turns only what changed) spread over its 3 turns.
//! `--turns=N` makes the runs N turns long: with two lengths, a turn in a running loop costs
//! (N·median(N) − 3·median(3)) ÷ (N − 3).
//!
//! The project does not change between runs, so once the server's watch of it is trusted (after
//! the first two loop starts, within the warm-up) a loop start does not walk it — as for a
//! project nobody edits between loops. With `--walk` the server does not watch files
//! (`RUMMY_WATCH_FILES=0`), so every loop start walks the project, as it does after a change.

use rummy_bench::report;
use rummy_bench::server::{
    config, hello, on_client_thread, own_cpu, serve_fake_provider_if_child, start_run, thread_cpu,
    write_project, ProviderChild,
};
use serde_json::json;
use std::time::Duration;

/// Turns per run unless `--turns=N` says otherwise.
const TURNS: u32 = 3;
const WARMUP_RUNS: usize = 5;
const RUNS: usize = 60;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if serve_fake_provider_if_child(&args) {
        return;
    }
    let turns = match args.iter().find_map(|a| a.strip_prefix("--turns=")) {
        None => TURNS,
        Some(n) => match n.parse::<u32>() {
            Ok(n) if n >= 1 => n,
            _ => {
                eprintln!("--turns= takes a number of turns of at least 1, not {n:?}");
                std::process::exit(2);
            }
        },
    };
    let sizes = rummy_bench::sizes(&args, &[200, 1000]);
    let walk = args.iter().any(|a| a == "--walk");
    for entries in sizes {
        match bench(entries, walk, turns) {
            Ok(per_turn) => {
                let target = if entries == 200 {
                    "≤ 1.2 ms median"
                } else {
                    "none"
                };
                let walking = if walk { ", walked" } else { "" };
                let length = if turns == TURNS {
                    String::new()
                } else {
                    format!(", {turns}-turn runs")
                };
                report(
                    &format!("server CPU per turn, {entries} entries{walking}{length}"),
                    &per_turn,
                    target,
                );
            }
            Err(e) => {
                eprintln!("entries={entries}: failed: {e}");
                std::process::exit(1);
            }
        }
    }
}

/// CPU per turn of each measured run, sorted.
fn bench(entries: usize, walk: bool, turns: u32) -> Result<Vec<Duration>, String> {
    let provider = ProviderChild::spawn(0, turns)?;
    let home = tempfile::TempDir::new().map_err(|e| e.to_string())?;
    let project = tempfile::TempDir::new().map_err(|e| e.to_string())?;
    write_project(project.path(), entries)?;
    let mut config = config(home.path(), &provider.base_url, 8);
    config.watch_files = !walk;

    let system = actix_rt::System::new();
    system.block_on(async move {
        let server = rummy::serve(config, std::future::pending())
            .await
            .map_err(|e| e.to_string())?;
        let url = server.ws_url();
        let root = project.path().to_path_buf();
        let per_turn = on_client_thread(move || drive(url, root, turns)).await;
        server.stop().await;
        per_turn
    })
}

/// The client's side: runs one after another, each sample the process's CPU over one run less
/// this (client) thread's.
async fn drive(url: String, root: std::path::PathBuf, turns: u32) -> Result<Vec<Duration>, String> {
    let mut client = hello(&url, &root, Duration::from_secs(60)).await?;
    let mut per_turn = Vec::with_capacity(RUNS);
    for i in 0..WARMUP_RUNS + RUNS {
        let alias = format!("t{i}");
        let (before, client_before) = (own_cpu(), thread_cpu());
        start_run(&mut client, &alias).await?;
        loop {
            let state = client
                .next_notification("run/state", Duration::from_secs(60))
                .await
                .map_err(|e| format!("{e:?}"))?;
            if state["run"] == json!(alias) && state["status"] == json!(200) {
                break;
            }
        }
        let spent = (own_cpu() - before).saturating_sub(thread_cpu() - client_before);
        client.drain_notifications();
        if i >= WARMUP_RUNS {
            per_turn.push(spent / turns);
        }
    }
    per_turn.sort_unstable();
    client.close().await;
    Ok(per_turn)
}
