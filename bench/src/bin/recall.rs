//! Recall: what recall adds to a loop's first turn in a project that remembers
//! 10,000 memories and facts.
//!
//! `cargo run --release -p rummy-bench --bin recall -- 10000` fills a project on a real SQLite
//! file with that many entries — half `memory://` entries of the project, half `known://` facts
//! of 20 other runs — their words drawn from a 3,000-word vocabulary with a skew (a few words
//! common, most rare), and prompts drawn the same way, so every prompt matches many entries.
//! It prints the median and p99 of:
//! - one recall (`memory::recall::recall`: the full-text query, the candidates read, scored,
//!   capped and rendered), on the store's connection;
//! - a loop's first turn on a running server over that database, from the start request to the
//!   model call (`run/progress thinking`), with recall on and with it off (`recall: false`),
//!   runs alternating; and the difference of the two medians, which is what recall adds.
//!
//! Target: recall adds ≤ 5 ms (median) to a loop's first turn.

use rummy_bench::server::{config, hello, serve_and_drive};
use rummy_bench::{quantile, report, sample};
use rummy_client::params::{RunAttributes, SetParams};
use rummy_client::{Client, Notification};
use rummy_core::config::RecallSettings;
use rummy_core::memory::recall::recall;
use rummy_provider::time::Millis;
use rummy_store::database as db;
use rummy_store::entries::{self, EntryWrite, RunRef, WriteCtx};
use rummy_store::entry::{State, Visibility, Writer};
use rummy_store::memory::{self, remember, MemoryWrite, Provenance};
use rummy_store::{projects, runs, schemes, StoreError};
use rummy_testkit::{FakeProvider, Reply};
use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, Instant};

const NOW: Millis = Millis(1_700_000_000_000);
const AT: WriteCtx = WriteCtx {
    divisor: DIVISOR,
    now: NOW,
};
const DIVISOR: u32 = 4;
const VOCABULARY: usize = 3_000;
const SIBLINGS: usize = 20;
const PROMPTS: usize = 50;
const WARMUP_RUNS: usize = 6;
const RUNS: usize = 40;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    for entries in rummy_bench::sizes(&args, &[10_000]) {
        if let Err(e) = bench(entries) {
            eprintln!("entries={entries}: failed: {e}");
            std::process::exit(1);
        }
    }
}

/// A small deterministic generator (xorshift), so every run of the bench sees the same data.
struct Words {
    state: u64,
    vocabulary: Vec<String>,
}

impl Words {
    fn new() -> Words {
        const ONSETS: [&str; 12] = ["b", "d", "f", "g", "k", "l", "m", "n", "p", "r", "s", "t"];
        const VOWELS: [&str; 5] = ["a", "e", "i", "o", "u"];
        let mut words = Words {
            state: 0x9E37_79B9_7F4A_7C15,
            vocabulary: Vec::with_capacity(VOCABULARY),
        };
        while words.vocabulary.len() < VOCABULARY {
            let syllables = 2 + words.next() % 3;
            let word: String = (0..syllables)
                .map(|_| {
                    let onset = ONSETS[(words.next() % 12) as usize];
                    let vowel = VOWELS[(words.next() % 5) as usize];
                    format!("{onset}{vowel}")
                })
                .collect();
            if !words.vocabulary.contains(&word) {
                words.vocabulary.push(word);
            }
        }
        words
    }

    fn next(&mut self) -> u64 {
        let mut x = self.state;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.state = x;
        x
    }

    /// A word, the first ones of the vocabulary far more often than the last.
    fn word(&mut self) -> &str {
        let u = (self.next() % 1_000_000) as f64 / 1_000_000.0;
        let index = ((u * u * u) * VOCABULARY as f64) as usize;
        &self.vocabulary[index.min(VOCABULARY - 1)]
    }

    fn sentence(&mut self, min: u64, spread: u64) -> String {
        let n = min + self.next() % spread;
        let words: Vec<String> = (0..n).map(|_| self.word().to_owned()).collect();
        words.join(" ")
    }
}

fn bench(entries: usize) -> Result<(), String> {
    let home = tempfile::TempDir::new().map_err(|e| e.to_string())?;
    let root = tempfile::TempDir::new().map_err(|e| e.to_string())?;
    let db_path = home.path().join("rummy.db");
    let mut words = Words::new();
    let asker = seed(&db_path, root.path(), entries, &mut words).map_err(|e| e.to_string())?;
    let prompts: Vec<String> = (0..PROMPTS).map(|_| words.sentence(8, 8)).collect();

    let mut conn = db::open_writer(&db_path).map_err(|e| e.to_string())?;
    let settings = RecallSettings::default();
    let mut found = 0;
    for prompt in &prompts {
        let recalled =
            recall(&mut conn, asker, prompt, &settings, NOW).map_err(|e| e.to_string())?;
        found += usize::from(recalled.is_some());
    }
    let mut next = 0;
    let times = sample(20, 400, || {
        let prompt = &prompts[next % PROMPTS];
        next += 1;
        black_box(recall(&mut conn, asker, prompt, &settings, NOW).ok());
    });
    drop(conn);
    report(
        &format!("recall over {entries} entries ({found}/{PROMPTS} prompts recall)"),
        &times,
        "none",
    );

    let (on, off) = first_turns(&db_path, root.path(), &prompts)?;
    report(
        &format!("first turn to the model call, recall on, {entries}"),
        &on,
        "none",
    );
    report(
        &format!("first turn to the model call, recall off, {entries}"),
        &off,
        "none",
    );
    let added = quantile(&on, 0.5).saturating_sub(quantile(&off, 0.5));
    println!(
        "{:<48} median {:>10.3?}  (target ≤ 5 ms median)",
        format!("recall adds to a first turn, {entries} entries"),
        added
    );
    Ok(())
}

