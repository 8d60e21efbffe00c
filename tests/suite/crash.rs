//! The crash test: the real binary is killed (-9) at
//! pseudo-random moments of a busy workload — several runs mid-call, proposals pending and
//! being accepted — and after each restart everything a client was told is still there: every
//! run it was told it started, every `run/state` it received (replayable by `getRun
//! {sinceSeq}`), every entry those states named, and every acceptance it was answered.

use crate::support::process::ServerProcess;
use rummy_testkit::{FakeProvider, Reply, RpcClient};
use serde_json::json;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Stdio;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How many times the server is killed.
const ITERATIONS: u64 = 6;
/// Runs started at once in each iteration.
const RUNS: usize = 4;

/// What a client was told before the crash.
#[derive(Debug, Default)]
struct Told {
    /// Runs whose start was answered ok.
    runs: BTreeSet<String>,
    /// Per run, the `seq` of every `run/state` received.
    seqs: BTreeMap<String, BTreeSet<i64>>,
    /// Per run, every entry path a `run/state` named.
    entries: BTreeMap<String, BTreeSet<String>>,
    /// Proposals whose acceptance was answered ok: (run, path).
    accepted: Vec<(String, String)>,
}

fn spawn(home: &Path, provider: &FakeProvider) -> ServerProcess {
    let base_url = provider.base_url();
    let vars = [
        ("OPENAI_BASE_URL", base_url.as_str()),
        ("RUMMY_MODEL_fast", "openai/fake-model"),
        ("RUMMY_MAX_TURNS", "4"),
    ];
    ServerProcess::start(home, &vars, Stdio::null())
}

async fn connect(port: u16, root: &Path) -> RpcClient {
    crate::support::process::project_client(port, "busy", root, Duration::from_secs(20)).await
}

/// A model that, every turn, records a fact, proposes a new file and carries on, answering
/// after 10–60 ms.
fn busy_model(provider: &FakeProvider) {
    let next = Arc::new(AtomicUsize::new(0));
    provider.set_responder(move |_| {
        let k = next.fetch_add(1, Ordering::Relaxed);
        Reply::content(format!(
            "<known path=\"known://note_{k}\">fact {k}</known>\n\
             <set path=\"out/f{k}.txt\">file {k}\n</set>\n\
             <update status=\"102\">working on {k}</update>"
        ))
        .delay(Duration::from_millis(10 + (k as u64 * 7) % 50))
    });
}

/// Drives the workload until `crash_at`, recording what the client is told.
async fn work_until(client: &mut RpcClient, crash_at: Instant, told: &mut Told) {
    let mut pending = Vec::new();
    for r in 0..RUNS {
        let alias = format!("r{r}");
        let id = client
            .send_request(
                "set",
                json!({ "path": format!("run://{alias}"), "body": format!("task {r}"), "attributes": { "model": "fast", "mode": "act" } }),
            )
            .await
            .unwrap();
        pending.push((id, alias));
    }
    for (id, alias) in pending {
        if client.response_for(id).await.is_ok() {
            told.runs.insert(alias);
        }
    }
    while Instant::now() < crash_at {
        let left = crash_at.saturating_duration_since(Instant::now());
        let Ok(note) = client.next_any_notification(left).await else {
            break;
        };
        let params = &note["params"];
        let run = params["run"].as_str().unwrap_or_default().to_owned();
        match note["method"].as_str() {
            Some("run/state") => {
                if let Some(seq) = params["seq"].as_i64() {
                    told.seqs.entry(run.clone()).or_default().insert(seq);
                }
                for entry in params["history"].as_array().into_iter().flatten() {
                    if let Some(path) = entry["path"].as_str() {
                        told.entries
                            .entry(run.clone())
                            .or_default()
                            .insert(path.to_owned());
                    }
                }
            }
            Some("run/proposal") => {
                for proposed in params["proposed"].as_array().into_iter().flatten() {
                    let path = proposed["path"].as_str().unwrap_or_default().to_owned();
                    let id = client
                        .send_request(
                            "set",
                            json!({ "run": run, "path": path, "state": "resolved" }),
                        )
                        .await
                        .unwrap();
                    let left = crash_at.saturating_duration_since(Instant::now());
                    client.set_timeout(left.max(Duration::from_millis(1)));
                    if let Ok(answer) = client.response_for(id).await {
                        if answer["state"] == json!("resolved") {
                            told.accepted.push((run.clone(), path));
                        }
                    }
                    client.set_timeout(Duration::from_secs(20));
                }
            }
            _ => {}
        }
    }
}

