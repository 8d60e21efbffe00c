//! Cluster benchmark: 1,000 runs × 3 turns against the fake provider with
//! 50 ms latency, served by the built `rummy` binary in child processes, in three set-ups:
//! (a) one process on SQLite, (b) one process on PostgreSQL, (c) two processes on one
//! PostgreSQL database, the clients spread over both.
//!
//! ```sh
//! cargo build --release -p rummy && cargo run --release -p rummy-bench --bin cluster
//! ```
//!
//! prints, per set-up: turns/s over the wall time, server CPU per turn (the `rummy` processes'
//! utime + stime from `/proc/<pid>/stat`, before and after, over the turns), and for PostgreSQL
//! the CPU of that database's PostgreSQL backends per turn besides (read the same way, when the
//! server runs on this machine), and the p50/p99 run latency (the start call out → the run's
//! final `run/state` 200 at its client). Every run must end 200 after exactly 3 turns — as its
//! client heard it, and as `getRuns` says afterwards — or the bench fails, naming the runs.
//!
//! `cluster 200` runs 200 runs instead; `--only=a,c` runs only those set-ups; `--lease-ms=N`
//! gives the servers `RUMMY_LEASE_MS=N` (by default they keep theirs, 15 s). Without
//! `RUMMY_TEST_POSTGRES_URL` (a role that may create databases) only (a) runs; each PostgreSQL
//! set-up creates a database of its own there and drops it afterwards. The server binary is
//! `rummy` beside this one (`target/release/rummy`), or `RUMMY_BENCH_SERVER`.
//!
//! Each client is one WebSocket bound to a project of its own (20 files) that starts 50 runs
//! and watches them to the end, so no notification is fanned out to clients that ignore it; in
//! (c) the clients alternate between the processes, and so do the runs they start. The
//! provider's concurrency (`RUMMY_OPENAI_CONCURRENCY`) is twice the runs: a limit is divided
//! among the live processes, so with two each still has a place for every run, and no fair-use
//! limit is set (each is off unless set). A server's stderr goes to a log file, kept and named
//! when a set-up fails. The fake provider runs in a child process
//! (`cluster --fake-provider <ms> <turns>`), as in `runs`.

mod processes;
mod watch;

use processes::{server_binary, Database, Server};
use watch::{hello, watch};

use rummy_bench::quantile;
use rummy_bench::server::{serve_fake_provider_if_child, write_project, ProviderChild};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const TURNS: u32 = 3;
const LATENCY_MS: u64 = 50;
/// Files in each client's project.
const FILES: usize = 20;
/// Runs each client (one WebSocket) starts and watches.
const RUNS_PER_CLIENT: usize = 50;
/// A client that hears nothing of its unfinished runs for this long gives up on them.
const SILENCE: Duration = Duration::from_secs(120);
/// How long a server may take to print its start-up line (PostgreSQL migrations included).
const START_UP: Duration = Duration::from_secs(120);

/// One of the three set-ups.
#[derive(Clone, Copy)]
struct Setup {
    label: char,
    name: &'static str,
    postgres: bool,
    processes: usize,
}

const SETUPS: [Setup; 3] = [
    Setup {
        label: 'a',
        name: "sqlite, 1 process",
        postgres: false,
        processes: 1,
    },
    Setup {
        label: 'b',
        name: "postgres, 1 process",
        postgres: true,
        processes: 1,
    },
    Setup {
        label: 'c',
        name: "postgres, 2 processes",
        postgres: true,
        processes: 2,
    },
];

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if serve_fake_provider_if_child(&args) {
        return;
    }
    let runs = rummy_bench::sizes(&args, &[1000])[0];
    if runs == 0 {
        eprintln!("the bench needs at least one run");
        std::process::exit(2);
    }
    let lease_ms: Option<u64> = match args.iter().find_map(|a| a.strip_prefix("--lease-ms=")) {
        None => None,
        Some(ms) => match ms.parse::<u64>() {
            Ok(ms) if ms >= 1 => Some(ms),
            _ => {
                eprintln!("--lease-ms= takes a number of milliseconds above zero, not {ms:?}");
                std::process::exit(2);
            }
        },
    };
    let only: Option<String> = args
        .iter()
        .find_map(|a| a.strip_prefix("--only="))
        .map(str::to_owned);
    // A thousand runs' sockets (clients, server, provider) need more than the usual 1,024.
    if let Err(e) = rlimit::increase_nofile_limit(65_536) {
        eprintln!("could not raise the open-file limit: {e}");
    }
    let server = match server_binary() {
        Ok(path) => path,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    let postgres = std::env::var("RUMMY_TEST_POSTGRES_URL")
        .ok()
        .filter(|u| !u.is_empty());
    if postgres.is_none() {
        println!(
            "(b) and (c) need PostgreSQL: set RUMMY_TEST_POSTGRES_URL=postgres://user:password@host:port/db (a role that may create databases)"
        );
    }
    let mut failed = false;
    for setup in SETUPS {
        if only.as_ref().is_some_and(|o| !o.contains(setup.label)) {
            continue;
        }
        if setup.postgres && postgres.is_none() {
            continue;
        }
        match bench(setup, runs, &server, postgres.as_deref(), lease_ms) {
            Ok(line) => println!("({}) {:<22} {line}", setup.label, setup.name),
            Err(e) => {
                println!("({}) {:<22} FAILED: {e}", setup.label, setup.name);
                failed = true;
            }
        }
    }
    if failed {
        std::process::exit(1);
    }
}