/// The project `bench` at `root` with `entries` entries: half memories, half facts of
/// [`SIBLINGS`] runs; answers the run that recalls (one more run of the project, with none).
fn seed(
    db_path: &Path,
    root: &Path,
    entries: usize,
    words: &mut Words,
) -> Result<RunRef, StoreError> {
    let mut conn = db::open_writer(db_path)?;
    schemes::write_registry(&mut conn)?;
    let root = root
        .canonicalize()
        .map_err(|e| StoreError::Invalid(e.to_string()))?;
    let project = projects::hello(&mut conn, "bench", &root.display().to_string(), None, NOW)?;
    diesel::Connection::transaction(&mut conn, |c| {
        let siblings: Vec<RunRef> = (0..SIBLINGS)
            .map(|i| {
                let new = runs::NewRun {
                    project_id: project.id,
                    alias: Some(format!("sibling_{i}")),
                    model: "fast".into(),
                    ..Default::default()
                };
                runs::create(c, &new, NOW).map(|r| r.run_ref())
            })
            .collect::<Result<_, _>>()?;
        for i in 0..entries {
            let body = words.sentence(12, 20);
            let first = words.word().to_owned();
            let summary = format!("{first},{}", words.word());
            if i % 2 == 0 {
                let path = format!("memory://topic_{i}");
                let w = MemoryWrite {
                    project_id: project.id,
                    path: &path,
                    body: &body,
                    summary: Some(&summary),
                    provenance: Provenance {
                        run: "sibling_0",
                        turn: 1,
                        user: None,
                        writer: Writer::Model,
                    },
                };
                remember(c, &w, AT)?;
            } else {
                let path = format!("known://fact_{i}");
                let attributes = serde_json::json!({ "summary": summary });
                let written = entries::write(
                    c,
                    &EntryWrite {
                        run: siblings[i % SIBLINGS],
                        path: &path,
                        body: &body,
                        attributes: &attributes,
                        state: State::Resolved,
                        outcome: None,
                        visibility: Visibility::Visible,
                        loop_id: None,
                        turn: 1,
                        writer: Writer::Model,
                    },
                    AT,
                )?;
                // As the loop that wrote it indexes it when it ends.
                memory::index(c, written.entry_id)?;
            }
        }
        let new = runs::NewRun {
            project_id: project.id,
            alias: Some("asker".into()),
            model: "fast".into(),
            ..Default::default()
        };
        Ok(runs::create(c, &new, NOW)?.run_ref())
    })
}

/// Each loop's first turn, start request to model call, with recall on and off (sorted).
fn first_turns(
    db_path: &Path,
    root: &Path,
    prompts: &[String],
) -> Result<(Vec<Duration>, Vec<Duration>), String> {
    let provider = FakeProvider::start().map_err(|e| e.to_string())?;
    provider.set_responder(|_| Reply::content("<update status=\"200\">done</update>"));
    let home = db_path.parent().ok_or("no home")?.to_path_buf();
    let mut config = config(&home, &provider.base_url(), 8);
    config.db_path = db_path.to_path_buf();
    let root = root.to_path_buf();
    let prompts = prompts.to_vec();
    serve_and_drive(config, move |url| drive(url, root, prompts))
}

async fn drive(
    url: String,
    root: std::path::PathBuf,
    prompts: Vec<String>,
) -> Result<(Vec<Duration>, Vec<Duration>), String> {
    let mut client = hello(&url, &root, Duration::from_secs(60)).await?;
    let (mut on, mut off) = (Vec::new(), Vec::new());
    for i in 0..(WARMUP_RUNS + RUNS) * 2 {
        let recalling = i % 2 == 0;
        let prompt = &prompts[(i / 2) % prompts.len()];
        let took = first_turn(&mut client, &format!("r{i}"), prompt, recalling).await?;
        client.drain_notifications();
        if i >= WARMUP_RUNS * 2 {
            if recalling {
                on.push(took);
            } else {
                off.push(took);
            }
        }
    }
    on.sort_unstable();
    off.sort_unstable();
    client.close().await;
    Ok((on, off))
}

/// Starts run `alias` with `prompt` and answers the time to its first model call; follows the
/// run to its end.
async fn first_turn(
    client: &mut Client,
    alias: &str,
    prompt: &str,
    recalling: bool,
) -> Result<Duration, String> {
    let attributes = RunAttributes {
        model: Some("fast".into()),
        recall: Some(recalling),
        ..RunAttributes::default()
    };
    let params = SetParams {
        path: format!("run://{alias}"),
        body: Some(prompt.to_owned()),
        attributes: Some(attributes.to_map()),
        ..SetParams::default()
    };
    let start = Instant::now();
    client.set(&params).await.map_err(|e| e.to_string())?;
    let mut took = None;
    loop {
        let message = client
            .next_notification(Some(Duration::from_secs(60)))
            .await
            .map_err(|e| e.to_string())?;
        if message.run() != Some(alias) {
            continue;
        }
        match &message {
            Notification::RunProgress(p) if p.status == "thinking" && took.is_none() => {
                took = Some(start.elapsed());
            }
            Notification::RunState(s) if s.status == 200 => {
                return took.ok_or_else(|| format!("run {alias}: no model call seen"));
            }
            Notification::RunState(s) if s.status >= 400 => {
                return Err(format!("run {alias} ended with {}", s.status));
            }
            _ => {}
        }
    }
}