/// After the restart, checks that everything in `told` is still there.
async fn check_nothing_lost(client: &mut RpcClient, told: &Told, root: &Path, iteration: u64) {
    for run in &told.runs {
        let state = client
            .call("getRun", json!({ "run": run, "sinceSeq": 0 }))
            .await
            .unwrap_or_else(|e| panic!("iteration {iteration}: run {run} is gone: {e:?}"));
        let stored: BTreeSet<i64> = state["missed"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|n| n["params"]["seq"].as_i64())
            .collect();
        if let Some(seen) = told.seqs.get(run) {
            let lost: Vec<&i64> = seen.difference(&stored).collect();
            assert!(
                lost.is_empty(),
                "iteration {iteration}: {run} lost run/state seqs {lost:?}"
            );
        }
        let listed = client
            .call("getEntries", json!({ "run": run, "limit": 1000 }))
            .await
            .unwrap();
        let paths: BTreeSet<String> = listed
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|e| e["path"].as_str().map(str::to_owned))
            .collect();
        if let Some(seen) = told.entries.get(run) {
            let lost: Vec<&String> = seen.difference(&paths).collect();
            assert!(
                lost.is_empty(),
                "iteration {iteration}: {run} lost entries {lost:?}"
            );
        }
    }
    for (run, path) in &told.accepted {
        let listed = client
            .call(
                "getEntries",
                json!({ "run": run, "pattern": path, "withBody": true }),
            )
            .await
            .unwrap();
        let proposal = listed
            .as_array()
            .and_then(|l| l.iter().find(|e| e["path"] == json!(path)))
            .unwrap_or_else(|| panic!("iteration {iteration}: accepted {path} of {run} is gone"));
        assert_eq!(
            proposal["state"],
            json!("resolved"),
            "iteration {iteration}: accepted {path} of {run}"
        );
        let file = proposal["attributes"]["path"].as_str().unwrap_or_default();
        let k = file.trim_start_matches("out/f").trim_end_matches(".txt");
        assert_eq!(
            std::fs::read_to_string(root.join(file)).ok(),
            Some(format!("file {k}\n")),
            "iteration {iteration}: the accepted {file} is not on disk"
        );
    }
}

/// Kill -9 at pseudo-random moments of a busy workload loses nothing a client was told.
#[actix_rt::test]
async fn nothing_a_client_was_told_is_lost_when_the_server_is_killed() {
    let provider = FakeProvider::start().unwrap();
    busy_model(&provider);
    let mut told_total = (0, 0, 0);
    for iteration in 0..ITERATIONS {
        let home = tempfile::TempDir::new().unwrap();
        let project = tempfile::TempDir::new().unwrap();
        let first = spawn(home.path(), &provider);
        let mut client = connect(first.port, project.path()).await;
        // Spread over 80–1,280 ms: early kills catch runs mid-call, later ones accepts in flight.
        let after = Duration::from_millis(80 + (iteration * 7_919) % 1_200);
        let mut told = Told::default();
        work_until(&mut client, Instant::now() + after, &mut told).await;
        first.kill();
        drop(client);
        let second = spawn(home.path(), &provider);
        let mut client = connect(second.port, project.path()).await;
        check_nothing_lost(&mut client, &told, project.path(), iteration).await;
        told_total.0 += told.seqs.values().map(BTreeSet::len).sum::<usize>();
        told_total.1 += told.entries.values().map(BTreeSet::len).sum::<usize>();
        told_total.2 += told.accepted.len();
        second.kill();
    }
    // The workload really ran: states, entries and acceptances were told before the kills.
    eprintln!(
        "crash test: {ITERATIONS} kills; told {} run/states, {} entries, {} acceptances",
        told_total.0, told_total.1, told_total.2
    );
    assert!(
        told_total.0 > 0 && told_total.1 > 0 && told_total.2 > 0,
        "{told_total:?}"
    );
}
