//! Concurrent runs benchmark: N runs × 3 turns against the fake provider in its own process with 50 ms latency.
//!
//! `cargo run --release -p rummy-bench --bin runs -- 20 200 1000` prints, per N:
//! wall time, turns/s, run latency p50/p99, server CPU per turn, total CPU
//! (server + provider process), peak RSS, and achieved ÷ latency-bound ratio.
//! The server runs in this process (its CPU is this process's less the bench
//! client's, which runs on a thread of its own; the RSS includes the client);
//! the fake provider runs in a child
//! process (`runs --fake-provider <ms> <turns>`). The context is 20 project files.
//!
//! One round at 20 runs lasts a fifth of a second, so its ratio moves with whatever else the
//! machine does in that moment; `--rounds=N` runs each size N times (a new server and provider
//! each time) and ends with the median round's turns/s and ratio.

use rummy_bench::quantile;
use rummy_bench::server::{
    config, hello, on_client_thread, own_cpu, peak_rss_mb, serve_fake_provider_if_child,
    start_params, thread_cpu, write_project, ProviderChild,
};
use rummy_client::results::Ack;
use rummy_client::Notification;
use std::collections::HashMap;
use std::time::{Duration, Instant};

const TURNS: u32 = 3;
const LATENCY_MS: u64 = 50;
const FILES: usize = 20;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if serve_fake_provider_if_child(&args) {
        return;
    }
    let sizes = rummy_bench::sizes(&args, &[20, 200, 1000]);
    let rounds = match args.iter().find_map(|a| a.strip_prefix("--rounds=")) {
        None => 1,
        Some(n) => match n.parse::<usize>() {
            Ok(n) if n >= 1 => n,
            _ => {
                eprintln!("--rounds= takes a number of rounds of at least 1, not {n:?}");
                std::process::exit(2);
            }
        },
    };
    // 1,000 runs' sockets need more than the common default of 1,024 descriptors.
    if let Err(e) = rlimit::increase_nofile_limit(65_536) {
        eprintln!("could not raise the open-file limit: {e}");
    }
    for n in sizes {
        let mut ratios = Vec::with_capacity(rounds);
        for _ in 0..rounds {
            match bench(n) {
                Ok(ratio) => ratios.push(ratio),
                Err(e) => {
                    eprintln!("runs={n}: failed: {e}");
                    std::process::exit(1);
                }
            }
        }
        if rounds > 1 {
            ratios.sort_by(f64::total_cmp);
            let median = ratios[rounds / 2];
            println!(
                "runs={n:<5} median of {rounds} rounds: turns/s={:>8.1} achieved/bound={median:.2} (rounds {:.2}–{:.2})",
                median * bound(n),
                ratios[0],
                ratios[rounds - 1],
            );
        }
    }
}

/// Turns per second if every turn took exactly the provider's latency.
fn bound(n: usize) -> f64 {
    n as f64 / (LATENCY_MS as f64 / 1000.0)
}

/// One round at `n` runs: prints its figures and answers its achieved ÷ bound ratio.
fn bench(n: usize) -> Result<f64, String> {
    let provider = ProviderChild::spawn(LATENCY_MS, TURNS)?;
    let home = tempfile::TempDir::new().map_err(|e| e.to_string())?;
    let project = tempfile::TempDir::new().map_err(|e| e.to_string())?;
    write_project(project.path(), FILES)?;
    let config = config(home.path(), &provider.base_url, n.max(8));

    let system = actix_rt::System::new();
    system.block_on(async move {
        let server = rummy::serve(config, std::future::pending())
            .await
            .map_err(|e| e.to_string())?;
        let url = server.ws_url();
        let root = project.path().to_path_buf();
        let cpu_before = own_cpu();
        let provider_before = provider.cpu();
        let (wall, mut latencies, phases, client_cpu) =
            on_client_thread(move || drive(url, root, n)).await?;
        let server_cpu = (own_cpu() - cpu_before).saturating_sub(client_cpu);
        let provider_cpu = provider.cpu() - provider_before;
        latencies.sort_unstable();
        let turns = (n as f64) * f64::from(TURNS);
        let turns_per_s = turns / wall.as_secs_f64();
        let ratio = turns_per_s / bound(n);
        println!(
            "runs={n:<5} turns={turns:<6} wall={:>7.2}s turns/s={turns_per_s:>8.1} latency p50={:>7.0?} p99={:>7.0?} \
             server_cpu/turn={:>6.2}ms total_cpu={:>6.2}s (server {:.2}s + client {:.2}s + provider {:.2}s) \
             peak_rss={:>6.1}MB achieved/bound={:.2}",
            wall.as_secs_f64(),
            quantile(&latencies, 0.5),
            quantile(&latencies, 0.99),
            server_cpu.as_secs_f64() * 1000.0 / turns,
            (server_cpu + client_cpu + provider_cpu).as_secs_f64(),
            server_cpu.as_secs_f64(),
            client_cpu.as_secs_f64(),
            provider_cpu.as_secs_f64(),
            peak_rss_mb(),
            ratio,
        );
        println!("runs={n:<5} {}", phases.line());
        server.stop().await;
        Ok::<f64, String>(ratio)
    })
}