/// One set-up at `runs` runs: its figures line, or what failed (its logs kept and named).
fn bench(
    setup: Setup,
    runs: usize,
    binary: &Path,
    admin: Option<&str>,
    lease_ms: Option<u64>,
) -> Result<String, String> {
    let logs = tempfile::Builder::new()
        .prefix(&format!("rummy-cluster-bench-{}-", setup.label))
        .tempdir()
        .map_err(|e| e.to_string())?;
    let result = measure(setup, runs, binary, admin, lease_ms, logs.path());
    if result.is_err() {
        // The servers' logs outlive a failure.
        let kept = logs.keep();
        return result.map_err(|e| format!("{e} (server logs in {})", kept.display()));
    }
    result
}

/// Starts the provider, the database and the servers of `setup`, drives `runs` runs through
/// them and reads the figures.
fn measure(
    setup: Setup,
    runs: usize,
    binary: &Path,
    admin: Option<&str>,
    lease_ms: Option<u64>,
    logs: &Path,
) -> Result<String, String> {
    let provider = ProviderChild::spawn(LATENCY_MS, TURNS)?;
    let database = match (setup.postgres, admin) {
        (true, Some(admin)) => Some(Database::create(admin, setup.label)?),
        (true, None) => return Err("no PostgreSQL server".into()),
        (false, _) => None,
    };
    let mut vars = vec![
        ("OPENAI_BASE_URL", provider.base_url.clone()),
        ("RUMMY_MODEL_fast", "openai/fake".to_owned()),
        ("RUMMY_CONTEXT_fast", "131072".to_owned()),
        ("RUMMY_OPENAI_CONCURRENCY", (2 * runs.max(4)).to_string()),
    ];
    if let Some(db) = &database {
        vars.push(("RUMMY_DATABASE_URL", db.url.clone()));
    }
    if let Some(ms) = lease_ms {
        vars.push(("RUMMY_LEASE_MS", ms.to_string()));
    }
    let homes = (0..setup.processes)
        .map(|_| tempfile::TempDir::new().map_err(|e| e.to_string()))
        .collect::<Result<Vec<_>, _>>()?;
    let mut servers = Vec::with_capacity(setup.processes);
    for (i, home) in homes.iter().enumerate() {
        let log = logs.join(format!("server-{i}.log"));
        servers.push(
            Server::start(binary, home.path(), &vars, log)
                .map_err(|e| format!("server {i}: {e}"))?,
        );
    }
    let clients = runs.div_ceil(RUNS_PER_CLIENT);
    let projects = (0..clients)
        .map(|_| {
            let dir = tempfile::TempDir::new().map_err(|e| e.to_string())?;
            write_project(dir.path(), FILES)?;
            Ok(dir)
        })
        .collect::<Result<Vec<_>, String>>()?;
    let plan: Vec<Plan> = (0..clients)
        .map(|c| Plan {
            url: servers[c % servers.len()].ws_url(),
            root: projects[c].path().to_path_buf(),
            runs: (c * RUNS_PER_CLIENT..((c + 1) * RUNS_PER_CLIENT).min(runs))
                .map(|i| format!("r{i}"))
                .collect(),
        })
        .collect();

    let cpu_of = |servers: &[Server]| servers.iter().map(Server::cpu).sum::<Duration>();
    let system = actix_rt::System::new();
    let outcome = system.block_on(async {
        let mut connected = Vec::with_capacity(plan.len());
        for (i, p) in plan.iter().enumerate() {
            let client = hello(&p.url, &format!("bench{i}"), &p.root).await?;
            connected.push((client, p.runs.clone()));
        }
        let server_before = cpu_of(&servers);
        let db_before = database
            .as_ref()
            .map(Database::backends_cpu)
            .unwrap_or_default();
        let started = Instant::now();
        let tasks: Vec<_> = connected
            .into_iter()
            .map(|(client, aliases)| actix_rt::spawn(watch(client, aliases)))
            .collect();
        let mut watched = Vec::with_capacity(tasks.len());
        let mut errors = Vec::new();
        for task in tasks {
            match task.await {
                Ok(Ok(w)) => watched.push(w),
                Ok(Err(e)) => errors.push(e),
                Err(e) => errors.push(format!("a client task failed: {e}")),
            }
        }
        let server_cpu = cpu_of(&servers) - server_before;
        let db_after = database
            .as_ref()
            .map(Database::backends_cpu)
            .unwrap_or_default();
        // A backend that began during the measurement counts from zero; one that ended is lost.
        let db_cpu: Duration = db_after
            .iter()
            .map(|(pid, after)| {
                after.saturating_sub(db_before.get(pid).copied().unwrap_or_default())
            })
            .sum();
        let ended = watched.iter().filter_map(|w| w.last_done).max();
        // What the servers say of each run, afterwards.
        for w in &mut watched {
            if let Err(e) = w.check_stored().await {
                errors.push(e);
            }
        }
        let mut statuses: BTreeMap<String, usize> = BTreeMap::new();
        for w in &watched {
            errors.extend(w.problems());
            for seen in w.runs.values() {
                let status = seen
                    .end
                    .map_or("none".to_owned(), |(s, _, _)| s.to_string());
                *statuses.entry(status).or_default() += 1;
            }
        }
        if !errors.is_empty() {
            let ended: Vec<String> = statuses.iter().map(|(s, n)| format!("{n} × {s}")).collect();
            errors.insert(0, format!("runs ended: {}", ended.join(", ")));
        }
        Ok::<_, String>(Measured {
            wall: ended.map_or(started.elapsed(), |e| e - started),
            latencies: watched.iter().flat_map(|w| w.latencies()).collect(),
            turn_ends: watched.iter().flat_map(|w| w.turn_ends()).collect(),
            server_cpu,
            db_cpu: database.as_ref().map(|_| db_cpu),
            errors,
        })
    })?;
    for server in &mut servers {
        if let Some(exit) = server.exited() {
            return Err(format!("a server stopped during the bench{exit}"));
        }
    }
    if !outcome.errors.is_empty() {
        let shown: Vec<&str> = outcome.errors.iter().take(10).map(String::as_str).collect();
        return Err(format!(
            "{} problem(s): {}{}",
            outcome.errors.len(),
            shown.join("; "),
            if outcome.errors.len() > shown.len() {
                "; …"
            } else {
                ""
            }
        ));
    }
    let mut latencies = outcome.latencies;
    latencies.sort_unstable();
    if latencies.len() != runs {
        return Err(format!("{} of {runs} runs ended", latencies.len()));
    }
    let turns = runs as f64 * f64::from(TURNS);
    let per_turn = |cpu: Duration| cpu.as_secs_f64() * 1000.0 / turns;
    let db = outcome.db_cpu.map_or(String::new(), |cpu| {
        format!(" (+ postgres backends {:.2}ms)", per_turn(cpu))
    });
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let ends: Vec<String> = (1..=i64::from(TURNS))
        .map(|turn| {
            let mut after: Vec<Duration> = outcome
                .turn_ends
                .iter()
                .filter(|(t, _)| *t == turn)
                .map(|(_, d)| *d)
                .collect();
            after.sort_unstable();
            format!(
                "turn {turn} {:.0}/{:.0}",
                ms(quantile(&after, 0.5)),
                ms(quantile(&after, 0.99))
            )
        })
        .collect();
    Ok(format!(
        "runs={runs} turns={turns} wall={:>6.2}s turns/s={:>7.1} server_cpu/turn={:>5.2}ms{db} latency p50={:>5.0}ms p99={:>5.0}ms; all {runs} runs ended 200 after {TURNS} turns\n    turn ends heard after the start, p50/p99 ms: {}",
        outcome.wall.as_secs_f64(),
        turns / outcome.wall.as_secs_f64(),
        per_turn(outcome.server_cpu),
        ms(quantile(&latencies, 0.5)),
        ms(quantile(&latencies, 0.99)),
        ends.join("  "),
    ))
}

/// One client's share: the server it talks to, its project, the runs it starts.
struct Plan {
    url: String,
    root: PathBuf,
    runs: Vec<String>,
}

/// What a set-up measured.
struct Measured {
    wall: Duration,
    latencies: Vec<Duration>,
    /// Each turn end heard: the turn and how long after its run's start.
    turn_ends: Vec<(i64, Duration)>,
    server_cpu: Duration,
    db_cpu: Option<Duration>,
    errors: Vec<String>,
}
