//! The host's view of the processes an accepted command started. A sandboxed command sees
//! only its own PID namespace, so the pids it could write down mean nothing here: a test gives
//! its command a unique mark (`sleep <n>`) and finds the processes by their command lines.

use super::WAIT;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// A `sleep` length no other test of any process on this machine uses at the same time.
pub fn unique_sleep() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    200_000 + u64::from(std::process::id() % 10_000) * 100 + NEXT.fetch_add(1, Ordering::Relaxed)
}

/// A command that starts `sleep <n>` in the background, prints `started` and waits; and its
/// mark, which its shell's and its sleep's command lines hold.
pub fn sleeper() -> (String, String) {
    let mark = format!("sleep {}", unique_sleep());
    (format!("{mark} & echo started; wait"), mark)
}

/// The host pids of the running processes whose command line holds `mark`.
pub fn marked(mark: &str) -> Vec<i32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut pids: Vec<i32> = dir
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&pid| {
            std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|line| {
                let line: Vec<u8> = line
                    .into_iter()
                    .map(|b| if b == 0 { b' ' } else { b })
                    .collect();
                String::from_utf8_lossy(&line).contains(mark)
            }) && running(pid)
        })
        .collect();
    pids.sort_unstable();
    pids
}

/// Waits until at least `n` processes hold `mark`; their pids.
pub async fn wait_marked(mark: &str, n: usize) -> Vec<i32> {
    let deadline = Instant::now() + WAIT;
    loop {
        let pids = marked(mark);
        if pids.len() >= n {
            return pids;
        }
        assert!(
            Instant::now() < deadline,
            "{mark:?}: {pids:?} of {n} processes"
        );
        actix_rt::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Whether process `pid` still runs (a zombie nobody reaped yet counts as gone).
pub fn running(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            stat.rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().next().map(str::to_owned))
        })
        .is_some_and(|state| state != "Z" && state != "X")
}
