//! Storage per turn: what one turn adds to the database, by scheme.
//!
//! `cargo run --release -p rummy-bench --bin storage -- 200` runs one run of `--turns=N`
//! (default 200) turns in one loop against the fake provider, over a project of that many files
//! (its context: 200 entries, growing by the facts each turn records), and prints the body bytes
//! stored per turn — in all, in the audit trail (`system://`, `user://`, `assistant://` … : what
//! the model was sent and answered, kept per turn) and in the rest — and the database's growth
//! per turn (its used pages after a checkpoint). Every turn sends the whole assembled context
//! again, so an audit trail that stores each turn's prompt whole grows with turns × context.

use diesel::prelude::*;
use diesel::sql_types::{BigInt, Text};
use rummy::config::Config;
use rummy_bench::server::{
    config, hello, serve_and_drive, serve_fake_provider_if_child, start_run, write_project,
    ProviderChild,
};
use rummy_client::Notification;
use rummy_store::db::Db;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Turns in the run unless `--turns=N` says otherwise.
const TURNS: u32 = 200;

/// The schemes of the audit trail: what a turn sent and received, written as one change.
const AUDIT: [&str; 6] = [
    "system",
    "user",
    "assistant",
    "reasoning",
    "content",
    "model",
];

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
    for entries in rummy_bench::sizes(&args, &[200]) {
        match bench(entries, turns) {
            Ok(stored) => stored.print(entries, turns),
            Err(e) => {
                eprintln!("entries={entries}: failed: {e}");
                std::process::exit(1);
            }
        }
    }
}

/// What the database holds: body bytes by scheme, and its used size.
#[derive(Debug, Default, Clone)]
struct Stored {
    /// (scheme, entries, body bytes); files have no scheme and show as `file`.
    by_scheme: Vec<(String, i64, i64)>,
    /// Pages in use × page size, after a checkpoint.
    used_bytes: i64,
}

impl Stored {
    fn bytes(&self, audit: bool) -> i64 {
        self.by_scheme
            .iter()
            .filter(|(scheme, _, _)| AUDIT.contains(&scheme.as_str()) == audit)
            .map(|(_, _, bytes)| bytes)
            .sum()
    }

    fn print(&self, entries: usize, turns: u32) {
        let per_turn = |bytes: i64| bytes / i64::from(turns);
        let (audit, rest) = (self.bytes(true), self.bytes(false));
        let share = if audit + rest > 0 {
            100.0 * audit as f64 / (audit + rest) as f64
        } else {
            0.0
        };
        println!("stored per turn, {turns}-turn run, {entries} entries of context");
        println!(
            "  body bytes            {:>10}  (audit trail {:>10} = {share:.1}%, the rest {:>8})",
            per_turn(audit + rest),
            per_turn(audit),
            per_turn(rest)
        );
        println!(
            "  database growth       {:>10}  bytes (used pages after a checkpoint)",
            per_turn(self.used_bytes)
        );
        for (scheme, n, bytes) in &self.by_scheme {
            println!(
                "    {scheme:<12} {:>8} entries {:>12} bytes  {:>8} per turn",
                n,
                bytes,
                per_turn(*bytes)
            );
        }
    }

    /// What `after` holds beyond `self`.
    fn growth(&self, after: &Stored) -> Stored {
        let by_scheme = after
            .by_scheme
            .iter()
            .map(|(scheme, n, bytes)| {
                let (n0, b0) = self
                    .by_scheme
                    .iter()
                    .find(|(s, _, _)| s == scheme)
                    .map_or((0, 0), |(_, n, b)| (*n, *b));
                (scheme.clone(), n - n0, bytes - b0)
            })
            .filter(|(_, n, bytes)| *n != 0 || *bytes != 0)
            .collect();
        Stored {
            by_scheme,
            used_bytes: after.used_bytes - self.used_bytes,
        }
    }
}

#[derive(QueryableByName)]
struct SchemeRow {
    #[diesel(sql_type = Text)]
    scheme: String,
    #[diesel(sql_type = BigInt)]
    n: i64,
    #[diesel(sql_type = BigInt)]
    bytes: i64,
}

#[derive(QueryableByName)]
struct Pages {
    #[diesel(sql_type = BigInt)]
    used: i64,
}

/// Reads what the database at `path` holds (a second connection beside the server's; WAL lets
/// it read while the server runs).
fn measure(path: &Path) -> Result<Stored, String> {
    let mut conn = Db::establish(&path.to_string_lossy()).map_err(|e| e.to_string())?;
    diesel::sql_query("PRAGMA wal_checkpoint(TRUNCATE)")
        .execute(&mut conn)
        .map_err(|e| e.to_string())?;
    let rows: Vec<SchemeRow> = diesel::sql_query(
        "SELECT coalesce(scheme, 'file') AS scheme, count(*) AS n, \
         coalesce(sum(length(CAST(body AS BLOB))), 0) AS bytes \
         FROM entries GROUP BY 1 ORDER BY 3 DESC",
    )
    .load(&mut conn)
    .map_err(|e| e.to_string())?;
    let pages: Pages = diesel::sql_query(
        "SELECT (SELECT page_count FROM pragma_page_count()) * (SELECT page_size FROM pragma_page_size()) \
         - (SELECT freelist_count FROM pragma_freelist_count()) * (SELECT page_size FROM pragma_page_size()) AS used",
    )
    .get_result(&mut conn)
    .map_err(|e| e.to_string())?;
    Ok(Stored {
        by_scheme: rows.into_iter().map(|r| (r.scheme, r.n, r.bytes)).collect(),
        used_bytes: pages.used,
    })
}

fn bench(entries: usize, turns: u32) -> Result<Stored, String> {
    let provider = ProviderChild::spawn(0, turns)?;
    let home = tempfile::TempDir::new().map_err(|e| e.to_string())?;
    let project = tempfile::TempDir::new().map_err(|e| e.to_string())?;
    write_project(project.path(), entries)?;
    let mut config: Config = config(home.path(), &provider.base_url, 8);
    config.limits.max_turns = turns + 1;
    config.recall.enabled = false;
    let db: PathBuf = config.db_path.clone();
    let root = project.path().to_path_buf();
    serve_and_drive(config, move |url| drive(url, root, db))
}

/// The client's side: the project opened, the database measured, one run followed to its end,
/// the database measured again.
async fn drive(url: String, root: PathBuf, db: PathBuf) -> Result<Stored, String> {
    let mut client = hello(&url, &root, Duration::from_secs(60)).await?;
    let before = measure(&db)?;
    start_run(&mut client, "s").await?;
    loop {
        let message = client
            .next_notification(Some(Duration::from_secs(120)))
            .await
            .map_err(|e| e.to_string())?;
        match message {
            Notification::RunState(s) if s.run == "s" && s.status == 200 => break,
            Notification::RunState(s) if s.run == "s" && s.status >= 400 => {
                return Err(format!("the run ended with {}", s.status))
            }
            _ => {}
        }
    }
    client.close().await;
    Ok(before.growth(&measure(&db)?))
}
