//! One client of a set-up: bound to its project, it starts its runs and watches each to the end,
//! recording when every turn and run ended.

use super::{SILENCE, TURNS};
use rummy_bench::server::start_params;
use rummy_client::params::{HelloParams, Page};
use rummy_client::results::{Ack, RunSummary};
use rummy_client::{Client, ClientOptions, Notification};
use std::collections::HashMap;
use std::path::Path;
use std::time::{Duration, Instant};

/// A client of the server at `url` bound to project `name` at `root`.
pub(crate) async fn hello(url: &str, name: &str, root: &Path) -> Result<Client, String> {
    let mut options = ClientOptions::new(url);
    options.timeout = Duration::from_secs(120);
    // A bench that loses its connection has failed; it must not measure a reconnect.
    options.reconnect = None;
    let mut client = Client::connect(options).await.map_err(|e| e.to_string())?;
    client
        .hello(HelloParams {
            name: name.to_owned(),
            project_root: Some(root.display().to_string()),
            ..HelloParams::default()
        })
        .await
        .map_err(|e| format!("hello {name}: {e}"))?;
    Ok(client)
}

/// What a client heard of one run.
pub(crate) struct Seen {
    pub(crate) start: Instant,
    /// The turns whose end it heard (`run/state` with telemetry), and when.
    pub(crate) turn_ends: Vec<(i64, Instant)>,
    /// The status and turn of the `run/state` that ended the loop, and when it came.
    pub(crate) end: Option<(i64, i64, Instant)>,
    /// What `getRuns` said of it afterwards: status and turn.
    pub(crate) stored: Option<(i64, i64)>,
}

/// One client's runs after watching them.
pub(crate) struct Watched {
    pub(crate) client: Client,
    pub(crate) runs: HashMap<String, Seen>,
    pub(crate) last_done: Option<Instant>,
}

impl Watched {
    /// The latency of each run that ended 200.
    pub(crate) fn latencies(&self) -> impl Iterator<Item = Duration> + '_ {
        self.runs.values().filter_map(|s| match s.end {
            Some((200, _, at)) => Some(at - s.start),
            _ => None,
        })
    }

    /// Each turn end heard, with how long after its run's start.
    pub(crate) fn turn_ends(&self) -> impl Iterator<Item = (i64, Duration)> + '_ {
        self.runs
            .values()
            .flat_map(|s| s.turn_ends.iter().map(|(turn, at)| (*turn, *at - s.start)))
    }

    /// Reads the project's runs from the server (`getRuns`).
    pub(crate) async fn check_stored(&mut self) -> Result<(), String> {
        let page = Page {
            limit: Some(1000),
            offset: None,
        };
        let stored: Vec<RunSummary> = self
            .client
            .get_runs(page)
            .await
            .map_err(|e| format!("getRuns: {e}"))?;
        for run in stored {
            if let Some(seen) = self.runs.get_mut(&run.run) {
                seen.stored = Some((run.status, run.turn));
            }
        }
        Ok(())
    }

    /// Each run that did not end 200 after exactly `TURNS` turns, as heard and as stored.
    pub(crate) fn problems(&self) -> Vec<String> {
        let wanted: Vec<i64> = (1..=i64::from(TURNS)).collect();
        let mut problems = Vec::new();
        let mut aliases: Vec<&String> = self.runs.keys().collect();
        aliases.sort();
        for alias in aliases {
            let seen = &self.runs[alias];
            let mut ends: Vec<i64> = seen.turn_ends.iter().map(|(turn, _)| *turn).collect();
            ends.sort_unstable();
            let ok = matches!(seen.end, Some((200, turn, _)) if turn == i64::from(TURNS))
                && ends == wanted
                && seen.stored == Some((200, i64::from(TURNS)));
            if !ok {
                problems.push(format!(
                    "{alias}: heard end {:?}, turn ends {ends:?}, stored (status, turn) {:?}",
                    seen.end.map(|(status, turn, _)| (status, turn)),
                    seen.stored
                ));
            }
        }
        problems
    }
}

/// Starts `aliases` through `client` at once and watches each to the end of its loop (a status
/// other than 100 and 102).
pub(crate) async fn watch(mut client: Client, aliases: Vec<String>) -> Result<Watched, String> {
    let mut runs: HashMap<String, Seen> = HashMap::with_capacity(aliases.len());
    let mut requests = Vec::with_capacity(aliases.len());
    for alias in aliases {
        let id = client
            .send("set", &start_params(&alias))
            .await
            .map_err(|e| format!("start {alias}: {e}"))?;
        runs.insert(
            alias.clone(),
            Seen {
                start: Instant::now(),
                turn_ends: Vec::new(),
                end: None,
                stored: None,
            },
        );
        requests.push((alias, id));
    }
    for (alias, id) in requests {
        client
            .answer::<Ack>(id)
            .await
            .map_err(|e| format!("start {alias}: {e}"))?;
    }
    let mut open = runs.len();
    let mut last_done = None;
    while open > 0 {
        let message = match client.next_notification(Some(SILENCE)).await {
            Ok(message) => message,
            Err(e) => {
                let mut waiting: Vec<&String> = runs
                    .iter()
                    .filter(|(_, s)| s.end.is_none())
                    .map(|(a, _)| a)
                    .collect();
                waiting.sort();
                return Err(format!(
                    "{e}: {open} run(s) unfinished ({:?}…)",
                    &waiting[..waiting.len().min(5)]
                ));
            }
        };
        let at = Instant::now();
        let Notification::RunState(state) = &message else {
            continue;
        };
        let Some(seen) = runs.get_mut(&state.run) else {
            continue;
        };
        if state.telemetry.is_some() {
            seen.turn_ends.push((state.turn, at));
        }
        if seen.end.is_none() && !matches!(state.status, 100 | 102) {
            seen.end = Some((state.status, state.turn, at));
            last_done = Some(at);
            open -= 1;
        }
    }
    Ok(Watched {
        client,
        runs,
        last_done,
    })
}
