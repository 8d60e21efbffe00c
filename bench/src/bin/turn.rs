//! Turn overhead: server CPU per turn, the model's time excluded, at
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
//! `--latency=MS` makes the provider answer after MS milliseconds, as a real model does after
//! seconds. The server idles while it waits, so the client can read the CPU then ([`SETTLE`]
//! after each `run/progress thinking`, which a turn sends just before its call) and cut every
//! run at its calls: it also prints a turn of the running loop (call → next call: the reply's
//! record and dispatch, the turn's end, the next turn's read, assembly and call), the run's start
//! (start request → first call) and its end (last call → final `run/state`). Work after an idle
//! gap costs more than the same work back to back, and the WAL checkpoint (every 200 ms) then
//! falls to fewer turns: these figures are higher than the default's.
//!
//! The project does not change between runs, so once the server's watch of it is trusted (after
//! the first two loop starts, within the warm-up) a loop start does not walk it — as for a
//! project nobody edits between loops. With `--walk` the server does not watch files
//! (`RUMMY_WATCH_FILES=0`), so every loop start walks the project, as it does after a change.
//!
//! Recall is off (`RUMMY_RECALL=0`): the figure is a turn's without memory features, comparable
//! across builds. With `--recall` each loop's first turn recalls too — here the earlier runs'
//! history lines, which all match the prompt (`recall` measures it over a remembering project).

use rummy_bench::report;
use rummy_bench::server::{
    config, hello, own_cpu, serve_and_drive, serve_fake_provider_if_child, start_run, thread_cpu,
    write_project, ProviderChild,
};
use rummy_client::{Client, Notification};
use std::time::Duration;

/// Turns per run unless `--turns=N` says otherwise.
const TURNS: u32 = 3;
const WARMUP_RUNS: usize = 5;
const RUNS: usize = 60;
/// With `--latency`: how long after `run/progress thinking` the client reads the CPU, once the
/// call has gone out (and, the latency being longer, before its answer is back).
const SETTLE: Duration = Duration::from_millis(5);