/// What the client saw of one run: when its start went out, when each turn's model call began
/// (`run/progress` "thinking") and its reply was in ("processing"), and when it ended.
struct Seen {
    start: Instant,
    thinking: Vec<(i64, Instant)>,
    processing: Vec<(i64, Instant)>,
    done: Option<Instant>,
}

/// Where a round's run latency went, each segment over all runs, sorted.
#[derive(Default)]
struct Phases {
    /// Start request out → first model call.
    start: Vec<Duration>,
    /// Model call → reply in, less the provider's latency: the HTTP round trip's own cost.
    model: Vec<Duration>,
    /// Reply in → the next turn's model call: recording and dispatching the turn, the next
    /// read and assembly.
    between: Vec<Duration>,
    /// Last reply in → the run's final `run/state`.
    end: Vec<Duration>,
}

impl Phases {
    fn of(runs: &HashMap<String, Seen>) -> Phases {
        let mut p = Phases::default();
        let latency = Duration::from_millis(LATENCY_MS);
        for seen in runs.values() {
            let first = |marks: &[(i64, Instant)], turn: i64| {
                marks.iter().find(|(t, _)| *t == turn).map(|(_, at)| *at)
            };
            if let Some(t1) = first(&seen.thinking, 1) {
                p.start.push(t1 - seen.start);
            }
            for (turn, reply) in &seen.processing {
                if let Some(call) = first(&seen.thinking, *turn) {
                    p.model.push((*reply - call).saturating_sub(latency));
                }
                match first(&seen.thinking, turn + 1) {
                    Some(next) => p.between.push(next - *reply),
                    None => {
                        if let Some(done) = seen.done {
                            p.end.push(done.saturating_duration_since(*reply));
                        }
                    }
                }
            }
        }
        for segment in [&mut p.start, &mut p.model, &mut p.between, &mut p.end] {
            segment.sort_unstable();
        }
        p
    }

    /// One line: each segment's median and maximum in ms.
    fn line(&self) -> String {
        let ms = |d: Duration| d.as_secs_f64() * 1000.0;
        let pair =
            |s: &[Duration]| format!("{:.1}/{:.1}", ms(quantile(s, 0.5)), ms(quantile(s, 1.0)));
        format!(
            "phases p50/max ms: start {}  model beyond {LATENCY_MS} ms {}  between turns {}  end {}",
            pair(&self.start),
            pair(&self.model),
            pair(&self.between),
            pair(&self.end)
        )
    }
}

/// The client's side: starts `n` runs at once and waits for each to end; returns the wall
/// time, each run's latency, where the latency went, and this (client) thread's CPU.
async fn drive(
    url: String,
    root: std::path::PathBuf,
    n: usize,
) -> Result<(Duration, Vec<Duration>, Phases, Duration), String> {
    let mut client = hello(&url, &root, Duration::from_secs(600)).await?;
    let client_before = thread_cpu();
    let started = Instant::now();
    // Every start goes out before any answer is awaited, as when many clients start runs at
    // once; each run's latency counts from its own request.
    let mut runs: HashMap<String, Seen> = HashMap::new();
    let mut requests = Vec::with_capacity(n);
    for i in 0..n {
        let alias = format!("r{i}");
        let id = client
            .send("set", &start_params(&alias))
            .await
            .map_err(|e| e.to_string())?;
        runs.insert(
            alias,
            Seen {
                start: Instant::now(),
                thinking: Vec::new(),
                processing: Vec::new(),
                done: None,
            },
        );
        requests.push(id);
    }
    for id in requests {
        client
            .answer::<Ack>(id)
            .await
            .map_err(|e| format!("start {id}: {e}"))?;
    }
    let mut latencies = Vec::with_capacity(n);
    // Each notification as it is read, so its time is when it arrived.
    while latencies.len() < n {
        let message = client
            .next_notification(Some(Duration::from_secs(600)))
            .await
            .map_err(|e| e.to_string())?;
        let at = Instant::now();
        let Some(seen) = message.run().and_then(|r| runs.get_mut(r)) else {
            continue;
        };
        match &message {
            Notification::RunProgress(p) if p.status == "thinking" => {
                seen.thinking.push((p.turn, at));
            }
            Notification::RunProgress(p) if p.status == "processing" => {
                seen.processing.push((p.turn, at));
            }
            Notification::RunState(s) if s.status == 200 && seen.done.is_none() => {
                seen.done = Some(at);
                latencies.push(at - seen.start);
            }
            _ => {}
        }
    }
    let wall = started.elapsed();
    let client_cpu = thread_cpu() - client_before;
    client.close().await;
    Ok((wall, latencies, Phases::of(&runs), client_cpu))
}
