//! Shared helpers for the bench binaries in `src/bin/`: timing loops, figure printing, and (in
//! [`server`]) the plumbing of the benchmarks that drive a real server.

pub mod server;

use std::time::{Duration, Instant};

/// The sizes a bench binary was given on its command line (numbers; flags and anything else
/// are skipped), or `default` when it was given none.
pub fn sizes(args: &[String], default: &[usize]) -> Vec<usize> {
    let given: Vec<usize> = args.iter().filter_map(|a| a.parse().ok()).collect();
    if given.is_empty() {
        return default.to_vec();
    }
    given
}

/// Runs `f` `iterations` times after `warmup` runs and returns each run's duration, sorted.
pub fn sample(warmup: usize, iterations: usize, mut f: impl FnMut()) -> Vec<Duration> {
    for _ in 0..warmup {
        f();
    }
    let mut times: Vec<Duration> = (0..iterations)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed()
        })
        .collect();
    times.sort_unstable();
    times
}

/// The `q` quantile (0.0–1.0) of sorted durations.
pub fn quantile(sorted: &[Duration], q: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let index = ((sorted.len() - 1) as f64 * q).round() as usize;
    sorted[index.min(sorted.len() - 1)]
}

/// Prints one figure line: name, median, p99, and the target it is held to.
pub fn report(name: &str, sorted: &[Duration], target: &str) {
    println!(
        "{name:<48} median {:>10.3?}  p99 {:>10.3?}  (target {target})",
        quantile(sorted, 0.5),
        quantile(sorted, 0.99)
    );
}