/// What the command line asked for.
struct Options {
    turns: u32,
    walk: bool,
    /// Whether loops recall on their first turn (`--recall`).
    recall: bool,
    /// The provider's latency; `None`: it answers at once.
    latency: Option<Duration>,
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if serve_fake_provider_if_child(&args) {
        return;
    }
    let options = match options(&args) {
        Ok(options) => options,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    for entries in rummy_bench::sizes(&args, &[200, 1000]) {
        match bench(entries, &options) {
            Ok(costs) => print(entries, &options, &costs),
            Err(e) => {
                eprintln!("entries={entries}: failed: {e}");
                std::process::exit(1);
            }
        }
    }
}

fn options(args: &[String]) -> Result<Options, String> {
    let flag = |name: &str| args.iter().find_map(|a| a.strip_prefix(name));
    let turns = match flag("--turns=") {
        None => TURNS,
        Some(n) => match n.parse::<u32>() {
            Ok(n) if n >= 1 => n,
            _ => {
                return Err(format!(
                    "--turns= takes a number of turns of at least 1, not {n:?}"
                ))
            }
        },
    };
    let latency = match flag("--latency=") {
        None => None,
        Some(ms) => match ms.parse::<u64>() {
            Ok(ms) if Duration::from_millis(ms) >= 2 * SETTLE => Some(Duration::from_millis(ms)),
            _ => {
                return Err(format!(
                "--latency= takes milliseconds, at least {} (twice the client's wait), not {ms:?}",
                2 * SETTLE.as_millis()
            ))
            }
        },
    };
    Ok(Options {
        turns,
        walk: args.iter().any(|a| a == "--walk"),
        recall: args.iter().any(|a| a == "--recall"),
        latency,
    })
}

/// The server's CPU over the measured runs; each list sorted.
#[derive(Default)]
struct Costs {
    /// Each run's CPU ÷ its turns.
    per_turn: Vec<Duration>,
    /// With `--latency`: call → next call, every turn of every run but its last.
    running: Vec<Duration>,
    /// With `--latency`: start request → first call.
    start: Vec<Duration>,
    /// With `--latency`: last call → the run's final `run/state`.
    end: Vec<Duration>,
}

fn print(entries: usize, options: &Options, costs: &Costs) {
    let mut setting = String::new();
    if options.walk {
        setting.push_str(", walked");
    }
    if options.recall {
        setting.push_str(", recalling");
    }
    if options.turns != TURNS {
        setting.push_str(&format!(", {}-turn runs", options.turns));
    }
    if let Some(latency) = options.latency {
        setting.push_str(&format!(", {} ms latency", latency.as_millis()));
    }
    let target = if entries == 200 {
        "≤ 1.2 ms median"
    } else {
        "none"
    };
    let name = |what: &str| format!("{what}, {entries} entries{setting}");
    report(&name("server CPU per turn"), &costs.per_turn, target);
    if options.latency.is_some() {
        if !costs.running.is_empty() {
            report(&name("  turn of a running loop"), &costs.running, "none");
        }
        report(&name("  run start → first call"), &costs.start, "none");
        report(&name("  last call → run end"), &costs.end, "none");
    }
}

fn bench(entries: usize, options: &Options) -> Result<Costs, String> {
    let latency_ms = options
        .latency
        .map_or(0, |l| u64::try_from(l.as_millis()).unwrap_or(u64::MAX));
    let provider = ProviderChild::spawn(latency_ms, options.turns)?;
    let home = tempfile::TempDir::new().map_err(|e| e.to_string())?;
    let project = tempfile::TempDir::new().map_err(|e| e.to_string())?;
    write_project(project.path(), entries)?;
    let mut config = config(home.path(), &provider.base_url, 8);
    config.watch_files = !options.walk;
    config.recall.enabled = options.recall;

    let (turns, cut) = (options.turns, options.latency.is_some());
    let root = project.path().to_path_buf();
    serve_and_drive(config, move |url| drive(url, root, turns, cut))
}

/// CPU the server has used so far: the process's, less this (client) thread's.
fn server_cpu() -> Duration {
    // This thread's first: what it spends between the two readings counts as the server's
    // (a microsecond), and a later reading is never smaller than an earlier one.
    let client = thread_cpu();
    own_cpu().saturating_sub(client)
}

/// The client's side: runs one after another; with `cut`, each cut at its model calls.
async fn drive(
    url: String,
    root: std::path::PathBuf,
    turns: u32,
    cut: bool,
) -> Result<Costs, String> {
    let mut client = hello(&url, &root, Duration::from_secs(60)).await?;
    let mut costs = Costs::default();
    for i in 0..WARMUP_RUNS + RUNS {
        let alias = format!("t{i}");
        let pieces = one_run(&mut client, &alias, cut).await?;
        client.drain_notifications();
        if i < WARMUP_RUNS {
            continue;
        }
        costs.per_turn.push(pieces.iter().sum::<Duration>() / turns);
        if cut {
            let [start, running @ .., end] = pieces.as_slice() else {
                return Err(format!("run {alias}: no model call seen"));
            };
            costs.start.push(*start);
            costs.running.extend_from_slice(running);
            costs.end.push(*end);
        }
    }
    for list in [
        &mut costs.per_turn,
        &mut costs.running,
        &mut costs.start,
        &mut costs.end,
    ] {
        list.sort_unstable();
    }
    client.close().await;
    Ok(costs)
}

/// Starts run `alias` and follows it to its end: the server's CPU over the whole run, or with
/// `cut` from the start request to the first call, between consecutive calls, and from the
/// last call to the end.
async fn one_run(client: &mut Client, alias: &str, cut: bool) -> Result<Vec<Duration>, String> {
    let mut pieces = Vec::new();
    let mut since = server_cpu();
    start_run(client, alias).await?;
    loop {
        let message = client
            .next_notification(Some(Duration::from_secs(60)))
            .await
            .map_err(|e| e.to_string())?;
        if message.run() != Some(alias) {
            continue;
        }
        let at_call =
            cut && matches!(&message, Notification::RunProgress(p) if p.status == "thinking");
        let status = match &message {
            Notification::RunState(s) => Some(s.status),
            _ => None,
        };
        if at_call {
            // The turn sends this just before its call; once the call is out the server idles
            // until the provider answers.
            actix_rt::time::sleep(SETTLE).await;
        }
        if at_call || status == Some(200) {
            let now = server_cpu();
            pieces.push(now.saturating_sub(since));
            since = now;
        }
        match status {
            Some(200) => return Ok(pieces),
            Some(failed) if failed >= 400 => {
                return Err(format!("run {alias} ended with {failed}: {message:?}"))
            }
            _ => {}
        }
    }
}
